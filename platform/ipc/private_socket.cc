#include "platform/ipc/private_socket.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "platform/base/errno_status.h"
#include "platform/base/status_macros.h"
#include "platform/ipc/socket_io.h"

namespace airlock::ipc {
namespace {

absl::StatusOr<sockaddr_un> AddressOf(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(address.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("socket path '", path,
                                                   "' is empty or longer than ",
                                                   sizeof(address.sun_path) - 1, " bytes"));
  }
  std::memcpy(address.sun_path, path.data(), path.size());
  return address;
}

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// The socket's directory: ours, a real directory, no group or other access. Returns whether
// this call created it.
absl::StatusOr<bool> PrepareDirectory(const std::string& dir, const std::string& what) {
  bool created = false;
  if (::mkdir(dir.c_str(), 0700) == 0) {
    created = true;
  } else if (errno != EEXIST) {
    return LastErrnoStatus(absl::StrCat("create the ", what, " directory"), dir);
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return LastErrnoStatus("lstat", dir);
  if (!S_ISDIR(st.st_mode)) {
    return absl::PermissionDeniedError(
        absl::StrCat(what, " directory ", dir, " is not a directory (or is a link)"));
  }
  if (st.st_uid != ::geteuid()) {
    return absl::PermissionDeniedError(absl::StrCat(what, " directory ", dir, " is owned by uid ",
                                                    st.st_uid, ", not by this user (uid ",
                                                    ::geteuid(), ")"));
  }
  if ((st.st_mode & 077) != 0) {
    return absl::PermissionDeniedError(absl::StrCat(
        what, " directory ", dir, " has mode ", absl::StrFormat("%04o", st.st_mode & 07777),
        "; it must be 0700 so that no other user can reach the socket"));
  }
  return created;
}

absl::Status CheckPeer(int fd, absl::string_view role) {
  AIRLOCK_ASSIGN_OR_RETURN(PeerCredentials peer, GetPeerCredentials(fd));
  if (peer.uid != ::geteuid()) {
    return absl::PermissionDeniedError(absl::StrCat("refused: the ", role, " runs as uid ",
                                                    peer.uid, " (pid ", peer.pid,
                                                    "), not as this user"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PrivateListener> ListenPrivate(const std::string& path,
                                              const PrivateListenOptions& options) {
  AIRLOCK_ASSIGN_OR_RETURN(sockaddr_un address, AddressOf(path));
  const std::string dir = DirName(path);
  AIRLOCK_ASSIGN_OR_RETURN(const bool created, PrepareDirectory(dir, options.what));
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode) || st.st_uid != ::geteuid()) {
      return absl::AlreadyExistsError(absl::StrCat(
          path, " exists and is not a stale socket of ours; refusing to replace it"));
    }
    if (::unlink(path.c_str()) != 0) return LastErrnoStatus("unlink stale socket", path);
  }
  PrivateListener listener;
  listener.fd.reset(::socket(AF_UNIX,
                             SOCK_STREAM | SOCK_CLOEXEC | (options.nonblocking ? SOCK_NONBLOCK : 0),
                             0));
  if (!listener.fd) return LastErrnoStatus("socket", path);
  // Bound under umask 077: the socket is 0600 from its first instant.
  const mode_t old_umask = ::umask(077);
  const int bound =
      ::bind(listener.fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  const int bind_errno = errno;
  ::umask(old_umask);
  if (bound != 0) return ErrnoToStatus(bind_errno, "bind", path);
  if (::listen(listener.fd.get(), options.backlog) != 0) return LastErrnoStatus("listen", path);
  if (created) listener.created_directory = dir;
  return listener;
}

absl::StatusOr<ScopedFd> AcceptSameUser(int listener) {
  int raw;
  do {
    raw = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  } while (raw < 0 && errno == EINTR);
  if (raw < 0) return LastErrnoStatus("accept");
  ScopedFd fd(raw);
  AIRLOCK_RETURN_IF_ERROR(CheckPeer(fd.get(), "client"));
  return fd;
}

absl::StatusOr<ScopedFd> ConnectSameUser(const std::string& path) {
  AIRLOCK_ASSIGN_OR_RETURN(sockaddr_un address, AddressOf(path));
  ScopedFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return LastErrnoStatus("socket", path);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    return LastErrnoStatus("connect", path);
  }
  AIRLOCK_RETURN_IF_ERROR(CheckPeer(fd.get(), absl::StrCat("process listening on ", path)));
  return fd;
}

}  // namespace airlock::ipc
