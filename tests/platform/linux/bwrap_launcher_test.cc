#include "platform/linux/bwrap_launcher.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace airlock::linux_sandbox {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

ShellSandboxLayout BaseLayout() {
  ShellSandboxLayout layout;
  layout.private_tmp = "/run/user/1/airlock/shell-1-a/tmp";
  layout.empty_dir = "/run/user/1/airlock/shell-1-a/empty-dir";
  layout.empty_file = "/run/user/1/airlock/shell-1-a/empty-file";
  layout.cwd = "/w";
  layout.env = {{"PATH", "/usr/bin:/bin"}, {"TMPDIR", "/tmp"}};
  return layout;
}

// Index of the first occurrence of the option triple/pair starting with `flag` and `path`
// (the destination), or -1.
int IndexOf(const std::vector<std::string>& options, const std::string& flag,
            const std::string& destination) {
  for (size_t i = 0; i < options.size(); ++i) {
    if (options[i] != flag) continue;
    const bool two = flag == "--bind" || flag == "--ro-bind";
    const size_t at = i + (two ? 2 : 1);
    if (at < options.size() && options[at] == destination) return static_cast<int>(i);
  }
  return -1;
}

TEST(BwrapLauncherTest, ReadOnlyPresetLayout) {
  ShellSandboxLayout layout = BaseLayout();
  layout.readonly_roots = {"/w"};
  AIRLOCK_ASSERT_OK_AND_ASSIGN(BwrapArgv argv,
                               BuildShellSandboxArgv(layout, {.argv = {"true"}}, "/usr/bin/bash"));
  const auto& o = argv.options;
  for (const char* flag : {"--unshare-user", "--disable-userns", "--unshare-pid",
                           "--unshare-net", "--unshare-ipc", "--unshare-uts", "--new-session",
                           "--die-with-parent", "--clearenv"}) {
    EXPECT_THAT(o, Contains(flag));
  }
  EXPECT_GE(IndexOf(o, "--ro-bind", "/"), 0);
  EXPECT_GE(IndexOf(o, "--dev", "/dev"), 0);
  EXPECT_GE(IndexOf(o, "--proc", "/proc"), 0);
  EXPECT_GE(IndexOf(o, "--bind", "/tmp"), 0);
  EXPECT_GT(IndexOf(o, "--ro-bind", "/w"), IndexOf(o, "--bind", "/tmp"));
  EXPECT_EQ(IndexOf(o, "--bind", "/w"), -1) << "read-only: no writable root";
  EXPECT_THAT(o, Contains("--seccomp"));
  // The preflight runs first, then the command.
  ASSERT_GE(argv.command.size(), 7u);
  EXPECT_THAT(std::vector<std::string>(argv.command.begin(), argv.command.begin() + 4),
              ElementsAre("/usr/bin/bash", "--noprofile", "--norc", "-c"));
  EXPECT_EQ(argv.command[4], PreflightScript(false));
  EXPECT_EQ(argv.command.back(), "true");
}

TEST(BwrapLauncherTest, WorkspaceWriteOrdersParentsBeforeProtection) {
  ShellSandboxLayout layout = BaseLayout();
  layout.writable_roots = {"/w"};
  layout.self_binds = {"/w/sub/.git", "/w/sub"};
  layout.read_only = {"/w/sub/.git/hooks", "/w/.bashrc"};
  layout.masks = {{"/w/.vscode", true}, {"/w/.envrc", false}};
  AIRLOCK_ASSERT_OK_AND_ASSIGN(BwrapArgv argv,
                               BuildShellSandboxArgv(layout, {.argv = {"true"}}, "/usr/bin/bash"));
  const auto& o = argv.options;
  const int root = IndexOf(o, "--bind", "/w");
  // Sources inside the root go by descriptor (a sandbox running meanwhile could swap the
  // directory for a link): "--bind-fd N DEST", descriptor N open on fd_sources[N - 7].
  auto by_fd = [&](const std::string& flag, const std::string& path) {
    for (size_t i = 0; i + 2 < o.size(); ++i) {
      if (o[i] != flag || o[i + 2] != path) continue;
      const size_t source = static_cast<size_t>(std::stoi(o[i + 1]) - kFirstSourceFd);
      EXPECT_LT(source, argv.fd_sources.size());
      if (source < argv.fd_sources.size()) {
        EXPECT_EQ(argv.fd_sources[source], path);
      }
      return static_cast<int>(i);
    }
    return -1;
  };
  const int sub = by_fd("--bind-fd", "/w/sub");
  const int git = by_fd("--bind-fd", "/w/sub/.git");
  const int hooks = by_fd("--ro-bind-fd", "/w/sub/.git/hooks");
  ASSERT_GE(root, 0);
  EXPECT_GT(sub, root);
  EXPECT_GT(git, sub);
  EXPECT_GT(hooks, git);
  EXPECT_GT(by_fd("--ro-bind-fd", "/w/.bashrc"), root);
  EXPECT_EQ(argv.fd_sources.size(), 4u);
  EXPECT_EQ(IndexOf(o, "--bind", "/w/sub"), -1) << "never by path";
  const int vscode = IndexOf(o, "--ro-bind", "/w/.vscode");
  ASSERT_GT(vscode, root);
  EXPECT_EQ(o[vscode + 1], layout.empty_dir);
  const int envrc = IndexOf(o, "--ro-bind", "/w/.envrc");
  ASSERT_GT(envrc, root);
  EXPECT_EQ(o[envrc + 1], layout.empty_file);
  // The private /tmp comes before the roots, so a root under /tmp stays visible.
  EXPECT_LT(IndexOf(o, "--bind", "/tmp"), root);
}

