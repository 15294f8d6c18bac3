// Unix stream sockets private to this user (the control socket, the socket approver): the
// socket lives in a directory that is ours and mode 0700 (created if missing), so no other
// user can reach it by path; it is bound under umask 077; an existing entry is replaced only
// when it is a stale socket of ours; and every connection checks the peer's uid, both ways,
// as a second lock.
#ifndef PLATFORM_IPC_PRIVATE_SOCKET_H_
#define PLATFORM_IPC_PRIVATE_SOCKET_H_

#include <string>

#include "absl/status/statusor.h"
#include "platform/base/scoped_fd.h"

namespace airlock::ipc {

struct PrivateListener {
  ScopedFd fd;
  // The socket's directory when this call created it (to remove when done), else empty.
  std::string created_directory;
};

struct PrivateListenOptions {
  bool nonblocking = false;  // the listener's accept returns EAGAIN rather than waiting
  int backlog = 16;
  // Names the socket in errors ("control socket", "approval socket").
  std::string what = "socket";
};

// PermissionDenied when the directory is not a directory of ours with mode 0700 (or is a
// link); AlreadyExists when `path` exists and is not a socket of ours; InvalidArgument for a
// path that does not fit a socket address.
[[nodiscard]] absl::StatusOr<PrivateListener> ListenPrivate(
    const std::string& path, const PrivateListenOptions& options = {});

// Accepts one connection; PermissionDenied (the connection closed) unless its peer runs as
// this user. A non-blocking listener with nothing pending gives the accept error (EAGAIN).
[[nodiscard]] absl::StatusOr<ScopedFd> AcceptSameUser(int listener);

// Connects to `path`; PermissionDenied (the connection closed) unless the listener runs as
// this user.
[[nodiscard]] absl::StatusOr<ScopedFd> ConnectSameUser(const std::string& path);

}  // namespace airlock::ipc

#endif  // PLATFORM_IPC_PRIVATE_SOCKET_H_
