#include "platform/linux/capabilities.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/platform/linux/child_runner.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock::linux_sandbox {
namespace {

using ::airlock::testing::ExpectErrno;
using ::airlock::testing::RunInChild;

// The Cap* lines of /proc/self/status of a freshly exec'd program, "" on failure.
std::string CapLinesAfterExec() {
  FILE* pipe = ::popen("exec /bin/grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status", "r");
  if (pipe == nullptr) return "";
  std::string out;
  char buffer[512];
  while (::fgets(buffer, sizeof(buffer), pipe) != nullptr) out += buffer;
  ::pclose(pipe);
  return out;
}

// Drops everything the way `airlock __confine` does: an unprivileged caller first enters a
// user namespace of its own.
std::string DropLikeConfine() {
  absl::StatusOr<CapabilitySets> before = ReadCapabilities();
  if (!before.ok()) return std::string(before.status().message());
  if (before->bounding != 0 && !CanDropBoundingSet()) {
    absl::Status entered = EnterOwnUserNamespace();
    if (!entered.ok()) return absl::StrCat("EnterOwnUserNamespace: ", entered.message());
  }
  absl::Status dropped = DropAllCapabilities();
  if (!dropped.ok()) return absl::StrCat("DropAllCapabilities: ", dropped.message());
  return "";
}

TEST(CapabilitiesTest, ReadsTheCurrentSets) {
  absl::StatusOr<CapabilitySets> sets = ReadCapabilities();
  ASSERT_TRUE(sets.ok()) << sets.status();
  if (::geteuid() == 0) {
    EXPECT_NE(sets->effective, 0u) << "root without capabilities? " << sets->DebugString();
  }
  EXPECT_NE(sets->bounding, 0u) << "the test process normally has a full bounding set";
}

TEST(CapabilitiesTest, DropEmptiesAllFiveSets) {
  const std::string failure = RunInChild([]() -> std::string {
    const std::string dropped = DropLikeConfine();
    if (!dropped.empty()) return dropped;
    absl::StatusOr<CapabilitySets> after = ReadCapabilities();
    if (!after.ok()) return std::string(after.status().message());
    if (!after->AllEmpty()) return absl::StrCat("left: ", after->DebugString());
    return "";
  });
  EXPECT_EQ(failure, "");
}

TEST(CapabilitiesTest, ExecDoesNotGiveThemBack) {
  // With no_new_privs and an empty bounding set, not even uid 0 regains anything on exec.
  const std::string failure = RunInChild([]() -> std::string {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return "no_new_privs";
    const std::string dropped = DropLikeConfine();
    if (!dropped.empty()) return dropped;
    const std::string lines = CapLinesAfterExec();
    int count = 0;
    std::string out;
    for (absl::string_view line : absl::StrSplit(lines, '\n', absl::SkipEmpty())) {
      ++count;
      if (!absl::EndsWith(line, "0000000000000000")) out += absl::StrCat(line, "\n");
    }
    if (count != 5) out += absl::StrCat("expected 5 Cap lines, got: ", lines);
    return out;
  });
  EXPECT_EQ(failure, "");
}

TEST(CapabilitiesTest, PrivilegedOperationsFailAfterTheDrop) {
  airlock::testing::TempDir dir;
  const std::string file = dir.Child("f");
  airlock::testing::WriteFileOrDie(file, "x");
  const bool was_root = ::geteuid() == 0;
  const std::string failure = RunInChild([&]() -> std::string {
    const std::string dropped = DropLikeConfine();
    if (!dropped.empty()) return dropped;
    // Giving a file away needs CAP_CHOWN, changing uid CAP_SETUID (root would have both).
    // Inside the unprivileged caller's own user namespace uid 4242 is unmapped: EINVAL.
    const int expected = was_root ? EPERM : EINVAL;
    return ExpectErrno("chown to another uid", ::chown(file.c_str(), 4242, -1), expected) +
           ExpectErrno("setuid", ::setuid(4242), expected);
  });
  EXPECT_EQ(failure, "");
}

}  // namespace
}  // namespace airlock::linux_sandbox
