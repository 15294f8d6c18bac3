// An approver for tests: answers as configured and counts how often it was asked.
#ifndef TESTS_BROKER_APPROVAL_FAKE_APPROVER_H_
#define TESTS_BROKER_APPROVAL_FAKE_APPROVER_H_

#include <functional>
#include <string>

#include "broker/approval/approver.h"

namespace airlock::broker::testing {

class FakeApprover final : public Approver {
 public:
  explicit FakeApprover(bool approve) : approve_(approve) {}

  Answer Ask(const ApprovalRequest& request, absl::Duration timeout) override {
    ++calls_;
    last_request_ = request;
    last_timeout_ = timeout;
    if (while_asking_) while_asking_();
    if (!approve_) return Answer::No("fake no");
    return for_session_ ? Answer::YesForSession("fake yes for the session") : Answer::Yes("fake yes");
  }
  std::string Describe() const override { return "fake"; }

  // Runs inside Ask, before answering: what changes "while the approver decides".
  void set_while_asking(std::function<void()> hook) { while_asking_ = std::move(hook); }
  // Approvals answer "for the session" (MCP tools) instead of "this call".
  void set_for_session(bool for_session) { for_session_ = for_session; }
  int calls() const { return calls_; }
  const ApprovalRequest& last_request() const { return last_request_; }
  absl::Duration last_timeout() const { return last_timeout_; }

 private:
  bool approve_;
  bool for_session_ = false;
  int calls_ = 0;
  ApprovalRequest last_request_;
  absl::Duration last_timeout_;
  std::function<void()> while_asking_;
};

}  // namespace airlock::broker::testing

#endif  // TESTS_BROKER_APPROVAL_FAKE_APPROVER_H_
