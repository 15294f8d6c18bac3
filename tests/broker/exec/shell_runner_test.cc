#include "broker/exec/shell_runner.h"

#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "broker/after_reply.h"
#include "broker/exec/mask_mount_points.h"
#include "broker/exec/runtime_dir.h"
#include "broker/wire_error.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "platform/linux/bwrap_launcher.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/shell_snippets.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker {
namespace {

using ::airlock::testing::ReadFileOrMissing;
using ::airlock::testing::TempDir;
using ::testing::HasSubstr;

class ShellRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ShellRunnerOptions options;
    options.runtime_dir = runtime_.Child("rt");
    options.stream_limit = 1024;
    auto runner = ShellRunner::Create(options);
    ASSERT_TRUE(runner.ok()) << runner.status();
    runner_ = std::move(*runner);
  }

  bool SandboxWorks() {
    ShellRequest probe = Request("true");
    auto result = runner_->Run(probe);
    if (!result.ok()) std::cerr << "sandbox unavailable here: " << result.status() << "\n";
    return result.ok() && result->exit_code() == 0;
  }

  ShellRequest Request(const std::string& command,
                       v1::Preset preset = v1::PRESET_WORKSPACE_WRITE) {
    ShellRequest request;
    request.command = command;
    request.preset = preset;
    request.roots = {workspace_.path()};
    return request;
  }

  TempDir workspace_;
  TempDir runtime_;
  std::unique_ptr<ShellRunner> runner_;
};

