// The file tools end to end: `airlock tool write|edit|read|ls` from inside a real confined
// worker, as root and unprivileged, including refusals (exit 3) that must leave disk unchanged.
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/harness.h"
#include "tests/testing/temp_dir.h"

namespace airlock::integration {
namespace {

using ::testing::HasSubstr;

class FilesTest : public ::testing::TestWithParam<RunAs> {
 protected:
  // `airlock run --preset workspace-write --workspace W -- sh -c SCRIPT`, `airlock` on PATH.
  CommandResult RunScript(const std::string& script,
                          const std::vector<std::string>& extra_options = {}) {
    const std::string binary = AirlockBinary(GetParam());
    RunOptions options;
    options.run_as = GetParam();
    options.env = {absl::StrCat("AIRLOCK_HOME=", home_.path()),
                   absl::StrCat("HOME=", home_.path()),
                   absl::StrCat("PATH=", binary.substr(0, binary.rfind('/')), ":/usr/bin:/bin")};
    // Extra options go first: a repeatable option right before "--" swallows the command
    // (CLI11 vector options; reported to the policy-options owner).
    std::vector<std::string> args = {"run"};
    args.insert(args.end(), extra_options.begin(), extra_options.end());
    args.insert(args.end(), {"--preset", "workspace-write", "--workspace", workspace_.path(),
                             "--", "/bin/sh", "-c", script});
    return RunAirlock(args, options);
  }
  std::string InWorkspace(const std::string& relative) const {
    return testing::ReadFileOrMissing(workspace_.Child(relative));
  }

