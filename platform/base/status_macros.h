// Status propagation macros. Debian's Abseil (20220623) ships none, so these are ours.
#ifndef PLATFORM_BASE_STATUS_MACROS_H_
#define PLATFORM_BASE_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define AIRLOCK_STATUS_CONCAT_INNER_(a, b) a##b
#define AIRLOCK_STATUS_CONCAT_(a, b) AIRLOCK_STATUS_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function when `expr` is not OK.
#define AIRLOCK_RETURN_IF_ERROR(expr)                       \
  do {                                                      \
    ::absl::Status airlock_status_ = (expr);                \
    if (!airlock_status_.ok()) return airlock_status_;      \
  } while (false)

// `AIRLOCK_ASSIGN_OR_RETURN(auto x, F());` declares/assigns x from an OK StatusOr, or returns
// its status.
#define AIRLOCK_ASSIGN_OR_RETURN(lhs, expr) \
  AIRLOCK_ASSIGN_OR_RETURN_IMPL_(AIRLOCK_STATUS_CONCAT_(airlock_statusor_, __LINE__), lhs, expr)

#define AIRLOCK_ASSIGN_OR_RETURN_IMPL_(var, lhs, expr) \
  auto var = (expr);                                   \
  if (!var.ok()) return std::move(var).status();       \
  lhs = std::move(var).value()

#endif  // PLATFORM_BASE_STATUS_MACROS_H_
