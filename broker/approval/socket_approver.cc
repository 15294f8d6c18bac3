#include "broker/approval/socket_approver.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "broker/approval/deadline.h"
#include "broker/approval/prompt.h"
#include "broker/approval/tty_approver.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "platform/base/errno_status.h"
#include "platform/base/fd_io.h"
#include "platform/base/logging.h"
#include "platform/ipc/socket_io.h"

namespace airlock::broker {
namespace {

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

absl::StatusOr<sockaddr_un> SocketAddress(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(address.sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("socket path '", path, "' is empty or longer than ",
                     sizeof(address.sun_path) - 1, " bytes"));
  }
  std::memcpy(address.sun_path, path.data(), path.size());
  return address;
}

// The socket's directory: ours, a real directory, mode 0700 at most.
absl::StatusOr<bool> PrepareDirectory(const std::string& dir) {
  bool created = false;
  if (::mkdir(dir.c_str(), 0700) == 0) {
    created = true;
  } else if (errno != EEXIST) {
    return LastErrnoStatus("create the approval socket directory", dir);
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return LastErrnoStatus("lstat", dir);
  if (!S_ISDIR(st.st_mode)) {
    return absl::PermissionDeniedError(
        absl::StrCat("approval socket directory ", dir, " is not a directory (or is a link)"));
  }
  if (st.st_uid != ::geteuid()) {
    return absl::PermissionDeniedError(absl::StrCat("approval socket directory ", dir,
                                                    " is owned by uid ", st.st_uid, ", not ",
                                                    ::geteuid()));
  }
  if ((st.st_mode & 077) != 0) {
    return absl::PermissionDeniedError(absl::StrCat(
        "approval socket directory ", dir, " has mode ",
        absl::StrCat(absl::Hex(st.st_mode & 07777)), "; it must be 0700 (no group/other access)"));
  }
  return created;
}

// Sends all of `data` before `deadline` without blocking past it or raising SIGPIPE.
bool SendAllUntil(int fd, absl::string_view data, absl::Time deadline) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n =
        ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      const int wait = PollTimeoutMillis(deadline);
      if (wait == 0) return false;
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, wait) < 0 && errno != EINTR) return false;
      continue;
    }
    return false;
  }
  return true;
}

Answer ParseAnswer(const std::string& line, const ApprovalRequest& request) {
  google::protobuf::Struct s;
  if (!google::protobuf::util::JsonStringToMessage(line, &s).ok()) {
    return Answer::No("the approver client sent something that is not a JSON answer");
  }
  auto approved = s.fields().find("approved");
  if (approved == s.fields().end() ||
      approved->second.kind_case() != google::protobuf::Value::kBoolValue) {
    return Answer::No("the approver client's answer has no boolean 'approved'");
  }
  std::string reason;
  auto r = s.fields().find("reason");
  if (r != s.fields().end() && r->second.kind_case() == google::protobuf::Value::kStringValue) {
    reason = r->second.string_value().substr(0, 200);
  }
  if (approved->second.bool_value()) {
    auto scope = s.fields().find("scope");
    if (scope != s.fields().end()) {
      if (scope->second.kind_case() != google::protobuf::Value::kStringValue ||
          (scope->second.string_value() != "once" && scope->second.string_value() != "session")) {
        return Answer::No("the approver client's answer has an unknown 'scope'");
      }
      if (scope->second.string_value() == "session") {
        if (!request.session_grant_offered) {
          return Answer::No("the approver client answered for the session, which is not "
                            "offered for this tool");
        }
        return Answer::YesForSession(reason.empty() ? "approved for the session by the socket "
                                                      "client"
                                                    : reason);
      }
    }
    return Answer::Yes(reason.empty() ? "approved by the socket client" : reason);
  }
  return Answer::No(reason.empty() ? "the socket client said no" : reason);
}

}  // namespace

