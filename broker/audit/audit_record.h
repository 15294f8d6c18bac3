// One audit record as the broker describes it, and the fields it contributes to a log line.
// Records carry canonical targets and SHA-256 digests, never file contents, commands' output
// or keys: there is no field that could hold them, and digest fields accept only digests.
#ifndef BROKER_AUDIT_AUDIT_RECORD_H_
#define BROKER_AUDIT_AUDIT_RECORD_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace airlock::broker::audit {

enum class AuditEvent {
  kRunStart,          // the broker started (or resumed) a session
  kRunEnd,            // the worker exited; the seal follows
  kRequest,           // a request arrived (before any check)
  kDecision,          // the policy decided: allow / deny / ask, with the rule
  kApprovalAsked,     // an approver was asked
  kApprovalAnswered,  // the approver answered (decision: approved / denied / timeout / …)
  kResult,            // the outcome of an allowed request
  kPresetChanged,     // the operator changed the preset
  kProtocolError,     // a channel was closed for a protocol violation
  // Written by the log itself; Append refuses them.
  kEpochClose,
  kRecovery,
  kSeal,
};

// "run_start", "request", "epoch_close", … as written in the log.
absl::string_view AuditEventName(AuditEvent event);
std::optional<AuditEvent> AuditEventFromName(absl::string_view name);
// epoch_close, recovery and seal: only AuditLog writes them.
bool IsLogControlEvent(AuditEvent event);

struct AuditRecord {
  AuditEvent event = AuditEvent::kRequest;
  std::optional<uint64_t> channel;     // which worker channel
  std::optional<uint64_t> request_id;  // the client-chosen request id
  std::string tool;                    // read, write, edit, list, bash, call_tool:NAME, …
  std::string target;                  // canonical path (file tools)
  std::string cwd;                     // canonical working directory (bash)
  std::string content_sha256;          // resulting content (write/edit), 64 lowercase hex
  std::string previous_sha256;         // content replaced, 64 hex, or "absent"
  std::string command_sha256;          // SHA-256 of the command line (bash), 64 hex
  std::string decision;                // allow, deny, ask, approved, denied, ok, error, …
  std::string rule;                    // the rule that decided, e.g. protected-path:.git/hooks
  std::string preset;                  // active preset name
  std::string mode;                    // active mode name
  std::string approver;                // tty, socket, command:PROG, none
  std::string code;                    // wire error code name for refusals and errors
  std::optional<int64_t> exit_code;    // bash / declared tools
  std::optional<uint64_t> policy_epoch;
  std::string justification;           // the agent's stated reason (display text, capped)
  std::string detail;                  // short human explanation (capped); never contents
};

// Strings longer than these are cut and marked "…[cut N bytes]"; refusing to log a request
// because its path is absurdly long would refuse the refusal, too.
inline constexpr size_t kMaxPathFieldBytes = 4096;
inline constexpr size_t kMaxTextFieldBytes = 1024;

// The record's own fields as `,"key":value…` in a fixed order, empty fields omitted.
// InvalidArgument for a control event or a digest field that is not a digest.
[[nodiscard]] absl::StatusOr<std::string> SerializeRecordFields(const AuditRecord& record);

}  // namespace airlock::broker::audit

#endif  // BROKER_AUDIT_AUDIT_RECORD_H_
