#include "broker/control/control_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "platform/ipc/private_socket.h"
#include "platform/base/errno_status.h"
#include "platform/base/logging.h"
#include "platform/base/status_macros.h"
#include "platform/ipc/channel.h"

namespace airlock::broker {
namespace {

// A control client gets this long to send its request.
constexpr int kRequestTimeoutSeconds = 5;
// Control messages are small.
constexpr uint32_t kMaxControlFrameBytes = 64 * 1024;

}  // namespace

absl::StatusOr<std::unique_ptr<ControlServer>> ControlServer::Start(const std::string& path,
                                                                    ControlHandler handler) {
  ipc::PrivateListenOptions options;
  options.what = "control socket";
  AIRLOCK_ASSIGN_OR_RETURN(ipc::PrivateListener listener, ipc::ListenPrivate(path, options));
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC) != 0) return LastErrnoStatus("pipe2");
  return std::unique_ptr<ControlServer>(new ControlServer(
      path, std::move(listener.fd), ScopedFd(wake[0]), ScopedFd(wake[1]), std::move(handler)));
}

ControlServer::ControlServer(std::string path, ScopedFd listener, ScopedFd wake_read,
                             ScopedFd wake_write, ControlHandler handler)
    : path_(std::move(path)),
      listener_(std::move(listener)),
      wake_read_(std::move(wake_read)),
      wake_write_(std::move(wake_write)),
      handler_(std::move(handler)) {
  thread_ = std::thread([this] { Loop(); });
}

ControlServer::~ControlServer() {
  (void)!::write(wake_write_.get(), "x", 1);
  if (thread_.joinable()) thread_.join();
  ::unlink(path_.c_str());
}

void ControlServer::Loop() {
  for (;;) {
    pollfd fds[2] = {{listener_.get(), POLLIN, 0}, {wake_read_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    if (fds[0].revents == 0) continue;
    absl::StatusOr<ScopedFd> connection = ipc::AcceptSameUser(listener_.get());
    if (!connection.ok()) {
      AIRLOCK_LOG(kWarning, "control socket: ", connection.status().message());
      continue;
    }
    ServeOne(std::move(*connection));
  }
}

void ControlServer::ServeOne(ScopedFd connection) {
  timeval timeout{kRequestTimeoutSeconds, 0};
  ::setsockopt(connection.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  ::setsockopt(connection.get(), SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  ipc::Channel channel(std::move(connection), kMaxControlFrameBytes);
  v1::ControlRequest request;
  v1::ControlResponse response;
  if (absl::Status status = channel.Receive(&request); !status.ok()) {
    response.set_ok(false);
    response.set_code(v1::INVALID_ARGUMENT);
    response.set_message(std::string(status.message()));
  } else {
    response = handler_(request);
  }
  (void)channel.Send(response);
}

}  // namespace airlock::broker
