#include "broker/policy_state.h"

#include "absl/strings/str_cat.h"
#include "broker/wire_error.h"
#include "platform/base/check.h"

namespace airlock::broker {

PolicyState::PolicyState(Policy initial, v1::Context base_context)
    : policy_(std::make_shared<const Policy>(std::move(initial))),
      base_context_(std::move(base_context)) {}

std::shared_ptr<const Policy> PolicyState::Current() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return policy_;
}

v1::Context PolicyState::ContextFor(const Policy& policy) const {
  v1::Context context = base_context_;
  context.set_preset(policy.preset());
  context.set_mode(policy.mode());
  context.clear_roots();
  for (const std::string& root : policy.roots()) context.add_roots(root);
  context.set_shell_network(policy.preset() == v1::PRESET_DANGER_FULL_ACCESS
                                ? v1::NETWORK_POLICY_HOST
                                : v1::NETWORK_POLICY_NONE);
  context.set_policy_epoch(policy.epoch());
  return context;
}

v1::Context PolicyState::CurrentContext() const { return ContextFor(*Current()); }

PolicyState::Execution& PolicyState::Execution::operator=(Execution&& other) noexcept {
  if (this != &other) {
    if (state_ != nullptr) state_->EndExecution();
    state_ = std::exchange(other.state_, nullptr);
  }
  return *this;
}

PolicyState::Execution::~Execution() {
  if (state_ != nullptr) state_->EndExecution();
}

absl::StatusOr<PolicyState::Execution> PolicyState::BeginExecution(uint64_t expected_epoch) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (policy_->epoch() != expected_epoch) {
    return WithRule(WireError(v1::APPROVAL_STALE,
                              absl::StrCat("the policy changed while the call waited (epoch ",
                                           expected_epoch, " → ", policy_->epoch(),
                                           ", now ", policy_->Describe(), "); nothing was done")),
                    "stale:policy-epoch");
  }
  ++executing_;
  return Execution(this);
}

void PolicyState::EndExecution() {
  std::lock_guard<std::mutex> lock(mutex_);
  AIRLOCK_CHECK(executing_ > 0);
  --executing_;
}

uint64_t PolicyState::executing() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return executing_;
}

absl::StatusOr<v1::Context> PolicyState::ChangePreset(
    v1::Preset preset, const std::function<absl::Status(const v1::Context&)>& persist,
    const std::function<void(const v1::Context&)>& publish) {
  v1::Context context;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (executing_ > 0) {
      return WireError(v1::BUSY, absl::StrCat("preset change refused: ", executing_,
                                              " call(s) in flight; try again when idle"));
    }
    absl::StatusOr<Policy> next = PolicyBuilder(*policy_).SetPreset(preset).Build();
    if (!next.ok()) return WireError(v1::INVALID_ARGUMENT, next.status().message());
    context = ContextFor(*next);
    // Persisted first: if the session store cannot record it, the old preset stays.
    if (absl::Status persisted = persist(context); !persisted.ok()) {
      return WireError(v1::INTERNAL,
                       absl::StrCat("preset change not applied: it could not be persisted (",
                                    persisted.message(), "); still ", policy_->Describe()));
    }
    policy_ = std::make_shared<const Policy>(std::move(*next));
  }
  publish(context);
  return context;
}

}  // namespace airlock::broker
