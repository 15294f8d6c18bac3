// The policy in force for a running broker, and the one place it changes. Calls take a
// snapshot when they start; a call that is about to act (write, edit, run a command) marks
// itself executing, which fails if the policy changed since its snapshot (an approval asked
// under the old policy is stale). The operator's preset change is refused while any call is
// executing (BUSY), is persisted before it takes effect, and is then published.
#ifndef BROKER_POLICY_STATE_H_
#define BROKER_POLICY_STATE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "airlock/v1/wire.pb.h"
#include "broker/policy/policy.h"

namespace airlock::broker {

class PolicyState {
 public:
  PolicyState(Policy initial, v1::Context base_context);

  std::shared_ptr<const Policy> Current() const;
  // The runtime context (session, preset, mode, roots, networks, epoch) of the current policy.
  v1::Context CurrentContext() const;

  // Held while a call acts; releasing it lets preset changes through again.
  class Execution {
   public:
    Execution() = default;
    Execution(Execution&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}
    Execution& operator=(Execution&& other) noexcept;
    ~Execution();

   private:
    friend class PolicyState;
    explicit Execution(PolicyState* state) : state_(state) {}
    PolicyState* state_ = nullptr;
  };

  // Marks a call executing under the policy of epoch `expected_epoch`. APPROVAL_STALE if the
  // policy changed since (the call's decision, or its approval, was made under another one).
  [[nodiscard]] absl::StatusOr<Execution> BeginExecution(uint64_t expected_epoch);
  uint64_t executing() const;

  // Changes the preset: BUSY while a call executes; `persist` runs first with the new context
  // and, if it fails, nothing changes; then the new policy is in force and `publish` runs.
  [[nodiscard]] absl::StatusOr<v1::Context> ChangePreset(
      v1::Preset preset, const std::function<absl::Status(const v1::Context&)>& persist,
      const std::function<void(const v1::Context&)>& publish);

 private:
  v1::Context ContextFor(const Policy& policy) const;
  void EndExecution();

  mutable std::mutex mutex_;
  std::shared_ptr<const Policy> policy_;  // guarded by mutex_
  uint64_t executing_ = 0;                // guarded by mutex_
  const v1::Context base_context_;        // session id, worker network
};

}  // namespace airlock::broker

#endif  // BROKER_POLICY_STATE_H_
