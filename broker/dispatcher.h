// Routes one request to the tool that serves it and turns the outcome into a response.
// Never throws and never aborts on anything a worker sends: every request gets one response.
#ifndef BROKER_DISPATCHER_H_
#define BROKER_DISPATCHER_H_

#include <functional>

#include "airlock/v1/wire.pb.h"
#include "broker/fs/file_tools.h"

namespace airlock::broker {

class Dispatcher {
 public:
  // `context` returns the broker's current runtime context (preset, mode, roots, …).
  Dispatcher(FileTools& files, std::function<v1::Context()> context)
      : files_(files), context_(std::move(context)) {}

  v1::Response Handle(const v1::Request& request);

 private:
  FileTools& files_;
  std::function<v1::Context()> context_;
};

}  // namespace airlock::broker

#endif  // BROKER_DISPATCHER_H_
