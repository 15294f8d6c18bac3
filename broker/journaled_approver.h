// An approver that records every question and every answer in the audit log (durably: an
// approval is a decision the log must not lose) before passing the answer on.
#ifndef BROKER_JOURNALED_APPROVER_H_
#define BROKER_JOURNALED_APPROVER_H_

#include "broker/approval/approver.h"
#include "broker/call_context.h"

namespace airlock::broker {

class JournaledApprover final : public Approver {
 public:
  JournaledApprover(Approver& approver, const CallContext& call)
      : approver_(approver), call_(call) {}

  // If the question cannot be recorded, nobody is asked and the answer is no.
  Answer Ask(const ApprovalRequest& request, absl::Duration timeout) override;
  std::string Describe() const override { return approver_.Describe(); }

 private:
  Approver& approver_;
  const CallContext& call_;
};

}  // namespace airlock::broker

#endif  // BROKER_JOURNALED_APPROVER_H_
