// Approvers (SPEC §4): whom the broker asks when the policy says "ask". Every approver fails
// closed: anything but an explicit yes — no, empty, EOF, timeout, crash, garbage — is a denial.
#ifndef BROKER_APPROVAL_APPROVER_H_
#define BROKER_APPROVAL_APPROVER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace airlock::broker {

// What an approver is shown. Every string may hold hostile bytes (paths, diffs and
// justifications come from the agent); approvers escape them before showing them.
struct ApprovalRequest {
  uint64_t request_id = 0;
  std::string tool;            // "write", "edit", "bash", or a declared tool
  std::string target;          // canonical path (file tools); empty for bash
  std::string command;         // bash
  std::string cwd;             // bash
  bool escalated = false;      // bash require_escalated: runs without the sandbox
  std::string justification;
  std::string preset;          // "read-only", …
  std::string mode;            // "on-request", …
  std::string content_sha256;  // hex SHA-256 of the resulting content (file tools)
  std::string diff;            // unified diff, already bounded (file tools)
  std::string rule;            // the policy row that asks
  std::string reason;          // why it asks, in words
  // MCP tools (SPEC §4): the approver may answer "allow this exact tool for the live
  // session". Never offered for built-in or command tools; an offer-less session answer is
  // taken as a one-call yes only where offered, else as a denial.
  bool session_grant_offered = false;
};

struct Answer {
  bool approved = false;
  // Why (for the audit log and the refusal message): "approved on /dev/tty", "timeout", …
  std::string reason;
  // kSession: "allow this exact tool for the live session" (MCP tools, SPEC §4), given only
  // when the request offered it (ApprovalRequest::session_grant_offered).
  enum class Scope { kOnce, kSession };
  Scope scope = Scope::kOnce;

  static Answer Yes(std::string reason) { return Answer{true, std::move(reason), Scope::kOnce}; }
  static Answer YesForSession(std::string reason) {
    return Answer{true, std::move(reason), Scope::kSession};
  }
  static Answer No(std::string reason) { return Answer{false, std::move(reason), Scope::kOnce}; }
};

class Approver {
 public:
  virtual ~Approver() = default;
  // Blocks until an answer or `timeout`; never throws, never fails open.
  virtual Answer Ask(const ApprovalRequest& request, absl::Duration timeout) = 0;
  // "tty", "socket:/run/x.sock", "command:/usr/local/bin/approve", "none".
  virtual std::string Describe() const = 0;
};

// Always denies: "no approver configured".
class NoneApprover final : public Approver {
 public:
  Answer Ask(const ApprovalRequest&, absl::Duration) override {
    return Answer::No("no approver configured (--approver none)");
  }
  std::string Describe() const override { return "none"; }
};

// The approver named by --approver: "tty", "socket:PATH", "command:PROG", "none", or empty for
// the default (tty when open("/dev/tty") succeeds, else none). A socket approver starts
// listening here; an invalid spec is InvalidArgument.
[[nodiscard]] absl::StatusOr<std::unique_ptr<Approver>> MakeApprover(absl::string_view spec);

// True when this process has a controlling terminal it can open.
bool HasControllingTerminal();

}  // namespace airlock::broker

#endif  // BROKER_APPROVAL_APPROVER_H_