absl::StatusOr<std::unique_ptr<SocketApprover>> SocketApprover::Listen(
    const std::string& socket_path) {
  absl::StatusOr<sockaddr_un> address = SocketAddress(socket_path);
  if (!address.ok()) return address.status();
  const std::string dir = DirName(socket_path);
  absl::StatusOr<bool> created = PrepareDirectory(dir);
  if (!created.ok()) return created.status();

  struct stat st {};
  if (::lstat(socket_path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode) || st.st_uid != ::geteuid()) {
      return absl::AlreadyExistsError(absl::StrCat(
          socket_path, " exists and is not a stale socket of ours; refusing to replace it"));
    }
    if (::unlink(socket_path.c_str()) != 0) return LastErrnoStatus("unlink stale", socket_path);
  }
  ScopedFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!listener) return LastErrnoStatus("socket");
  const mode_t old_umask = ::umask(077);
  const int bound = ::bind(listener.get(), reinterpret_cast<const sockaddr*>(&*address),
                           sizeof(sockaddr_un));
  const int bind_errno = errno;
  ::umask(old_umask);
  if (bound != 0) return ErrnoToStatus(bind_errno, "bind", socket_path);
  if (::listen(listener.get(), 8) != 0) return LastErrnoStatus("listen", socket_path);
  return std::unique_ptr<SocketApprover>(
      new SocketApprover(socket_path, *created ? dir : std::string(), std::move(listener)));
}

SocketApprover::~SocketApprover() {
  listener_.reset();
  ::unlink(socket_path_.c_str());
  if (!created_dir_.empty()) ::rmdir(created_dir_.c_str());
}

Answer SocketApprover::Ask(const ApprovalRequest& request, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::unique_lock<std::timed_mutex> lock(mutex_, std::defer_lock);
  if (!lock.try_lock_until(absl::ToChronoTime(deadline))) {
    return Answer::No("timeout while another request held the approval socket");
  }
  const std::string line = RequestToJson(request) + "\n";
  for (;;) {
    const int wait = PollTimeoutMillis(deadline);
    if (wait == 0) {
      return Answer::No(absl::StrCat("timeout: no approver client answered on ", socket_path_,
                                     " within ", absl::FormatDuration(timeout)));
    }
    pollfd p{listener_.get(), POLLIN, 0};
    const int ready = ::poll(&p, 1, wait);
    if (ready < 0 && errno != EINTR) return Answer::No("poll on the approval socket failed");
    if (ready <= 0) continue;
    ScopedFd client(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!client) continue;  // EAGAIN, ECONNABORTED: wait for the next one
    absl::StatusOr<ipc::PeerCredentials> peer = ipc::GetPeerCredentials(client.get());
    if (!peer.ok() || peer->uid != ::geteuid()) {
      AIRLOCK_LOG(kWarning, "approval socket: refused a client of uid ",
                  peer.ok() ? absl::StrCat(peer->uid) : std::string("unknown"));
      continue;
    }
    if (!SendAllUntil(client.get(), line, deadline)) {
      continue;  // a client that left while queued; the request goes to the next one
    }
    absl::StatusOr<std::string> reply =
        ReadLineUntil(client.get(), deadline, kMaxApprovalLineBytes);
    if (!reply.ok()) {
      return Answer::No(absl::IsDeadlineExceeded(reply.status())
                            ? absl::StrCat("timeout after ", absl::FormatDuration(timeout))
                            : absl::StrCat("the approver client hung up without an answer (",
                                           reply.status().message(), ")"));
    }
    return ParseAnswer(*reply, request);
  }
}

absl::StatusOr<ScopedFd> ConnectToApprovalSocket(const std::string& socket_path) {
  absl::StatusOr<sockaddr_un> address = SocketAddress(socket_path);
  if (!address.ok()) return address.status();
  ScopedFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return LastErrnoStatus("socket");
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&*address), sizeof(sockaddr_un)) !=
      0) {
    return LastErrnoStatus("connect", socket_path);
  }
  absl::StatusOr<ipc::PeerCredentials> peer = ipc::GetPeerCredentials(fd.get());
  if (!peer.ok()) return peer.status();
  if (peer->uid != ::geteuid()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "the process listening on ", socket_path, " runs as uid ", peer->uid, ", not ours"));
  }
  return fd;
}

}  // namespace airlock::broker
