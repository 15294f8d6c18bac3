// sendmsg/recvmsg with descriptors attached (SCM_RIGHTS). Every descriptor received is owned
// by a ScopedFd at once, so any error path closes them all.
#ifndef PLATFORM_IPC_SOCKET_IO_H_
#define PLATFORM_IPC_SOCKET_IO_H_

#include <sys/types.h>

#include <cstddef>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "platform/base/scoped_fd.h"

namespace airlock::ipc {

// The most descriptors one message may carry; a message with more is refused whole.
inline constexpr size_t kMaxDescriptorsPerMessage = 8;

struct Received {
  size_t bytes = 0;  // 0 means the peer closed the socket
  std::vector<ScopedFd> fds;
};

// Sends `data` (nonempty) with `fds` attached, all of it, never raising SIGPIPE.
[[nodiscard]] absl::Status SendWithDescriptors(int socket, absl::string_view data,
                                               absl::Span<const int> fds);

// One recvmsg into `buffer`. More than `max_fds` descriptors, or a truncated control message,
// is InvalidArgument, and every descriptor that arrived is closed.
[[nodiscard]] absl::StatusOr<Received> ReceiveWithDescriptors(int socket, absl::Span<char> buffer,
                                                              size_t max_fds);

struct PeerCredentials {
  pid_t pid;
  uid_t uid;
  gid_t gid;
};

// SO_PEERCRED of a connected Unix socket.
[[nodiscard]] absl::StatusOr<PeerCredentials> GetPeerCredentials(int socket);

}  // namespace airlock::ipc

#endif  // PLATFORM_IPC_SOCKET_IO_H_
