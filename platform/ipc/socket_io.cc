#include "platform/ipc/socket_io.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "platform/base/errno_status.h"

namespace airlock::ipc {

absl::Status SendWithDescriptors(int socket, absl::string_view data, absl::Span<const int> fds) {
  if (data.empty()) return absl::InvalidArgumentError("send: empty message");
  if (fds.size() > kMaxDescriptorsPerMessage) {
    return absl::InvalidArgumentError(absl::StrCat("send: ", fds.size(), " descriptors"));
  }
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxDescriptorsPerMessage)];
  bool first = true;
  while (!data.empty()) {
    iovec iov{const_cast<char*>(data.data()), data.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (first && !fds.empty()) {
      std::memset(control, 0, sizeof(control));
      msg.msg_control = control;
      msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
      cmsghdr* header = CMSG_FIRSTHDR(&msg);
      header->cmsg_level = SOL_SOCKET;
      header->cmsg_type = SCM_RIGHTS;
      header->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
      std::memcpy(CMSG_DATA(header), fds.data(), sizeof(int) * fds.size());
    }
    ssize_t n = ::sendmsg(socket, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return LastErrnoStatus("sendmsg");
    }
    first = false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::StatusOr<Received> ReceiveWithDescriptors(int socket, absl::Span<char> buffer,
                                                size_t max_fds) {
  // Room for the most any message may carry, so that "too many" is seen, not silently cut.
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxDescriptorsPerMessage)];
  iovec iov{buffer.data(), buffer.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = ::recvmsg(socket, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return LastErrnoStatus("recvmsg");

  Received received;
  received.bytes = static_cast<size_t>(n);
  bool foreign_control = false;
  for (cmsghdr* header = CMSG_FIRSTHDR(&msg); header != nullptr;
       header = CMSG_NXTHDR(&msg, header)) {
    if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_RIGHTS) {
      const size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(header) + i * sizeof(int), sizeof(int));
        received.fds.emplace_back(fd);
      }
    } else {
      foreign_control = true;
    }
  }
  // `received` owns every descriptor now; returning an error closes them all.
  if (msg.msg_flags & MSG_CTRUNC) {
    return absl::InvalidArgumentError("recvmsg: control data truncated (too many descriptors)");
  }
  if (foreign_control) return absl::InvalidArgumentError("recvmsg: unexpected control message");
  if (received.fds.size() > max_fds) {
    return absl::InvalidArgumentError(absl::StrCat("recvmsg: ", received.fds.size(),
                                                   " descriptors received, at most ", max_fds,
                                                   " expected"));
  }
  return received;
}

absl::StatusOr<PeerCredentials> GetPeerCredentials(int socket) {
  ucred credentials{};
  socklen_t length = sizeof(credentials);
  if (::getsockopt(socket, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) {
    return LastErrnoStatus("getsockopt SO_PEERCRED");
  }
  return PeerCredentials{credentials.pid, credentials.uid, credentials.gid};
}

}  // namespace airlock::ipc
