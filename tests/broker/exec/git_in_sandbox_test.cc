// Real git in a real workspace-write shell sandbox: git works there as usual, but what makes
// git on the host run something later (hooks, config, and the commondir that would redirect
// both) cannot be written, and host git keeps working while a call runs.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "broker/exec/protection_plan.h"
#include "broker/exec/shell_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/shell_snippets.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker {
namespace {

using ::airlock::testing::TempDir;
using ::testing::HasSubstr;

bool HaveGit() { return ::access("/usr/bin/git", X_OK) == 0; }

// Runs `git ARGS` on the host in `dir`; its exit status.
int HostGit(const std::string& dir, const std::string& args) {
  const std::string command =
      absl::StrCat("cd '", dir, "' && git -c user.email=a@b -c user.name=n ", args,
                   " >/dev/null 2>&1");
  return ::system(command.c_str());
}

// The output of `git ARGS` on the host in `dir`.
std::string HostGitOutput(const std::string& dir, const std::string& args) {
  const std::string command = absl::StrCat("cd '", dir, "' && git ", args, " 2>&1");
  std::string out;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
    ::pclose(pipe);
  }
  return out;
}

class GitInSandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveGit()) GTEST_SKIP() << "git is not installed (scripts/setup installs it)";
    ShellRunnerOptions options;
    options.runtime_dir = runtime_.Child("rt");
    auto runner = ShellRunner::Create(options);
    ASSERT_TRUE(runner.ok()) << runner.status();
    runner_ = std::move(*runner);
    ASSERT_EQ(HostGit(workspace_.path(), "init -q ."), 0);
    testing::WriteFileOrDie(workspace_.Child("a.txt"), "a\n");
    ASSERT_EQ(HostGit(workspace_.path(), "add a.txt"), 0);
    ASSERT_EQ(HostGit(workspace_.path(), "commit -qm first"), 0);
  }

  ShellRequest Request(const std::string& command) {
    ShellRequest request;
    request.command = command;
    request.preset = v1::PRESET_WORKSPACE_WRITE;
    request.roots = {workspace_.path()};
    return request;
  }

  TempDir workspace_;
  TempDir runtime_;
  std::unique_ptr<ShellRunner> runner_;
};

TEST_F(GitInSandboxTest, GitWorksAndCannotBeRedirected) {
  ShellRequest request = Request(absl::StrCat(
      "export GIT_AUTHOR_NAME=n GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=n "
      "GIT_COMMITTER_EMAIL=a@b; "
      "test -z \"$(git status --porcelain)\" && echo b > b.txt && git add -A && "
      "git commit -qm second && git branch side && git stash list && git worktree list "
      ">/dev/null && git rev-parse --git-common-dir && git log --oneline | wc -l; "
      "mkdir -p evil/objects evil/refs; "
      "echo ../evil > .git/commondir 2>/dev/null || echo commondir-refused; "
      "echo x >> .git/config 2>/dev/null || echo config-refused; "
      "echo x > .git/hooks/pre-commit 2>/dev/null || echo hooks-refused; ",
      // The protected paths were bound from descriptors (--bind-fd): none reaches the command.
      airlock::testing::kPrintInheritedDescriptors));
  // While the sandbox is set up, host git (an editor polling `git status`) keeps working.
  int host_status_during_call = -1;
  request.before_start = [&]() -> absl::Status {
    host_status_during_call = HostGit(workspace_.path(), "status --short");
    return absl::OkStatus();
  };
  AIRLOCK_ASSERT_OK_AND_ASSIGN(v1::BashResult result, runner_->Run(request));
  DrainMaskRemovals();
  EXPECT_EQ(result.exit_code(), 0) << result.stdout() << result.stderr();
  EXPECT_THAT(result.stdout(), HasSubstr("/.git\n2\n"));
  EXPECT_THAT(result.stdout(), HasSubstr("commondir-refused\nconfig-refused\nhooks-refused\n"));
  EXPECT_THAT(result.stdout(), HasSubstr("fds=0 1 2 \n"));
  EXPECT_EQ(host_status_during_call, 0);
  struct stat st;
  EXPECT_NE(::lstat(workspace_.Child(".git/commondir").c_str(), &st), 0) << "mask left behind";
  EXPECT_NE(::lstat(workspace_.Child(".git/hooks/pre-commit").c_str(), &st), 0);
  EXPECT_EQ(HostGit(workspace_.path(), "log -1 --format=%s"), 0);
  EXPECT_EQ(HostGit(workspace_.path(), "rev-parse --verify side"), 0);
  // The sandbox's `git status` was clean and `git add -A` took only the new file: the masks
  // of missing names (.bashrc, .envrc, .mcp.json, …) are empty directories, which git ignores.
  EXPECT_EQ(HostGitOutput(workspace_.path(), "show --name-only --format= HEAD"), "b.txt\n");
  EXPECT_EQ(HostGitOutput(workspace_.path(), "status --porcelain"), "");  // nothing left
}

}  // namespace
}  // namespace airlock::broker
