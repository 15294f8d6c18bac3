// poll(2) timeouts from an absl::Time deadline, shared by the approvers.
#ifndef BROKER_APPROVAL_DEADLINE_H_
#define BROKER_APPROVAL_DEADLINE_H_

#include <cstdint>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace airlock::broker {

// Milliseconds left until `deadline`, rounded up, capped at one hour (callers loop), 0 when it
// has passed. An infinite deadline waits in one-hour slices.
inline int PollTimeoutMillis(absl::Time deadline) {
  constexpr int64_t kSlice = int64_t{60} * 60 * 1000;
  if (deadline == absl::InfiniteFuture()) return static_cast<int>(kSlice);
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  if (left >= absl::Milliseconds(kSlice)) return static_cast<int>(kSlice);
  return static_cast<int>(absl::ToInt64Milliseconds(left) + 1);
}

}  // namespace airlock::broker

#endif  // BROKER_APPROVAL_DEADLINE_H_
