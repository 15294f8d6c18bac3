#include "broker/journaled_file_tools.h"

#include "absl/strings/str_cat.h"
#include "broker/policy/decision.h"
#include "broker/wire_error.h"
#include "platform/base/status_macros.h"

namespace airlock::broker {

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
  if (absl::StatusOr<uint64_t> written = call_.audit->Append(intent, audit::Durability::kDurable);
      !written.ok()) {
    return WithRule(WireError(v1::INTERNAL, absl::StrCat(plan.tool, " ", plan.canonical_path,
                                                         " refused: the audit log cannot be "
                                                         "written (",
                                                         written.status().message(),
                                                         "); nothing was changed")),
                    "audit:unwritable");
  }
  return files_.Commit(plan, permission);
}

}  // namespace airlock::broker
