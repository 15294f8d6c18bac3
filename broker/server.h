// The broker's request loop: accepts channels from the connector and serves each on its own
// thread. A protocol violation ends that channel only; the broker keeps serving the others.
#ifndef BROKER_SERVER_H_
#define BROKER_SERVER_H_

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "airlock/v1/wire.pb.h"
#include "broker/dispatcher.h"
#include "platform/base/scoped_fd.h"
#include "platform/ipc/channel.h"

namespace airlock::broker {

struct ServerOptions {
  // Channels served at once; a channel past this is closed unanswered.
  size_t max_channels = 64;
};

class Server {
 public:
  Server(Dispatcher& dispatcher, std::function<v1::Context()> context, ServerOptions options = {})
      : dispatcher_(dispatcher), context_(std::move(context)), options_(options) {}
  ~Server() { Stop(); }

  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Starts accepting channels on `connector` (the broker end) in the background.
  void Start(ScopedFd connector);

  // Serves one already-connected channel in the background (tests, control paths).
  void ServeChannelAsync(ScopedFd channel);

  // Stops accepting, closes every channel and waits for all their threads.
  void Stop();

  size_t active_channels() const;

 private:
  void AcceptLoop();
  void ServeChannel(std::shared_ptr<ipc::Channel> channel);
  void CloseWithProtocolError(ipc::Channel& channel, const absl::Status& why);

  Dispatcher& dispatcher_;
  std::function<v1::Context()> context_;
  const ServerOptions options_;

  ScopedFd connector_;
  std::thread acceptor_;

  mutable std::mutex mutex_;
  std::condition_variable all_closed_;
  std::set<std::shared_ptr<ipc::Channel>> channels_;  // guarded by mutex_
  size_t running_threads_ = 0;                        // guarded by mutex_
  bool stopping_ = false;                             // guarded by mutex_
};

}  // namespace airlock::broker

#endif  // BROKER_SERVER_H_
