// The `socket:PATH` approver, for headless brokers: the broker listens on a Unix socket at
// PATH inside a 0700 directory it owns; an approver client (`airlock approve`, or any program)
// connects and is handed one request at a time.
//
// Protocol, one connection per request, newline-terminated UTF-8 JSON lines:
//   broker → client: the request object of RequestToJson (broker/approval/prompt.h);
//   client → broker: {"approved": true|false, "reason": "…"} (reason optional).
// Only a connection whose peer uid (SO_PEERCRED) equals the broker's euid is served; others
// are closed unanswered. No client within the timeout, a hang-up, or anything but
// "approved": true denies. Clients may connect early: the connection waits in the backlog
// until the broker has a request.
#ifndef BROKER_APPROVAL_SOCKET_APPROVER_H_
#define BROKER_APPROVAL_SOCKET_APPROVER_H_

#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "broker/approval/approver.h"
#include "platform/base/scoped_fd.h"

namespace airlock::broker {

// The longest line either side accepts.
inline constexpr size_t kMaxApprovalLineBytes = 1 << 20;

class SocketApprover final : public Approver {
 public:
  // Creates PATH's directory with mode 0700 when missing (its parent must exist); an existing
  // directory must be a real directory owned by the broker's euid with no group/other bits.
  // A stale socket at PATH owned by us is replaced; anything else there is refused.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<SocketApprover>> Listen(
      const std::string& socket_path);
  ~SocketApprover() override;

  Answer Ask(const ApprovalRequest& request, absl::Duration timeout) override;
  std::string Describe() const override { return "socket:" + socket_path_; }

 private:
  SocketApprover(std::string socket_path, std::string created_dir, ScopedFd listener)
      : socket_path_(std::move(socket_path)),
        created_dir_(std::move(created_dir)),
        listener_(std::move(listener)) {}

  const std::string socket_path_;
  const std::string created_dir_;  // removed on destruction when we created it
  ScopedFd listener_;
  std::timed_mutex mutex_;
};

// The client side, for `airlock approve`: connects to PATH (the peer must run as our uid).
[[nodiscard]] absl::StatusOr<ScopedFd> ConnectToApprovalSocket(const std::string& socket_path);

}  // namespace airlock::broker

#endif  // BROKER_APPROVAL_SOCKET_APPROVER_H_
