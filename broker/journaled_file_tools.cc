#include "broker/journaled_file_tools.h"

#include "absl/strings/str_cat.h"
#include "broker/policy/decision.h"
#include "broker/wire_error.h"
#include "platform/base/status_macros.h"

namespace airlock::broker {

namespace {

absl::Status Unwritable(const MutationPlan& plan, const absl::Status& why) {
  return WithRule(WireError(v1::INTERNAL, absl::StrCat(plan.tool, " ", plan.canonical_path,
                                                       " refused: the audit log cannot be "
                                                       "written (", why.message(),
                                                       "); nothing was changed")),
                  "audit:unwritable");
}

}  // namespace

absl::StatusOr<v1::WriteResult> JournaledFileTools::Write(const v1::WriteRequest&) {
  // The one-call shortcut would skip the policy; the dispatcher always goes through the gate.
  return WireError(v1::INTERNAL, "write must pass the approval gate");
}

absl::StatusOr<v1::EditResult> JournaledFileTools::Edit(const v1::EditRequest&) {
  return WireError(v1::INTERNAL, "edit must pass the approval gate");
}

absl::StatusOr<v1::WriteResult> JournaledFileTools::Commit(const MutationPlan& plan,
                                                           CommitPermission permission) {
  AIRLOCK_ASSIGN_OR_RETURN(PolicyState::Execution execution,
                           call_.policy_state->BeginExecution(call_.policy->epoch()));
  audit::AuditRecord intent = call_.Record(audit::AuditEvent::kDecision);
  intent.target = plan.canonical_path;
  intent.content_sha256 = plan.new_content_sha256;
  intent.previous_sha256 = plan.target.exists ? plan.target.content_sha256 : "absent";
  intent.decision = "allow";
  intent.rule = Decide(*call_.policy,
                       ToolCall::Mutation(plan, v1::SANDBOX_PERMISSIONS_UNSPECIFIED, ""))
                    .rule;
  intent.detail = "intent: replace atomically";
  // The intent is written now and its sync started; the file tools write and sync the temp
  // file meanwhile and wait for it right before the rename (or before creating a directory).
  // An intent that cannot be written, or cannot be made durable, refuses the commit with
  // nothing changed.
  absl::StatusOr<audit::PendingRecord> pending = call_.audit->AppendPending(intent);
  if (!pending.ok()) return Unwritable(plan, pending.status());
  audit::AuditLog* const log = call_.audit;
  const audit::PendingRecord record = *pending;
  permission.before_rename = [log, record, &plan]() -> absl::Status {
    absl::Status durable = log->AwaitDurable(record);
    return durable.ok() ? durable : Unwritable(plan, durable);
  };
  AIRLOCK_ASSIGN_OR_RETURN(v1::WriteResult written, files_.Commit(plan, permission));
  // A FileTools that did not call the barrier still does not acknowledge before the intent
  // is on disk (a no-op when it did).
  if (absl::Status durable = log->AwaitDurable(record); !durable.ok()) {
    return WithRule(WireError(v1::INTERNAL, absl::StrCat(plan.tool, " ", plan.canonical_path,
                                                         ": the audit log cannot be written (",
                                                         durable.message(), ")")),
                    "audit:unwritable");
  }
  return written;
}

}  // namespace airlock::broker
