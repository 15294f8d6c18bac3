// The authorization path: decide (broker/policy/decision.h), ask when the decision says so,
// and — for file mutations and shells — bind the approval to a ticket that is redeemed right
// before acting. The dispatcher calls these; nothing here is retried with wider authority.
#ifndef BROKER_APPROVAL_AUTHORIZE_H_
#define BROKER_APPROVAL_AUTHORIZE_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "airlock/v1/wire.pb.h"
#include "broker/approval/approver.h"
#include "broker/fs/file_tools.h"
#include "broker/policy/decision.h"
#include "broker/policy/policy.h"

namespace airlock::broker {

// What the authorization path reports as it goes, for the audit log (SPEC §9: every decision
// with its rule, every approval asked and answered, a record of intent before a mutation).
struct GateEvent {
  enum class Kind {
    kDecided,     // the policy's verdict (decision set)
    kAnswered,    // the approver's answer (answer set)
    kCommitting,  // about to perform a file mutation (plan's target and digest set)
  };
  Kind kind = Kind::kDecided;
  uint64_t request_id = 0;
  std::string tool;
  std::string target;          // canonical path, or the command for bash
  std::string content_sha256;  // resulting content (file tools)
  const Decision* decision = nullptr;
  const Answer* answer = nullptr;
};
// A non-OK status from the observer refuses the call at that point (an audit log that cannot
// be written stops the action; nothing is performed unlogged).
using GateObserver = std::function<absl::Status(const GateEvent&)>;

struct Authorization {
  Decision decision;
  bool asked = false;  // the approver was consulted (and said yes)
  Answer answer;       // when asked
};

// Decide → maybe ask → final. OK: the call may proceed as `decision` says (allow_outside,
// allow_protected, unsandboxed). Otherwise the refusal: the decision's code for fences, invalid
// arguments and mode never (DENIED), NOT_APPROVED when the approver did not say yes. Every
// message names the tool, target, reason, rule and preset. `request` is shown to the approver;
// its preset, mode, rule and reason are filled in here.
[[nodiscard]] absl::StatusOr<Authorization> Authorize(const Policy& policy, const ToolCall& call,
                                                      ApprovalRequest request,
                                                      Approver& approver,
                                                      absl::Duration timeout,
                                                      const GateObserver& observer = nullptr);

// The request an approver sees for a planned write or edit (target, diff, digests).
ApprovalRequest ApprovalRequestForPlan(uint64_t request_id, const MutationPlan& plan,
                                       absl::string_view justification);

// Write/edit/bash with the whole approval path, for the dispatcher:
//   Write/Edit: plan → decide → (ask → re-plan → redeem the ticket) → Commit.
//   AuthorizeBash: decide → (ask → redeem against the policy now in force); the caller then
//   runs the command sandboxed or not as the result says.
class ApprovalGate {
 public:
  // `current_policy` returns the policy in force right now (it may change while an approver
  // decides; the epoch tells).
  ApprovalGate(FileTools& files, Approver& approver, absl::Duration timeout,
               std::function<Policy()> current_policy)
      : files_(files),
        approver_(approver),
        timeout_(timeout),
        current_policy_(std::move(current_policy)) {}

  // Called at each step (see GateEvent); optional.
  void set_observer(GateObserver observer) { observer_ = std::move(observer); }

  [[nodiscard]] absl::StatusOr<v1::WriteResult> Write(uint64_t request_id,
                                                      const v1::WriteRequest& request);
  [[nodiscard]] absl::StatusOr<v1::EditResult> Edit(uint64_t request_id,
                                                    const v1::EditRequest& request);

  struct BashPermit {
    bool unsandboxed = false;  // danger-full-access, or an approved escalation
    Decision decision;
    bool asked = false;
  };
  [[nodiscard]] absl::StatusOr<BashPermit> AuthorizeBash(uint64_t request_id,
                                                         const v1::BashRequest& request,
                                                         absl::string_view canonical_cwd);

 private:
  template <typename Request>
  absl::StatusOr<std::pair<MutationPlan, v1::WriteResult>> Mutate(
      uint64_t request_id, const Request& request,
      absl::StatusOr<MutationPlan> (FileTools::*plan)(const Request&));
  // One plan → decide → (ask → re-plan → redeem) → commit; `asked` says whether the approver
  // was consulted.
  template <typename Request>
  absl::StatusOr<std::pair<MutationPlan, v1::WriteResult>> MutateOnce(
      uint64_t request_id, const Request& request,
      absl::StatusOr<MutationPlan> (FileTools::*plan)(const Request&), bool* asked);

  FileTools& files_;
  Approver& approver_;
  absl::Duration timeout_;
  std::function<Policy()> current_policy_;
  GateObserver observer_;
};

}  // namespace airlock::broker

#endif  // BROKER_APPROVAL_AUTHORIZE_H_
