// Where operator-facing Unix sockets live (the control socket, the socket approver): a socket
// in a directory that is ours and mode 0700, so no other user can reach it by path, plus a
// peer-uid check on every connection as a second lock.
#ifndef BROKER_CONTROL_CONTROL_SOCKET_H_
#define BROKER_CONTROL_CONTROL_SOCKET_H_

#include <string>

#include "absl/status/statusor.h"
#include "platform/base/scoped_fd.h"

namespace airlock::broker {

// Creates the parent directory (0700) if missing — an existing one must be a directory owned
// by this user with no group/other access — removes a stale socket at `path` (only a socket),
// then binds and listens. The socket itself is made 0600.
[[nodiscard]] absl::StatusOr<ScopedFd> ListenOnPrivateSocket(const std::string& path);

// Accepts one connection and refuses (closes) it unless its peer runs as this user.
[[nodiscard]] absl::StatusOr<ScopedFd> AcceptSameUser(int listener);

// Connects to a Unix socket path.
[[nodiscard]] absl::StatusOr<ScopedFd> ConnectUnix(const std::string& path);

}  // namespace airlock::broker

#endif  // BROKER_CONTROL_CONTROL_SOCKET_H_