  Scratch workspace_{GetParam()};
  Scratch home_{GetParam()};
  Scratch outside_{GetParam()};
};

TEST_P(FilesTest, WriteThenEdit) {
  CommandResult result = RunScript(
      "echo hi | airlock tool write f && airlock tool edit f --old hi --new ho");
  ASSERT_EQ(result.exit_code, 0) << result;
  EXPECT_THAT(result.out, HasSubstr("\"ok\":true"));
  EXPECT_THAT(result.out, HasSubstr(workspace_.Child("f")));
  EXPECT_EQ(InWorkspace("f"), "ho\n");
  struct stat st;
  ASSERT_EQ(::stat(workspace_.Child("f").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  if (GetParam() == RunAs::kUnprivileged) {
    EXPECT_EQ(st.st_uid, kUnprivilegedUid);
  }
}

TEST_P(FilesTest, WriteCreatesMissingParentsAndEditAllReplacesEveryOccurrence) {
  CommandResult result = RunScript(
      "printf 'a a a' | airlock tool write new/dir/g && "
      "airlock tool edit new/dir/g --old a --new b --all");
  ASSERT_EQ(result.exit_code, 0) << result;
  EXPECT_THAT(result.out, HasSubstr("\"replacements\":3"));
  EXPECT_EQ(InWorkspace("new/dir/g"), "b b b");
}

TEST_P(FilesTest, ReadWithOffsetAndLimitAndList) {
  workspace_.Write("r.txt", "0123456789");
  CommandResult result =
      RunScript("airlock tool read r.txt --offset 2 --limit 3 && airlock tool ls .");
  ASSERT_EQ(result.exit_code, 0) << result;
  EXPECT_THAT(result.out, HasSubstr("\"content\":\"234\""));
  EXPECT_THAT(result.out, HasSubstr("\"name\":\"r.txt\""));
}

TEST_P(FilesTest, EditWithoutExactlyOneMatchFailsAndSaysHowMany) {
  workspace_.Write("e.txt", "x x");
  CommandResult result = RunScript(
      "airlock tool edit e.txt --old x --new y; echo \"status=$?\"; "
      "airlock tool edit e.txt --old z --new y; echo \"status=$?\"");
  EXPECT_THAT(result.out, HasSubstr("occurs 2 times")) << result;
  EXPECT_THAT(result.out, HasSubstr("occurs 0 times"));
  EXPECT_THAT(result.out, HasSubstr("\"code\":\"INVALID_ARGUMENT\""));
  EXPECT_THAT(result.out, HasSubstr("status=2"));
  EXPECT_EQ(InWorkspace("e.txt"), "x x");
}

TEST_P(FilesTest, ProtectedStorageIsRefusedWithExit3EvenThroughALink) {
  workspace_.Write(".git/hooks/pre-commit", "#!/bin/sh\n");
  ASSERT_EQ(::symlink(".git/hooks/pre-commit", workspace_.Child("innocent").c_str()), 0);
  CommandResult result = RunScript(
      "echo evil | airlock tool write .git/hooks/pre-commit; echo \"status=$?\"; "
      "echo evil | airlock tool write innocent; echo \"status=$?\"; "
      "airlock tool edit innocent --old sh --new evil; echo \"status=$?\"; "
      "echo evil | airlock tool write sub/.bashrc; echo \"status=$?\"");
  EXPECT_THAT(result.out, HasSubstr("\"code\":\"PROTECTED_PATH\"")) << result;
  // The message names the tool, the canonical path and the rule (the policy may word it).
  EXPECT_THAT(result.out,
              HasSubstr(absl::StrCat("write ", workspace_.Child(".git/hooks/pre-commit"),
                                     " refused")));
  EXPECT_THAT(result.out, HasSubstr("protected:.git/hooks"));
  EXPECT_THAT(result.out, HasSubstr("preset workspace-write"));
  EXPECT_THAT(result.out, ::testing::Not(HasSubstr("status=0")));
  EXPECT_THAT(result.out, HasSubstr("status=3"));
  EXPECT_EQ(InWorkspace(".git/hooks/pre-commit"), "#!/bin/sh\n");
  EXPECT_EQ(InWorkspace("sub/.bashrc"), "<missing>");
  EXPECT_EQ(InWorkspace("sub"), "<missing>");
}

TEST_P(FilesTest, OutsideTheWorkspaceIsRefusedWithExit3EvenThroughALink) {
  outside_.Write("o.txt", "outside");
  ASSERT_EQ(::symlink(outside_.Child("o.txt").c_str(), workspace_.Child("out_link").c_str()), 0);
  ASSERT_EQ(::symlink(outside_.Child("new.txt").c_str(), workspace_.Child("dangling").c_str()),
            0);
  CommandResult result = RunScript(absl::StrCat(
      "echo evil | airlock tool write ", outside_.Child("o.txt"), "; echo \"status=$?\"; ",
      "echo evil | airlock tool write out_link; echo \"status=$?\"; ",
      "echo evil | airlock tool write dangling; echo \"status=$?\"; ",
      "airlock tool edit out_link --old outside --new evil; echo \"status=$?\""));
  EXPECT_THAT(result.out, HasSubstr("\"code\":\"OUTSIDE_SANDBOX\"")) << result;
  EXPECT_THAT(result.out, HasSubstr(outside_.Child("new.txt")));
  EXPECT_THAT(result.out, ::testing::Not(HasSubstr("status=0")));
  EXPECT_THAT(result.out, HasSubstr("status=3"));
  EXPECT_EQ(testing::ReadFileOrMissing(outside_.Child("o.txt")), "outside");
  EXPECT_EQ(testing::ReadFileOrMissing(outside_.Child("new.txt")), "<missing>");
}

TEST_P(FilesTest, ReadsOutsideAreAllowedUnlessTheReadScopeIsTheWorkspace) {
  outside_.Write("o.txt", "outside");
  const std::string script =
      absl::StrCat("airlock tool read ", outside_.Child("o.txt"), "; echo \"status=$?\"");
  CommandResult open_scope = RunScript(script);
  EXPECT_THAT(open_scope.out, HasSubstr("\"content\":\"outside\"")) << open_scope;
  EXPECT_THAT(open_scope.out, HasSubstr("status=0"));
  CommandResult confined = RunScript(script, {"--read-scope", "workspace"});
  EXPECT_THAT(confined.out, HasSubstr("\"code\":\"OUTSIDE_SANDBOX\"")) << confined;
  EXPECT_THAT(confined.out, HasSubstr("status=3"));
}

TEST_P(FilesTest, ProtectOptionFencesAPathInsideTheWorkspace) {
  workspace_.Write("keys/k.pem", "key");
  CommandResult result = RunScript(
      "echo evil | airlock tool write keys/k.pem; echo \"status=$?\"; "
      "echo evil | airlock tool write keys/new.pem; echo \"status=$?\"; "
      "airlock tool read keys/k.pem",
      {"--protect", workspace_.Child("keys")});
  EXPECT_THAT(result.out, HasSubstr("\"code\":\"PROTECTED_PATH\"")) << result;
  EXPECT_THAT(result.out, HasSubstr(absl::StrCat("protect:", workspace_.Child("keys"))));
  EXPECT_THAT(result.out, ::testing::Not(HasSubstr("status=0")));
  EXPECT_THAT(result.out, HasSubstr("\"content\":\"key\""));  // still readable
  EXPECT_EQ(InWorkspace("keys/k.pem"), "key");
  EXPECT_EQ(InWorkspace("keys/new.pem"), "<missing>");
}

TEST_P(FilesTest, TheBrokersOwnStorageIsNeitherReadableNorWritable) {
  home_.Write("planted.txt", "broker state");
  CommandResult result = RunScript(absl::StrCat(
      "airlock tool read ", home_.Child("planted.txt"), "; echo \"status=$?\"; ",
      "airlock tool ls ", home_.path(), "; echo \"status=$?\"; ",
      "echo evil | airlock tool write ", home_.Child("planted.txt"), "; echo \"status=$?\""));
  EXPECT_THAT(result.out, HasSubstr("\"code\":\"PROTECTED_PATH\"")) << result;
  EXPECT_THAT(result.out, HasSubstr("the broker's own storage"));
  EXPECT_THAT(result.out, ::testing::Not(HasSubstr("broker state")));
  EXPECT_THAT(result.out, ::testing::Not(HasSubstr("status=0")));
  EXPECT_EQ(testing::ReadFileOrMissing(home_.Child("planted.txt")), "broker state");
}

TEST_P(FilesTest, HostilePathsAreInvalid) {
  CommandResult result = RunScript(
      "echo x | airlock tool write 'a\\b'; echo \"status=$?\"; "
      "echo x | airlock tool write ''; echo \"status=$?\"");
  EXPECT_THAT(result.out, HasSubstr("backslash")) << result;
  EXPECT_THAT(result.out, HasSubstr("empty path"));
  EXPECT_THAT(result.out, ::testing::Not(HasSubstr("status=0")));
}

INSTANTIATE_TEST_SUITE_P(Identities, FilesTest, ::testing::ValuesIn(IdentitiesToTest()),
                         RunAsName);

}  // namespace
}  // namespace airlock::integration
