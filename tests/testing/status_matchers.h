// GoogleTest matchers for absl::Status / StatusOr (Debian's Abseil ships none).
#ifndef TESTS_TESTING_STATUS_MATCHERS_H_
#define TESTS_TESTING_STATUS_MATCHERS_H_

#include <ostream>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"

namespace airlock::testing {

inline const absl::Status& GetStatus(const absl::Status& status) { return status; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

MATCHER(IsOk, "is OK") {
  const absl::Status& status = GetStatus(arg);
  if (!status.ok()) *result_listener << "status is " << status;
  return status.ok();
}

MATCHER_P(StatusIs, code, "has status code " + ::testing::PrintToString(code)) {
  const absl::Status& status = GetStatus(arg);
  *result_listener << "status is " << status;
  return status.code() == code;
}

MATCHER_P2(StatusIs, code, message_matcher, "") {
  const absl::Status& status = GetStatus(arg);
  *result_listener << "status is " << status;
  return status.code() == code &&
         ::testing::ExplainMatchResult(message_matcher, std::string(status.message()),
                                       result_listener);
}

}  // namespace airlock::testing

#define AIRLOCK_ASSERT_OK_AND_ASSIGN(lhs, expr)                                   \
  AIRLOCK_ASSERT_OK_AND_ASSIGN_IMPL_(                                             \
      AIRLOCK_TESTING_CONCAT_(airlock_test_statusor_, __LINE__), lhs, expr)
#define AIRLOCK_TESTING_CONCAT_INNER_(a, b) a##b
#define AIRLOCK_TESTING_CONCAT_(a, b) AIRLOCK_TESTING_CONCAT_INNER_(a, b)
#define AIRLOCK_ASSERT_OK_AND_ASSIGN_IMPL_(var, lhs, expr) \
  auto var = (expr);                                       \
  ASSERT_TRUE(var.ok()) << var.status();                   \
  lhs = std::move(var).value()

#endif  // TESTS_TESTING_STATUS_MATCHERS_H_
