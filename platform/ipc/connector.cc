#include "platform/ipc/connector.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "platform/base/errno_status.h"
#include "platform/base/status_macros.h"
#include "platform/ipc/socket_io.h"

namespace airlock::ipc {
namespace {

constexpr char kOpenByte = 'C';

absl::Status CheckIsUnixStreamSocket(int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return LastErrnoStatus("fstat received descriptor");
  if (!S_ISSOCK(st.st_mode)) {
    return absl::InvalidArgumentError("connector: received descriptor is not a socket");
  }
  int value = 0;
  socklen_t length = sizeof(value);
  if (::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &value, &length) != 0 || value != AF_UNIX) {
    return absl::InvalidArgumentError("connector: received socket is not AF_UNIX");
  }
  length = sizeof(value);
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &value, &length) != 0 || value != SOCK_STREAM) {
    return absl::InvalidArgumentError("connector: received socket is not SOCK_STREAM");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ConnectorPair> MakeConnector() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
    return LastErrnoStatus("socketpair for the connector");
  }
  ConnectorPair pair{ScopedFd(fds[0]), ScopedFd(fds[1])};
  // The broker end only receives.
  ::shutdown(pair.broker_end.get(), SHUT_WR);
  return pair;
}

absl::StatusOr<ScopedFd> OpenChannel(int connector_fd) {
  int type = 0;
  socklen_t length = sizeof(type);
  if (::getsockopt(connector_fd, SOL_SOCKET, SO_TYPE, &type, &length) != 0 ||
      type != SOCK_SEQPACKET) {
    return absl::FailedPreconditionError(absl::StrCat(
        "descriptor ", connector_fd, " is not an airlock connector (closed, or not inherited)"));
  }
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return LastErrnoStatus("socketpair for a channel");
  }
  ScopedFd ours(fds[0]);
  ScopedFd theirs(fds[1]);
  const int to_send[] = {theirs.get()};
  AIRLOCK_RETURN_IF_ERROR(
      SendWithDescriptors(connector_fd, absl::string_view(&kOpenByte, 1), to_send));
  return ours;
}

absl::StatusOr<ScopedFd> AcceptChannel(int connector_fd) {
  char byte[2];
  AIRLOCK_ASSIGN_OR_RETURN(Received received,
                           ReceiveWithDescriptors(connector_fd, absl::MakeSpan(byte, 2), 1));
  if (received.bytes == 0 && received.fds.empty()) {
    // A zero-length datagram is not a close: only a hang-up means every worker-side copy of
    // the connector is gone.
    pollfd poll_fd{connector_fd, POLLIN, 0};
    if (::poll(&poll_fd, 1, 0) == 1 && (poll_fd.revents & POLLHUP)) {
      return absl::OutOfRangeError("connector closed: no worker process holds it any more");
    }
    return absl::InvalidArgumentError("connector: empty message");
  }
  if (received.bytes != 1 || byte[0] != kOpenByte || received.fds.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "connector: expected one byte and one descriptor, got ", received.bytes, " bytes and ",
        received.fds.size(), " descriptors"));
  }
  AIRLOCK_RETURN_IF_ERROR(CheckIsUnixStreamSocket(received.fds[0].get()));
  return std::move(received.fds[0]);
}

}  // namespace airlock::ipc
