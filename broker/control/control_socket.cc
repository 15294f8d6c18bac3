#include "broker/control/control_socket.h"

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

namespace airlock::broker {
namespace {

absl::StatusOr<sockaddr_un> AddressOf(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(address.sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("socket path must be 1 to ", sizeof(address.sun_path) - 1, " bytes: ", path));
  }
  std::memcpy(address.sun_path, path.data(), path.size());
  return address;
}

absl::Status CheckPrivateDirectory(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return LastErrnoStatus("mkdir", dir);
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) return LastErrnoStatus("stat", dir);
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat("socket directory ", dir, " is not a directory"));
  }
  if (st.st_uid != ::geteuid()) {
    return absl::FailedPreconditionError(absl::StrCat("socket directory ", dir, " is owned by uid ",
                                                      st.st_uid, ", not by this user"));
  }
  if ((st.st_mode & 077) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "socket directory ", dir, " has mode ", absl::StrFormat("%04o", st.st_mode & 07777),
        "; it must be 0700 so that no other user can reach the socket"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ScopedFd> ListenOnPrivateSocket(const std::string& path) {
  AIRLOCK_ASSIGN_OR_RETURN(sockaddr_un address, AddressOf(path));
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  AIRLOCK_RETURN_IF_ERROR(CheckPrivateDirectory(dir));
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return absl::FailedPreconditionError(absl::StrCat(path, " exists and is not a socket"));
    }
    if (::unlink(path.c_str()) != 0) return LastErrnoStatus("unlink stale socket", path);
  }
  ScopedFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return LastErrnoStatus("socket");
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    return LastErrnoStatus("bind", path);
  }
  if (::chmod(path.c_str(), 0600) != 0) return LastErrnoStatus("chmod", path);
  if (::listen(fd.get(), 16) != 0) return LastErrnoStatus("listen", path);
  return fd;
}

absl::StatusOr<ScopedFd> AcceptSameUser(int listener) {
  int raw;
  do {
    raw = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  } while (raw < 0 && errno == EINTR);
  if (raw < 0) return LastErrnoStatus("accept");
  ScopedFd fd(raw);
  AIRLOCK_ASSIGN_OR_RETURN(ipc::PeerCredentials peer, ipc::GetPeerCredentials(fd.get()));
  if (peer.uid != ::geteuid()) {
    return absl::PermissionDeniedError(absl::StrCat("refused a connection from uid ", peer.uid,
                                                    " (pid ", peer.pid, "): not this user"));
  }
  return fd;
}

absl::StatusOr<ScopedFd> ConnectUnix(const std::string& path) {
  AIRLOCK_ASSIGN_OR_RETURN(sockaddr_un address, AddressOf(path));
  ScopedFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return LastErrnoStatus("socket");
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    return LastErrnoStatus("connect", path);
  }
  return fd;
}

}  // namespace airlock::broker
