#include "broker/approval/socket_approver.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "broker/approval/deadline.h"
#include "broker/approval/prompt.h"
#include "broker/approval/tty_approver.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "platform/base/errno_status.h"
#include "platform/base/fd_io.h"
#include "platform/base/logging.h"
#include "platform/base/status_macros.h"
#include "platform/ipc/private_socket.h"
#include "platform/ipc/socket_io.h"

namespace airlock::broker {
namespace {

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
  ipc::PrivateListenOptions options;
  options.nonblocking = true;
  options.backlog = 8;
  options.what = "approval socket";
  AIRLOCK_ASSIGN_OR_RETURN(ipc::PrivateListener listener,
                           ipc::ListenPrivate(socket_path, options));
  return std::unique_ptr<SocketApprover>(new SocketApprover(
      socket_path, std::move(listener.created_directory), std::move(listener.fd)));
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
    absl::StatusOr<ScopedFd> accepted = ipc::AcceptSameUser(listener_.get());
    if (!accepted.ok()) {
      // EAGAIN, ECONNABORTED: wait for the next one; another user's client is refused.
      if (absl::IsPermissionDenied(accepted.status())) {
        AIRLOCK_LOG(kWarning, "approval socket: ", accepted.status().message());
      }
      continue;
    }
    ScopedFd client = std::move(*accepted);
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
  return ipc::ConnectSameUser(socket_path);
}

}  // namespace airlock::broker