TEST(BwrapLauncherTest, HiddenPathsAreMaskedAfterTheRoots) {
  ShellSandboxLayout layout = BaseLayout();
  layout.writable_roots = {"/w"};
  layout.hidden = {{"/run/user/1/airlock", true},
                   {"/home/u/.airlock/audit.key", false},
                   {"/tmp/airlock-1", true},          // under the private /tmp: already gone
                   {"/dev/shm/airlock-1", true},      // under the fresh /dev: already gone
                   {"/w/secret", true}};
  AIRLOCK_ASSERT_OK_AND_ASSIGN(BwrapArgv argv,
                               BuildShellSandboxArgv(layout, {.argv = {"true"}}, "/usr/bin/bash"));
  const auto& o = argv.options;
  const int root = IndexOf(o, "--bind", "/w");
  EXPECT_GT(IndexOf(o, "--tmpfs", "/run/user/1/airlock"), root);
  EXPECT_GT(IndexOf(o, "--remount-ro", "/run/user/1/airlock"), root);
  const int key = IndexOf(o, "--ro-bind", "/home/u/.airlock/audit.key");
  ASSERT_GE(key, 0);
  EXPECT_EQ(o[key + 1], "/dev/null");
  EXPECT_EQ(IndexOf(o, "--tmpfs", "/tmp/airlock-1"), -1);
  EXPECT_EQ(IndexOf(o, "--tmpfs", "/dev/shm/airlock-1"), -1);
  EXPECT_GT(IndexOf(o, "--tmpfs", "/w/secret"), root);
}

// $AIRLOCK_HOME and the audit log inside it: the log is hidden with its directory, and no
// mount point is asked for inside the directory's empty read-only tmpfs (bwrap would fail).
TEST(BwrapLauncherTest, AHiddenPathBelowAHiddenDirectoryIsNotMountedAgain) {
  ShellSandboxLayout layout = BaseLayout();
  layout.writable_roots = {"/w"};
  layout.hidden = {{"/srv/u/.airlock/audit/s.jsonl", false},
                   {"/srv/u/.airlock", true},
                   {"/srv/u/.airlock/audit", true},
                   {"/srv/u/.airlock-other", false}};
  AIRLOCK_ASSERT_OK_AND_ASSIGN(BwrapArgv argv,
                               BuildShellSandboxArgv(layout, {.argv = {"true"}}, "/usr/bin/bash"));
  const auto& o = argv.options;
  EXPECT_GE(IndexOf(o, "--tmpfs", "/srv/u/.airlock"), 0);
  EXPECT_EQ(IndexOf(o, "--tmpfs", "/srv/u/.airlock/audit"), -1);
  EXPECT_EQ(IndexOf(o, "--ro-bind", "/srv/u/.airlock/audit/s.jsonl"), -1);
  EXPECT_GE(IndexOf(o, "--ro-bind", "/srv/u/.airlock-other"), 0);  // a sibling, not below
}

TEST(BwrapLauncherTest, CommandLookingLikeOptionsStaysAfterTheDoubleDash) {
  ShellSandboxLayout layout = BaseLayout();
  layout.readonly_roots = {"/w"};
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      BwrapArgv argv,
      BuildShellSandboxArgv(layout, {.argv = {"--bind", "/", "/", "sh"}}, "/usr/bin/bash"));
  std::vector<std::string> launcher = argv.LauncherArgv("/usr/bin/bwrap", kArgsFd);
  // bwrap sees exactly: --args FD -- <preflight shell> … --bind / / sh
  ASSERT_GE(launcher.size(), 5u);
  EXPECT_THAT(std::vector<std::string>(launcher.begin(), launcher.begin() + 5),
              ElementsAre("/usr/bin/bwrap", "--args", "4", "--", "/usr/bin/bash"));
  EXPECT_THAT(argv.options, Not(Contains("sh")));
  // The preflight execs its arguments with `exec --`, so they are never shell options.
  EXPECT_THAT(std::string(PreflightScript(false)), HasSubstr("exec -- \"$@\""));
}

