// The seed documents' scenarios on the real backend, as root and unprivileged: seed 000's
// approval flow (yes writes, no refuses and the agent sees it, an approved outside path is
// still refused, accept-edits with a custom edit-tools list, a shell with no approver
// refused, the audit log verified) and the shipped demo end to end.
#include <sys/stat.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/harness.h"
#include "tests/testing/temp_dir.h"

namespace airlock::integration {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class SeedScenarioTest : public ::testing::TestWithParam<RunAs> {
 protected:
  void SetUp() override {
    workspace_.Write("utils.py", "def add(a, b):\n    return a + b\n");
    // Approvers run as the broker's user; they log every question they get.
    tools_.Write("allow.sh", absl::StrCat("#!/bin/sh\ncat >> ", tools_.Child("asked.log"),
                                          "\necho >> ", tools_.Child("asked.log"),
                                          "\necho allow\n"));
    tools_.Write("deny.sh", absl::StrCat("#!/bin/sh\ncat >> ", tools_.Child("asked.log"),
                                         "\necho >> ", tools_.Child("asked.log"), "\necho no\n"));
    ::chmod(tools_.Child("allow.sh").c_str(), 0755);
    ::chmod(tools_.Child("deny.sh").c_str(), 0755);
  }
  RunOptions Options() const { return AirlockOptions(GetParam(), home_); }
  CommandResult Run(std::vector<std::string> args, const std::string& script) {
    std::vector<std::string> argv = {"run", "--workspace", workspace_.path()};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--", "/bin/sh", "-c", script});
    return RunAirlock(argv, Options());
  }
  std::string Asked() const { return testing::ReadFileOrMissing(tools_.Child("asked.log")); }
  CommandResult VerifyAudit() { return VerifyAuditLogs(GetParam(), home_); }

  Scratch workspace_{GetParam()};
  Scratch home_{GetParam()};
  Scratch tools_{GetParam()};
};

TEST_P(SeedScenarioTest, YesWritesAndTheAuditLogVerifies) {
  CommandResult result = Run({"--mode", "default", "--approver", "command:" + tools_.Child("allow.sh")},
                             "printf 'def add(a: int, b: int) -> int:\\n    return a + b\\n' | "
                             "airlock tool write utils.py; echo \"status=$?\"");
  EXPECT_THAT(result.out, HasSubstr("status=0")) << result;
  EXPECT_THAT(testing::ReadFileOrMissing(workspace_.Child("utils.py")), HasSubstr("a: int"));
  EXPECT_THAT(Asked(), HasSubstr("\"tool\":\"write\""));
  CommandResult verified = VerifyAudit();
  EXPECT_EQ(verified.exit_code, 0) << verified;
}

TEST_P(SeedScenarioTest, NoRefusesAndTheRefusalReachesTheAgent) {
  CommandResult result = Run({"--mode", "default", "--approver", "command:" + tools_.Child("deny.sh")},
                             "echo x | airlock tool write utils.py; echo \"status=$?\"");
  EXPECT_THAT(result.out, HasSubstr("\"code\":\"NOT_APPROVED\"")) << result;
  EXPECT_THAT(result.out, HasSubstr("status=3"));
  EXPECT_THAT(testing::ReadFileOrMissing(workspace_.Child("utils.py")), HasSubstr("a, b"));
}

TEST_P(SeedScenarioTest, ApprovingAnOutsidePathIsStillRefused) {
  const std::string outside = home_.Child("outside.txt");
  CommandResult result = Run({"--mode", "default", "--approver", "command:" + tools_.Child("allow.sh")},
                             absl::StrCat("echo x | airlock tool write ", outside,
                                          "; echo \"status=$?\""));
  EXPECT_THAT(result.out, HasSubstr("\"code\":\"OUTSIDE_SANDBOX\"")) << result;
  EXPECT_THAT(result.out, HasSubstr("status=3"));
  EXPECT_EQ(testing::ReadFileOrMissing(outside), "<missing>");
  EXPECT_THAT(Asked(), Not(HasSubstr("outside.txt")));  // fences come before any question
}

TEST_P(SeedScenarioTest, AcceptEditsRunsOnlyTheListedEditTools) {
  CommandResult result = Run(
      {"--preset", "workspace-write", "--mode", "accept-edits", "--edit-tools", "write",
       "--approver", "none"},
      "echo new | airlock tool write notes.txt; echo \"write=$?\"; "
      "airlock tool edit notes.txt --old new --new old; echo \"edit=$?\"; "
      "airlock tool bash --command true; echo \"bash=$?\"");
  EXPECT_THAT(result.out, HasSubstr("write=0")) << result;
  EXPECT_THAT(result.out, HasSubstr("edit=3"));  // edit is not listed: it asks, nobody answers
  EXPECT_THAT(result.out, HasSubstr("bash=3"));  // a shell is not an edit tool either
  EXPECT_EQ(testing::ReadFileOrMissing(workspace_.Child("notes.txt")), "new\n");
}

TEST_P(SeedScenarioTest, AShellWithNoApproverIsRefused) {
  CommandResult result = Run({"--preset", "workspace-write", "--mode", "default", "--approver", "none"},
                             "airlock tool bash --command 'touch made-by-shell'; echo \"status=$?\"");
  EXPECT_THAT(result.out, HasSubstr("\"code\":\"NOT_APPROVED\"")) << result;
  EXPECT_THAT(result.out, HasSubstr("status=3"));
  EXPECT_EQ(testing::ReadFileOrMissing(workspace_.Child("made-by-shell")), "<missing>");
}

// The demo a newcomer runs (scripts/demo), headless, on a copy of the sample workspace.
TEST_P(SeedScenarioTest, TheDemoSucceedsAndItsRefusedStepsAreRefused) {
  const std::string source = AIRLOCK_SOURCE_DIR;
  for (const char* file : {"utils.py", "test_utils.py"}) {
    workspace_.Write(file, testing::ReadFileOrMissing(source + "/demo/workspace/" + file));
  }
  workspace_.MakeDir(".git/hooks");
  tools_.Write("agent.sh", testing::ReadFileOrMissing(source + "/demo/agent.sh"));
  tools_.Write("approver.sh", testing::ReadFileOrMissing(source + "/demo/approver.sh"));
  ::chmod(tools_.Child("agent.sh").c_str(), 0755);
  ::chmod(tools_.Child("approver.sh").c_str(), 0755);
  std::vector<std::string> argv = {"run", "--workspace", workspace_.path(), "--preset",
                                   "workspace-write", "--mode", "default", "--approver",
                                   "command:" + tools_.Child("approver.sh"), "--",
                                   tools_.Child("agent.sh")};
  CommandResult result = RunAirlock(argv, Options());
  EXPECT_EQ(result.exit_code, 0) << result;
  EXPECT_THAT(result.out, HasSubstr("3 steps done, 3 refused as they should be, 0 unexpected"));
  EXPECT_THAT(testing::ReadFileOrMissing(workspace_.Child("utils.py")), HasSubstr("a: int"));
  EXPECT_EQ(testing::ReadFileOrMissing(workspace_.Child(".git/hooks/pre-commit")), "<missing>");
  CommandResult verified = VerifyAudit();
  EXPECT_EQ(verified.exit_code, 0) << verified;
}

INSTANTIATE_TEST_SUITE_P(Identities, SeedScenarioTest, ::testing::ValuesIn(IdentitiesToTest()),
                         RunAsName);

}  // namespace
}  // namespace airlock::integration
