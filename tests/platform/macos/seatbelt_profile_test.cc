#include "platform/macos/seatbelt_profile.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace airlock::macos {
namespace {

using ::airlock::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Pair;

SeatbeltPolicy Policy() {
  SeatbeltPolicy policy;
  policy.writable_roots = {"/Users/a/work"};
  policy.temp_dir = "/private/var/folders/x/airlock-1/tmp";
  policy.protected_paths = {"/Users/a/.airlock", "/Users/a/work/secret"};
  policy.protected_names = {".git/hooks", ".bashrc"};
  return policy;
}

TEST(SeatbeltProfileTest, DeniesByDefaultAndAllowsRootsAndTempThroughParameters) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(SeatbeltProfile profile, RenderSeatbeltProfile(Policy()));
  const std::string& t = profile.text;
  EXPECT_THAT(t, HasSubstr("(deny default)"));
  EXPECT_THAT(t, HasSubstr("(deny file-write*)\n"));
  EXPECT_THAT(t, HasSubstr("(allow file-write* (subpath (param \"AIRLOCK_TMPDIR\")))"));
  EXPECT_THAT(t, HasSubstr("(allow file-write* (subpath (param \"AIRLOCK_ROOT_0\")))"));
  EXPECT_THAT(t, HasSubstr("(deny network*)"));
  EXPECT_THAT(t, HasSubstr("(deny mach-lookup)"));
  EXPECT_THAT(t, HasSubstr("(deny process-info* (target others))"));
  EXPECT_THAT(t, HasSubstr("(deny signal (target others))"));
  EXPECT_THAT(profile.parameters,
              ElementsAre(Pair("AIRLOCK_TMPDIR", "/private/var/folders/x/airlock-1/tmp"),
                          Pair("AIRLOCK_ROOT_0", "/Users/a/work"),
                          Pair("AIRLOCK_PROTECTED_0", "/Users/a/.airlock"),
                          Pair("AIRLOCK_PROTECTED_1", "/Users/a/work/secret")));
}

TEST(SeatbeltProfileTest, ProtectionComesAfterEveryAllowance) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(SeatbeltProfile profile, RenderSeatbeltProfile(Policy()));
  const std::string& t = profile.text;
  const size_t last_allow = t.rfind("(allow file-write*");
  const size_t first_protect = t.find("(deny file-write* (subpath (param \"AIRLOCK_PROTECTED_0");
  ASSERT_NE(first_protect, std::string::npos);
  EXPECT_LT(last_allow, first_protect);
  EXPECT_THAT(t, HasSubstr("(deny file-write* (regex #\"(^|/)\\.git/hooks(/|$)\"))"));
  EXPECT_THAT(t, HasSubstr("(deny file-write* (regex #\"(^|/)\\.bashrc(/|$)\"))"));
}

TEST(SeatbeltProfileTest, PathsNeverReachTheProfileText) {
  SeatbeltPolicy policy = Policy();
  const std::string hostile = "/tmp/x\")) (allow default) ((\"";
  policy.writable_roots.push_back(hostile);
  policy.protected_paths.push_back("/p\n(allow network*)");
  AIRLOCK_ASSERT_OK_AND_ASSIGN(SeatbeltProfile profile, RenderSeatbeltProfile(policy));
  EXPECT_THAT(profile.text, Not(HasSubstr("/Users")));
  EXPECT_THAT(profile.text, Not(HasSubstr("/tmp/x")));
  EXPECT_THAT(profile.text, Not(HasSubstr("(allow default)")));
  EXPECT_THAT(profile.text, Not(HasSubstr("(allow network*)")));
  EXPECT_THAT(profile.parameters, ::testing::Contains(Pair("AIRLOCK_ROOT_1", hostile)));
}

TEST(SeatbeltProfileTest, ReadOnlyHasNoWritableRoot) {
  SeatbeltPolicy policy = Policy();
  policy.writable_roots.clear();
  AIRLOCK_ASSERT_OK_AND_ASSIGN(SeatbeltProfile profile, RenderSeatbeltProfile(policy));
  EXPECT_THAT(profile.text, Not(HasSubstr("AIRLOCK_ROOT_")));
}

TEST(SeatbeltProfileTest, BadInputIsRefused) {
  SeatbeltPolicy policy = Policy();
  policy.writable_roots = {"relative"};
  EXPECT_THAT(RenderSeatbeltProfile(policy), StatusIs(absl::StatusCode::kInvalidArgument));
  policy = Policy();
  policy.temp_dir.clear();
  EXPECT_THAT(RenderSeatbeltProfile(policy), StatusIs(absl::StatusCode::kInvalidArgument));
  policy = Policy();
  policy.protected_paths = {std::string("/a\0b", 4)};
  EXPECT_THAT(RenderSeatbeltProfile(policy), StatusIs(absl::StatusCode::kInvalidArgument));
  policy = Policy();
  policy.protected_names = {".git\"))(allow default"};
  EXPECT_THAT(RenderSeatbeltProfile(policy), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(SeatbeltProfileTest, SandboxExecArgvKeepsTheCommandAfterDoubleDash) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(SeatbeltProfile profile, RenderSeatbeltProfile(Policy()));
  std::vector<std::string> argv = SandboxExecArgv(profile, {"-p", "(allow default)"});
  ASSERT_GE(argv.size(), 5u);
  EXPECT_EQ(argv[0], "/usr/bin/sandbox-exec");
  EXPECT_EQ(argv[1], "-p");
  EXPECT_EQ(argv[2], profile.text);
  EXPECT_EQ(argv[3], "-D");
  EXPECT_EQ(argv[4], "AIRLOCK_TMPDIR=/private/var/folders/x/airlock-1/tmp");
  EXPECT_THAT(std::vector<std::string>(argv.end() - 3, argv.end()),
              ElementsAre("--", "-p", "(allow default)"));
}

}  // namespace
}  // namespace airlock::macos
