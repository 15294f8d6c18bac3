// The operator's control socket (--control-socket PATH): one request per connection, answered
// by a handler the broker provides. Only connections from this user are served.
#ifndef BROKER_CONTROL_CONTROL_SERVER_H_
#define BROKER_CONTROL_CONTROL_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "airlock/v1/control.pb.h"
#include "platform/base/scoped_fd.h"

namespace airlock::broker {

using ControlHandler = std::function<v1::ControlResponse(const v1::ControlRequest&)>;

class ControlServer {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ControlServer>> Start(
      const std::string& path, ControlHandler handler);
  // Stops serving and removes the socket.
  ~ControlServer();

  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

 private:
  ControlServer(std::string path, ScopedFd listener, ScopedFd wake_read, ScopedFd wake_write,
                ControlHandler handler);
  void Loop();
  void ServeOne(ScopedFd connection);

  const std::string path_;
  ScopedFd listener_;
  ScopedFd wake_read_;
  ScopedFd wake_write_;
  ControlHandler handler_;
  std::thread thread_;
};

}  // namespace airlock::broker

#endif  // BROKER_CONTROL_CONTROL_SERVER_H_
