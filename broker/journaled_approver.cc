#include "broker/journaled_approver.h"

#include "absl/strings/str_cat.h"
#include "broker/fs/digest.h"

namespace airlock::broker {

Answer JournaledApprover::Ask(const ApprovalRequest& request, absl::Duration timeout) {
  audit::AuditRecord asked = call_.Record(audit::AuditEvent::kApprovalAsked);
  asked.target = request.target;
  asked.cwd = request.cwd;
  asked.content_sha256 = request.content_sha256;
  if (!request.command.empty()) asked.command_sha256 = Sha256Hex(request.command);
  asked.rule = request.rule;
  asked.approver = approver_.Describe();
  asked.justification = request.justification;
  asked.decision = "ask";
  if (absl::StatusOr<uint64_t> seq = call_.audit->Append(asked); !seq.ok()) {
    return Answer::No(absl::StrCat("the audit log cannot record the question (",
                                   seq.status().message(), ")"));
  }
  Answer answer = approver_.Ask(request, timeout);
  audit::AuditRecord answered = call_.Record(audit::AuditEvent::kApprovalAnswered);
  answered.target = request.target;
  answered.rule = request.rule;
  answered.approver = approver_.Describe();
  answered.decision = !answer.approved                          ? "denied"
                     : answer.scope == Answer::Scope::kSession ? "approved-for-session"
                                                               : "approved";
  answered.detail = answer.reason;
  if (absl::StatusOr<uint64_t> seq = call_.audit->Append(answered); !seq.ok()) {
    return Answer::No(absl::StrCat("the audit log cannot record the answer (",
                                   seq.status().message(), ")"));
  }
  return answer;
}

}  // namespace airlock::broker