TEST_F(ShellRunnerTest, RuntimeDirectoryIsPrivate) {
  struct stat st;
  ASSERT_EQ(::lstat(runner_->runtime_dir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST_F(ShellRunnerTest, StaleCallDirectoriesAreSwept) {
  // pid 2^22+1 cannot be running (above pid_max's ceiling).
  const std::string stale = runner_->runtime_dir() + "/shell-4194305-abcdef";
  ASSERT_EQ(::mkdir(stale.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((stale + "/tmp").c_str(), 0000), 0);
  EXPECT_EQ(SweepStaleCallDirs(runner_->runtime_dir()), 1);
  EXPECT_NE(::access(stale.c_str(), F_OK), 0);
}

TEST_F(ShellRunnerTest, OutputStatusAndPreset) {
  if (!SandboxWorks()) GTEST_SKIP() << "bwrap is not usable here";
  AIRLOCK_ASSERT_OK_AND_ASSIGN(v1::BashResult result,
                               runner_->Run(Request("echo out; echo err >&2; exit 7")));
  EXPECT_EQ(result.exit_code(), 7);
  EXPECT_EQ(result.stdout(), "out\n");
  EXPECT_EQ(result.stderr(), "err\n");
  EXPECT_FALSE(result.truncated());
  EXPECT_EQ(result.preset(), v1::PRESET_WORKSPACE_WRITE);
}

TEST_F(ShellRunnerTest, CommandLineSeesWhatBashDashCWouldGiveIt) {
  if (!SandboxWorks()) GTEST_SKIP() << "bwrap is not usable here";
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      v1::BashResult result,
      runner_->Run(Request(absl::StrCat(
          "echo \"$# [$1] [${airlock_command-unset}] [${ok-unset}]\";",
          airlock::testing::kPrintInheritedDescriptors,
          "cat <<'EOT'\nheredoc $HOME\nEOT\nset -- a b; echo $#"))));
  EXPECT_EQ(result.stdout(), "0 [] [unset] [unset]\nfds=0 1 2 \nheredoc $HOME\n2\n")
      << result.stderr();
}

TEST_F(ShellRunnerTest, SignalIsReported) {
  if (!SandboxWorks()) GTEST_SKIP() << "bwrap is not usable here";
  AIRLOCK_ASSERT_OK_AND_ASSIGN(v1::BashResult result, runner_->Run(Request("kill -9 $$")));
  EXPECT_EQ(result.exit_code(), 128 + 9);
}

TEST_F(ShellRunnerTest, LongOutputIsTruncatedAndKeptWhole) {
  if (!SandboxWorks()) GTEST_SKIP() << "bwrap is not usable here";
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      v1::BashResult result,
      runner_->Run(Request("head -c 5000 /dev/zero | tr '\\0' a; echo; echo tail")));
  EXPECT_TRUE(result.truncated());
  EXPECT_EQ(result.stdout().size(), 1024u);
  ASSERT_FALSE(result.full_output().empty());
  struct stat st;
  ASSERT_EQ(::stat(result.full_output().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_uid, ::geteuid());
  const std::string whole = ReadFileOrMissing(result.full_output());
  EXPECT_EQ(whole.size(), 5000u + 1 + 5);
  EXPECT_THAT(whole, HasSubstr("tail"));
}

TEST_F(ShellRunnerTest, OutputDirectoryIsPrivateAndNotTheRuntimeDirectory) {
  EXPECT_EQ(runner_->output_dir(), runner_->runtime_dir() + "-output");
  struct stat st;
  ASSERT_EQ(::lstat(runner_->output_dir().c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(st.st_uid, ::geteuid());
}

// On the host (danger-full-access), so that no sandbox is needed: the same output handling.
TEST_F(ShellRunnerTest, FullOutputIsInTheOutputDirectoryAndBoundedInNumber) {
  std::vector<std::string> files;
  for (size_t i = 0; i < ShellRunner::kKeptFullOutputs + 2; ++i) {
    AIRLOCK_ASSERT_OK_AND_ASSIGN(
        v1::BashResult result,
        runner_->Run(Request("head -c 2000 /dev/zero", v1::PRESET_DANGER_FULL_ACCESS)));
    ASSERT_TRUE(result.truncated());
    ASSERT_FALSE(result.full_output().empty());
    files.push_back(result.full_output());
  }
  const std::string prefix = absl::StrCat(runner_->output_dir(), "/output-", ::getpid(), "-");
  for (const std::string& file : files) EXPECT_EQ(file.rfind(prefix, 0), 0u) << file;
  EXPECT_EQ(::access(files[0].c_str(), F_OK), -1) << "the oldest is removed";
  EXPECT_EQ(::access(files[1].c_str(), F_OK), -1);
  for (size_t i = 2; i < files.size(); ++i) {
    EXPECT_EQ(ReadFileOrMissing(files[i]), std::string(2000, '\0')) << files[i];
  }
  EXPECT_EQ(testing::SortedNames(runner_->output_dir()).size(), ShellRunner::kKeptFullOutputs);
  runner_.reset();
  EXPECT_THAT(testing::SortedNames(runtime_.Child("rt-output")), ::testing::IsEmpty())
      << "a runner removes its files when it goes";
}

TEST_F(ShellRunnerTest, FullOutputFilesOfBrokersGoneAreSwept) {
  const std::string dir = runner_->output_dir();
  // pid 2^22+1 cannot be running (above pid_max's ceiling); pid 1 always runs.
  for (const std::string& name : {std::string("output-4194305-abcdef"),
                                  std::string("output-1-abcdef"),
                                  absl::StrCat("output-", ::getpid(), "-abcdef"),
                                  std::string("unrelated")}) {
    testing::WriteFileOrDie(absl::StrCat(dir, "/", name), "x");
  }
  ShellRunnerOptions options;
  options.runtime_dir = runner_->runtime_dir();
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ShellRunner> second, ShellRunner::Create(options));
  EXPECT_THAT(testing::SortedNames(dir), ::testing::ElementsAre("output-1-abcdef",
                                                   absl::StrCat("output-", ::getpid(), "-abcdef"),
                                                   "unrelated"));
}

TEST_F(ShellRunnerTest, TimeoutKillsTheTreeAndRemovesTheTempDirectory) {
  if (!SandboxWorks()) GTEST_SKIP() << "bwrap is not usable here";
  ShellRequest request = Request("(sleep 100; echo escaped) & sleep 100");
  request.timeout = std::chrono::milliseconds(300);
  const auto start = std::chrono::steady_clock::now();
  AIRLOCK_ASSERT_OK_AND_ASSIGN(v1::BashResult result, runner_->Run(request));
  EXPECT_TRUE(result.timed_out());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  // No call directory is left in the runtime directory.
  EXPECT_EQ(SweepStaleCallDirs(runner_->runtime_dir()), 0);
}

TEST_F(ShellRunnerTest, CancelKillsTheTree) {
  if (!SandboxWorks()) GTEST_SKIP() << "bwrap is not usable here";
  CancelToken cancel;
  std::thread canceller([&cancel] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel.Cancel();
  });
  const auto start = std::chrono::steady_clock::now();
  auto result = runner_->Run(Request("sleep 100"), &cancel);
  canceller.join();
  EXPECT_EQ(WireCodeOf(result.status()), v1::CANCELLED);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST_F(ShellRunnerTest, CwdOutsideTheRootsIsRefused) {
  ShellRequest request = Request("true");
  request.cwd = "/etc";
  EXPECT_EQ(WireCodeOf(runner_->Run(request).status()), v1::OUTSIDE_SANDBOX);
  request.cwd = workspace_.path() + "/../";
  EXPECT_EQ(WireCodeOf(runner_->Run(request).status()), v1::OUTSIDE_SANDBOX);
}

TEST_F(ShellRunnerTest, BadRequestsAreInvalid) {
  ShellRequest request = Request("");
  EXPECT_EQ(WireCodeOf(runner_->Run(request).status()), v1::INVALID_ARGUMENT);
  request = Request(std::string("a\0b", 3));
  EXPECT_EQ(WireCodeOf(runner_->Run(request).status()), v1::INVALID_ARGUMENT);
}

TEST_F(ShellRunnerTest, EnvironmentIsTheAllowlist) {
  if (!SandboxWorks()) GTEST_SKIP() << "bwrap is not usable here";
  ::setenv("AIRLOCK_TEST_SECRET", "leak", 1);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(v1::BashResult result,
                               runner_->Run(Request("env | cut -d= -f1 | sort | tr '\\n' ' '")));
  ::unsetenv("AIRLOCK_TEST_SECRET");
  EXPECT_THAT(result.stdout(), ::testing::Not(HasSubstr("AIRLOCK_TEST_SECRET")));
  EXPECT_THAT(result.stdout(), HasSubstr("TMPDIR"));
  EXPECT_THAT(result.stdout(), HasSubstr("PATH"));
}

TEST_F(ShellRunnerTest, EscalatedRunsOnTheHostWithTheHostEnvironment) {
  ::setenv("AIRLOCK_TEST_HOST", "visible", 1);
  ShellRequest request = Request("echo $AIRLOCK_TEST_HOST; touch escalated", v1::PRESET_READ_ONLY);
  request.escalated = true;
  AIRLOCK_ASSERT_OK_AND_ASSIGN(v1::BashResult result, runner_->Run(request));
  ::unsetenv("AIRLOCK_TEST_HOST");
  EXPECT_EQ(result.stdout(), "visible\n");
  EXPECT_EQ(::access(workspace_.Child("escalated").c_str(), F_OK), 0);
  // The same timeout handling applies.
  request = Request("sleep 100", v1::PRESET_DANGER_FULL_ACCESS);
  request.timeout = std::chrono::milliseconds(200);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(v1::BashResult slow, runner_->Run(request));
  EXPECT_TRUE(slow.timed_out());
}

TEST_F(ShellRunnerTest, TheCommandWaitsForTheBarrierAndARefusedBarrierRunsNothing) {
  if (!SandboxWorks()) GTEST_SKIP() << "bwrap is not usable here";
  // The barrier (the durable audit intent) runs once the sandbox is set up and the preflight
  // has said "ready": the command has not run yet, and runs only after it.
  ShellRequest request = Request("touch ran");
  bool called = false;
  request.before_start = [this, &called] {
    called = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_NE(::access(workspace_.Child("ran").c_str(), F_OK), 0) << "ran before the barrier";
    return absl::OkStatus();
  };
  AIRLOCK_ASSERT_OK_AND_ASSIGN(v1::BashResult result, runner_->Run(request));
  EXPECT_TRUE(called);
  EXPECT_EQ(result.exit_code(), 0);
  EXPECT_EQ(::access(workspace_.Child("ran").c_str(), F_OK), 0);

  // A refused barrier: no "go", the command never runs, the refusal is the result.
  request = Request("touch refused");
  request.before_start = [] { return absl::DataLossError("the intent is not on disk"); };
  EXPECT_THAT(runner_->Run(request),
              airlock::testing::StatusIs(absl::StatusCode::kDataLoss, HasSubstr("intent")));
  EXPECT_NE(::access(workspace_.Child("refused").c_str(), F_OK), 0);
}

TEST_F(ShellRunnerTest, ReadOnlyPresetBlocksWorkspaceWrites) {
  if (!SandboxWorks()) GTEST_SKIP() << "bwrap is not usable here";
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      v1::BashResult result,
      runner_->Run(Request("touch blocked; echo tmp > $TMPDIR/x && cat $TMPDIR/x",
                           v1::PRESET_READ_ONLY)));
  EXPECT_EQ(result.stdout(), "tmp\n");
  EXPECT_NE(::access(workspace_.Child("blocked").c_str(), F_OK), 0);
}

TEST_F(ShellRunnerTest, MasksLeaveNothingBehind) {
  if (!SandboxWorks()) GTEST_SKIP() << "bwrap is not usable here";
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      v1::BashResult result,
      runner_->Run(Request("mkdir -p .git/hooks 2>/dev/null || echo blocked; touch ok")));
  EXPECT_EQ(result.stdout(), "blocked\n");
  EXPECT_EQ(::access(workspace_.Child("ok").c_str(), F_OK), 0);
  EXPECT_NE(::access(workspace_.Child(".git").c_str(), F_OK), 0);
  EXPECT_NE(::access(workspace_.Child(".vscode").c_str(), F_OK), 0);
  EXPECT_NE(::access(workspace_.Child(".bashrc").c_str(), F_OK), 0);
}

// Under a reply scope (the server's, around handling a request and sending its reply) the
// masks' mount points are released when the scope ends, not before Run returns.
TEST_F(ShellRunnerTest, UnderAReplyScopeMasksLeaveWhenItEnds) {
  if (!SandboxWorks()) GTEST_SKIP() << "bwrap is not usable here";
  {
    AfterReply::Scope reply;
    AIRLOCK_ASSERT_OK_AND_ASSIGN(v1::BashResult result, runner_->Run(Request("true")));
    EXPECT_EQ(result.exit_code(), 0);
    EXPECT_EQ(::access(workspace_.Child(".git").c_str(), F_OK), 0) << "released too early";
  }
  DrainMaskRemovals();
  EXPECT_NE(::access(workspace_.Child(".git").c_str(), F_OK), 0);
  EXPECT_TRUE(testing::SortedNames(workspace_.path()).empty());
}

// A command about to run on the host (danger-full-access, an approved escalation) must find
// the workspace as the user has it: the pending release of earlier calls' masks runs first,
// even under the same reply scope.
TEST_F(ShellRunnerTest, AHostCommandFindsNoMaskLeftFromEarlierCalls) {
  if (!SandboxWorks()) GTEST_SKIP() << "bwrap is not usable here";
  AfterReply::Scope reply;
  AIRLOCK_ASSERT_OK_AND_ASSIGN(v1::BashResult sandboxed, runner_->Run(Request("true")));
  ASSERT_EQ(::access(workspace_.Child(".git").c_str(), F_OK), 0) << "not deferred";
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      v1::BashResult host,
      runner_->Run(Request("ls -A " + workspace_.path(), v1::PRESET_DANGER_FULL_ACCESS)));
  // Only the aside directory they left through (removed in the background) may show.
  for (absl::string_view name : absl::StrSplit(host.stdout(), '\n', absl::SkipEmpty())) {
    EXPECT_TRUE(IsMaskAsideName(name)) << "the host command saw " << name;
  }
  EXPECT_NE(::access(workspace_.Child(".git").c_str(), F_OK), 0);
}

}  // namespace
}  // namespace airlock::broker
