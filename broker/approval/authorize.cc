#include "broker/approval/authorize.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "broker/approval/line_diff.h"
#include "broker/approval/ticket.h"
#include "broker/wire_error.h"
#include "platform/base/status_macros.h"

namespace airlock::broker {

absl::StatusOr<Authorization> Authorize(const Policy& policy, const ToolCall& call,
                                        ApprovalRequest request, Approver& approver,
                                        absl::Duration timeout, const GateObserver& observer) {
  Authorization result;
  result.decision = Decide(policy, call);
  const Decision& decision = result.decision;
  GateEvent event;
  event.request_id = request.request_id;
  event.tool = call.tool;
  event.target = call.target;
  event.content_sha256 = request.content_sha256;
  event.decision = &decision;
  if (observer) {
    event.kind = GateEvent::Kind::kDecided;
    AIRLOCK_RETURN_IF_ERROR(observer(event));
  }
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
  if (observer) {
    event.kind = GateEvent::Kind::kAnswered;
    event.answer = &result.answer;
    AIRLOCK_RETURN_IF_ERROR(observer(event));
  }
  if (!result.answer.approved) {
    return RefusalStatus(policy, call, v1::NOT_APPROVED, decision.rule,
                         absl::StrCat(decision.reason, ", and the approver said no (",
                                      approver.Describe(), ": ", result.answer.reason, ")"));
  }
  // A session-wide answer counts only where it was offered (MCP tools); anything else is a
  // one-call approval.
  if (!request.session_grant_offered || call.kind != ToolKind::kMcp) {
    result.answer.scope = Answer::Scope::kOnce;
  }
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
  // A plan nobody approved may go stale under a concurrent call (two first writes creating the
  // same missing directory): then it is planned and decided again from scratch, under the same
  // policy, a bounded number of times. An approved plan is never re-planned silently.
  constexpr int kAttempts = 3;
  for (int attempt = 1;; ++attempt) {
    bool asked = false;
    absl::StatusOr<std::pair<MutationPlan, v1::WriteResult>> done =
        MutateOnce(request_id, request, plan_fn, &asked);
    if (done.ok() || asked || attempt == kAttempts ||
        WireCodeOf(done.status()) != v1::APPROVAL_STALE) {
      return done;
    }
  }
}

template <typename Request>
absl::StatusOr<std::pair<MutationPlan, v1::WriteResult>> ApprovalGate::MutateOnce(
    uint64_t request_id, const Request& request,
    absl::StatusOr<MutationPlan> (FileTools::*plan_fn)(const Request&), bool* asked) {
  const Policy policy = current_policy_();
  AIRLOCK_ASSIGN_OR_RETURN(MutationPlan plan, (files_.*plan_fn)(request));
  const ToolCall call =
      ToolCall::Mutation(plan, request.sandbox_permissions(), request.justification());
  // Only a call that will be asked pays for the diff and the ticket (Decide is pure and cheap;
  // Authorize decides again on the same inputs). The ticket binds the plan as shown.
  std::optional<ApprovalTicket> ticket;
  ApprovalRequest shown;
  shown.request_id = request_id;
  shown.content_sha256 = plan.new_content_sha256;
  if (Decide(policy, call).verdict == Verdict::kAsk) {
    ticket.emplace(ApprovalTicket::ForMutation(request_id, request, plan, policy));
    shown = ApprovalRequestForPlan(request_id, plan, request.justification());
  }
  AIRLOCK_ASSIGN_OR_RETURN(
      Authorization authorization,
      Authorize(policy, call, std::move(shown), approver_, timeout_, observer_));
  const FileTools::CommitPermission permission{authorization.decision.allow_outside,
                                               authorization.decision.allow_protected};
  *asked = authorization.asked;
  if (authorization.asked) {
    if (!ticket.has_value()) {
      return WireError(v1::INTERNAL, "an approval was asked without a ticket; nothing written");
    }
    // Re-resolve and re-check everything the approval bound, under the policy in force now.
    // The same epoch means the same policy, so the decision still stands.
    const Policy now = current_policy_();
    AIRLOCK_ASSIGN_OR_RETURN(MutationPlan fresh, (files_.*plan_fn)(request));
    AIRLOCK_RETURN_IF_ERROR(ticket->RedeemMutation(request_id, request, fresh, now));
    plan = std::move(fresh);
  }
  if (observer_) {
    GateEvent event;
    event.kind = GateEvent::Kind::kCommitting;
    event.request_id = request_id;
    event.tool = plan.tool;
    event.target = plan.canonical_path;
    event.content_sha256 = plan.new_content_sha256;
    event.decision = &authorization.decision;
    AIRLOCK_RETURN_IF_ERROR(observer_(event));
  }
  // Commit re-checks the plan's identities once more under the mutation lock.
  AIRLOCK_ASSIGN_OR_RETURN(v1::WriteResult written, files_.Commit(plan, permission));
  return std::make_pair(std::move(plan), std::move(written));
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
                           Authorize(policy, call, std::move(shown), approver_, timeout_,
                                     observer_));
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
