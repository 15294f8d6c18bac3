#include "broker/approval/authorize.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "broker/approval/line_diff.h"
#include "broker/approval/ticket.h"
#include "broker/wire_error.h"
#include "platform/base/status_macros.h"

namespace airlock::broker {

absl::StatusOr<Authorization> Authorize(const Policy& policy, const ToolCall& call,
                                        ApprovalRequest request, Approver& approver,
                                        absl::Duration timeout) {
  Authorization result;
  result.decision = Decide(policy, call);
  const Decision& decision = result.decision;
  switch (decision.verdict) {
    case Verdict::kRefuse:
      return RefusalStatus(policy, call, decision.code, decision.rule, decision.reason);
    case Verdict::kRun:
      return result;
    case Verdict::kAsk:
      break;
  }
  request.tool = call.tool;
  request.preset = std::string(PresetName(policy.preset()));
  request.mode = std::string(ModeName(policy.mode()));
  request.rule = decision.rule;
  request.reason = decision.reason;
  if (request.justification.empty()) request.justification = call.justification;
  result.answer = approver.Ask(request, timeout);
  result.asked = true;
  if (!result.answer.approved) {
    return RefusalStatus(policy, call, v1::NOT_APPROVED, decision.rule,
                         absl::StrCat(decision.reason, ", and the approver said no (",
                                      approver.Describe(), ": ", result.answer.reason, ")"));
  }
  // A session-wide grant is never taken for built-in tools: this is a one-call approval.
  result.answer.scope = Answer::Scope::kOnce;
  return result;
}

ApprovalRequest ApprovalRequestForPlan(uint64_t request_id, const MutationPlan& plan,
                                       absl::string_view justification) {
  ApprovalRequest request;
  request.request_id = request_id;
  request.tool = plan.tool;
  request.target = plan.canonical_path;
  request.justification = std::string(justification);
  request.content_sha256 = plan.new_content_sha256;
  request.diff =
      UnifiedDiff(plan.old_content, plan.new_content, plan.canonical_path, plan.target.exists);
  return request;
}

template <typename Request>
absl::StatusOr<std::pair<MutationPlan, v1::WriteResult>> ApprovalGate::Mutate(
    uint64_t request_id, const Request& request,
    absl::StatusOr<MutationPlan> (FileTools::*plan_fn)(const Request&)) {
  const Policy policy = current_policy_();
  AIRLOCK_ASSIGN_OR_RETURN(MutationPlan plan, (files_.*plan_fn)(request));
  const ToolCall call =
      ToolCall::Mutation(plan, request.sandbox_permissions(), request.justification());
  // Decide first; a ticket is bound only when something is asked.
  const Decision decision = Decide(policy, call);
  if (decision.verdict == Verdict::kRefuse) {
    return RefusalStatus(policy, call, decision.code, decision.rule, decision.reason);
  }
  if (decision.verdict == Verdict::kRun) {
    AIRLOCK_ASSIGN_OR_RETURN(
        v1::WriteResult written,
        files_.Commit(plan, {decision.allow_outside, decision.allow_protected}));
    return std::make_pair(std::move(plan), std::move(written));
  }
  ApprovalTicket ticket = ApprovalTicket::ForMutation(request_id, request, plan, policy);
  AIRLOCK_ASSIGN_OR_RETURN(
      Authorization authorization,
      Authorize(policy, call, ApprovalRequestForPlan(request_id, plan, request.justification()),
                approver_, timeout_));
  // Re-resolve and re-check everything the approval bound, under the policy in force now.
  const Policy now = current_policy_();
  AIRLOCK_ASSIGN_OR_RETURN(MutationPlan fresh, (files_.*plan_fn)(request));
  AIRLOCK_RETURN_IF_ERROR(ticket.RedeemMutation(request_id, request, fresh, now));
  // The same epoch means the same policy, so the decision still stands; Commit re-checks the
  // fresh plan's identities once more under the mutation lock.
  AIRLOCK_ASSIGN_OR_RETURN(v1::WriteResult written,
                           files_.Commit(fresh, {authorization.decision.allow_outside,
                                                 authorization.decision.allow_protected}));
  return std::make_pair(std::move(fresh), std::move(written));
}

absl::StatusOr<v1::WriteResult> ApprovalGate::Write(uint64_t request_id,
                                                    const v1::WriteRequest& request) {
  AIRLOCK_ASSIGN_OR_RETURN(auto done, Mutate(request_id, request, &FileTools::PlanWrite));
  return std::move(done.second);
}

absl::StatusOr<v1::EditResult> ApprovalGate::Edit(uint64_t request_id,
                                                  const v1::EditRequest& request) {
  AIRLOCK_ASSIGN_OR_RETURN(auto done, Mutate(request_id, request, &FileTools::PlanEdit));
  v1::EditResult result;
  result.set_canonical_path(done.second.canonical_path());
  result.set_replacements(done.first.replacements);
  result.set_content_sha256(done.second.content_sha256());
  return result;
}

absl::StatusOr<ApprovalGate::BashPermit> ApprovalGate::AuthorizeBash(
    uint64_t request_id, const v1::BashRequest& request, absl::string_view canonical_cwd) {
  const Policy policy = current_policy_();
  ToolCall call =
      ToolCall::Bash(request.command(), request.sandbox_permissions(), request.justification());
  ApprovalRequest shown;
  shown.request_id = request_id;
  shown.command = request.command();
  shown.cwd = std::string(canonical_cwd);
  shown.escalated = request.sandbox_permissions() == v1::SANDBOX_PERMISSIONS_REQUIRE_ESCALATED;
  shown.justification = request.justification();
  ApprovalTicket ticket = ApprovalTicket::ForBash(request_id, request, canonical_cwd, policy);
  AIRLOCK_ASSIGN_OR_RETURN(Authorization authorization,
                           Authorize(policy, call, std::move(shown), approver_, timeout_));
  if (authorization.asked) {
    AIRLOCK_RETURN_IF_ERROR(ticket.RedeemBash(request_id, request, canonical_cwd,
                                              current_policy_()));
  }
  BashPermit permit;
  permit.unsandboxed = authorization.decision.unsandboxed;
  permit.decision = std::move(authorization.decision);
  permit.asked = authorization.asked;
  return permit;
}

}  // namespace airlock::broker