TEST(BwrapLauncherTest, ShellLineIsOneArgumentOfThePreflightShell) {
  ShellSandboxLayout layout = BaseLayout();
  layout.readonly_roots = {"/w"};
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      BwrapArgv argv,
      BuildShellSandboxArgv(layout, {.shell_line = "echo $1; --bind / /"}, "/usr/bin/bash"));
  EXPECT_THAT(argv.command, ElementsAre("/usr/bin/bash", "--noprofile", "--norc", "-c",
                                        PreflightScript(true), "bash", "echo $1; --bind / /"));
  // Both, or neither, is an error.
  EXPECT_FALSE(
      BuildShellSandboxArgv(layout, {.argv = {"true"}, .shell_line = "true"}, "/usr/bin/bash")
          .ok());
}

// Runs the preflight script in this (unconfined) process's bash: descriptor 3 is the ready
// pipe, 4 and 5 /dev/null. Returns the wait status; `out`, `err` and `ready` what was written.
int RunPreflightUnconfined(bool shell_line, std::string* out, std::string* err,
                           std::string* ready) {
  int out_pipe[2], err_pipe[2], ready_pipe[2];
  if (::pipe(out_pipe) != 0 || ::pipe(err_pipe) != 0 || ::pipe(ready_pipe) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    ::dup2(ready_pipe[1], 3);
    ::dup2(null, 4);
    ::dup2(null, 5);
    for (int fd = 6; fd < 64; ++fd) ::close(fd);
    if (shell_line) {
      ::execl("/bin/bash", "bash", "--noprofile", "--norc", "-c", PreflightScript(true), "bash",
              "echo the command ran", nullptr);
    } else {
      ::execl("/bin/bash", "bash", "--noprofile", "--norc", "-c", PreflightScript(false),
              "airlock-preflight", "/bin/echo", "the command ran", nullptr);
    }
    ::_exit(127);
  }
  for (int fd : {out_pipe[1], err_pipe[1], ready_pipe[1]}) ::close(fd);
  auto drain = [](int fd, std::string* into) {
    char buffer[4096];
    ssize_t n;
    while ((n = ::read(fd, buffer, sizeof buffer)) > 0) into->append(buffer, n);
    ::close(fd);
  };
  drain(out_pipe[0], out);
  drain(err_pipe[0], err);
  drain(ready_pipe[0], ready);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

// This test process has no seccomp filter (and, as root, capabilities and a writable root):
// the preflight must refuse to run the command, for either form, whoever runs the test.
TEST(BwrapLauncherTest, PreflightRefusesAnUnconfinedShell) {
  if (::access("/bin/bash", X_OK) != 0) GTEST_SKIP() << "no /bin/bash";
  for (bool shell_line : {false, true}) {
    SCOPED_TRACE(shell_line ? "shell line" : "argv");
    std::string out, err, ready;
    const int status = RunPreflightUnconfined(shell_line, &out, &err, &ready);
    ASSERT_TRUE(WIFEXITED(status)) << status;
    EXPECT_EQ(WEXITSTATUS(status), 125);
    EXPECT_THAT(err, HasSubstr("airlock: sandbox preflight failed"));
    EXPECT_EQ(out, "");
    EXPECT_EQ(ready, "");
  }
}

TEST(BwrapLauncherTest, MissingPiecesAreErrors) {
  ShellSandboxLayout layout = BaseLayout();
  EXPECT_FALSE(BuildShellSandboxArgv(layout, {}, "/usr/bin/bash").ok());
  layout.private_tmp.clear();
  EXPECT_FALSE(BuildShellSandboxArgv(layout, {.argv = {"true"}}, "/usr/bin/bash").ok());
  layout = BaseLayout();
  layout.writable_roots = {"relative"};
  EXPECT_FALSE(BuildShellSandboxArgv(layout, {.argv = {"true"}}, "/usr/bin/bash").ok());
}

TEST(BwrapLauncherTest, SystemBwrapIsFoundOnlyInSystemDirectories) {
  absl::StatusOr<std::string> bwrap = FindSystemBwrap();
  if (!bwrap.ok()) GTEST_SKIP() << "no bwrap here: " << bwrap.status();
  EXPECT_TRUE(*bwrap == "/usr/bin/bwrap" || *bwrap == "/bin/bwrap") << *bwrap;
}

}  // namespace
}  // namespace airlock::linux_sandbox
