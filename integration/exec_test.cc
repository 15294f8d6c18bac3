// `airlock exec` end to end with the real bubblewrap, as root and (when root) as uid 65534:
// what a sandboxed command can write, see, reach and keep running, and what happens when the
// sandbox cannot be built.
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/harness.h"
#include "platform/base/scoped_fd.h"
#include "tests/testing/shell_snippets.h"
#include "tests/testing/temp_dir.h"

namespace airlock::integration {
namespace {

using ::airlock::testing::ReadFileOrMissing;
using ::testing::HasSubstr;
using ::testing::Not;

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

class ExecTest : public ::testing::TestWithParam<RunAs> {
 protected:
  void SetUp() override {
    // The sandbox's runtime directory (private temp directories, full-output files) goes
    // into a directory of our own, so the test can see what is left behind.
    runtime_.MakeDir("xdg");
  }

  RunOptions Options(const std::string& airlock_home = "") const {
    RunOptions options;
    options.run_as = GetParam();
    options.cwd = workspace_.path();
    options.env = {absl::StrCat("AIRLOCK_HOME=", airlock_home.empty() ? home_.path() : airlock_home),
                   absl::StrCat("HOME=", home_.path()),
                   absl::StrCat("XDG_RUNTIME_DIR=", runtime_.Child("xdg"))};
    return options;
  }

  // `airlock exec --workspace W [extra] -- bash -c SCRIPT`
  CommandResult Exec(const std::string& script, std::vector<std::string> extra = {},
                     RunOptions options = RunOptions()) {
    if (options.cwd.empty()) options = Options();
    std::vector<std::string> args = {"exec", "--workspace", workspace_.path()};
    args.insert(args.end(), extra.begin(), extra.end());
    for (const std::string& a : {std::string("--"), std::string("/bin/bash"),
                                 std::string("-c"), script}) {
      args.push_back(a);
    }
    return RunAirlock(args, options);
  }
  CommandResult ExecWrite(const std::string& script, std::vector<std::string> extra = {}) {
    extra.insert(extra.begin(), {"--preset", "workspace-write"});
    return Exec(script, extra);
  }

  std::vector<std::string> LeftoverCallDirs() const {
    std::vector<std::string> left;
    for (const std::string& name : testing::SortedNames(runtime_.Child("xdg/airlock"))) {
      if (name.rfind("shell-", 0) == 0) left.push_back(name);
    }
    return left;
  }

  Scratch workspace_{GetParam()};
  Scratch outside_{GetParam()};
  Scratch home_{GetParam()};
  Scratch runtime_{GetParam()};
};

TEST_P(ExecTest, WritingInsideTheWorkspaceWorksUnderWorkspaceWrite) {
  CommandResult result = ExecWrite("mkdir -p sub && echo inside > sub/f");
  ASSERT_EQ(result.exit_code, 0) << result;
  EXPECT_EQ(ReadFileOrMissing(workspace_.Child("sub/f")), "inside\n");
}

TEST_P(ExecTest, WritesOutsideThroughLinksAndFromDescendantsFail) {
  ASSERT_EQ(::symlink(outside_.path().c_str(), workspace_.Child("link").c_str()), 0);
  if (GetParam() == RunAs::kUnprivileged) {
    ASSERT_EQ(::lchown(workspace_.Child("link").c_str(), kUnprivilegedUid, kUnprivilegedGid), 0);
  }
  const std::string out = outside_.path();
  CommandResult result = ExecWrite(absl::StrCat(
      "echo x > ", out, "/direct; echo x > /etc/airlock-escape; echo x > link/via-link;",
      "(bash -c 'echo x > ", out, "/grandchild') & wait;",
      "sh -c 'sh -c \"echo x > ", out, "/nested\"'; echo done"));
  EXPECT_THAT(result.out, HasSubstr("done")) << result;
  EXPECT_THAT(testing::SortedNames(out), ::testing::IsEmpty());
  EXPECT_FALSE(Exists("/etc/airlock-escape"));
}

TEST_P(ExecTest, ReadOnlyBlocksWorkspaceWrites) {
  workspace_.Write("existing", "old");
  CommandResult result = Exec("echo new > existing; touch created; echo status=$?");
  EXPECT_THAT(result.out, HasSubstr("status=1")) << result;
  EXPECT_EQ(ReadFileOrMissing(workspace_.Child("existing")), "old");
  EXPECT_FALSE(Exists(workspace_.Child("created")));
}

TEST_P(ExecTest, ProtectedAndExplicitlyProtectedPathsAreReadOnly) {
  workspace_.Write(".git/hooks/pre-commit", "original hook");
  workspace_.Write(".git/config", "[core]\n");
  workspace_.Write(".bashrc", "original rc");
  workspace_.Write("nested/repo/.git/hooks/post-checkout", "nested hook");
  workspace_.Write("secret/data", "keep");
  CommandResult result = ExecWrite(
      "echo evil > .git/hooks/pre-commit; echo evil >> .git/config; echo evil > .bashrc;"
      "echo evil > nested/repo/.git/hooks/post-checkout; echo evil > secret/data;"
      "rm -rf .git/hooks nested/repo/.git/hooks; touch .git/hooks/new; echo ok > free",
      {"--protect", workspace_.Child("secret")});
  ASSERT_EQ(result.exit_code, 0) << result;
  EXPECT_EQ(ReadFileOrMissing(workspace_.Child(".git/hooks/pre-commit")), "original hook");
  EXPECT_EQ(ReadFileOrMissing(workspace_.Child(".git/config")), "[core]\n");
  EXPECT_EQ(ReadFileOrMissing(workspace_.Child(".bashrc")), "original rc");
  EXPECT_EQ(ReadFileOrMissing(workspace_.Child("nested/repo/.git/hooks/post-checkout")),
            "nested hook");
  EXPECT_EQ(ReadFileOrMissing(workspace_.Child("secret/data")), "keep");
  EXPECT_FALSE(Exists(workspace_.Child(".git/hooks/new")));
  EXPECT_EQ(ReadFileOrMissing(workspace_.Child("free")), "ok\n");
}

TEST_P(ExecTest, MissingGitCannotBeCreatedAndNothingIsLeftBehind) {
  workspace_.Write("README", "r");
  const std::vector<std::string> before = testing::SortedNames(workspace_.path());
  CommandResult result = ExecWrite(
      "git init -q . 2>/dev/null; mkdir -p .git/hooks 2>/dev/null; echo x > .envrc;"
      "echo x > .vscode/settings.json; mkdir .claude/x; ls -a | tr '\\n' ' '; echo; echo ran");
  ASSERT_EQ(result.exit_code, 0) << result;
  EXPECT_THAT(result.out, HasSubstr("ran"));
  EXPECT_EQ(testing::SortedNames(workspace_.path()), before) << result;
}

TEST_P(ExecTest, MovingGitAsideAndRecreatingHooksChangesNothing) {
  workspace_.Write(".git/hooks/pre-commit", "original hook");
  workspace_.Write(".git/HEAD", "ref: refs/heads/main\n");
  CommandResult result = ExecWrite(
      "mv .git moved 2>/dev/null; mv .git/hooks .git/h2 2>/dev/null; rm -rf .git 2>/dev/null;"
      "mkdir -p .git/hooks 2>/dev/null; echo evil > .git/hooks/pre-commit 2>/dev/null;"
      "echo ran");
  EXPECT_THAT(result.out, HasSubstr("ran")) << result;
  EXPECT_EQ(ReadFileOrMissing(workspace_.Child(".git/hooks/pre-commit")), "original hook");
  EXPECT_FALSE(Exists(workspace_.Child("moved")));
  EXPECT_FALSE(Exists(workspace_.Child(".git/h2")));
}

// $AIRLOCK_HOME (sessions and audit logs hold what earlier agents saw, and the key) is hidden
// from the command, as from `airlock run`'s shells, wherever it is (here outside /tmp, which
// the private /tmp would hide anyway).
TEST_P(ExecTest, TheAirlockHomeIsHiddenFromTheCommand) {
  Scratch outside_tmp(GetParam(), "/var/tmp");
  outside_tmp.Write("airlock/sessions/s.jsonl", "what an agent saw");
  CommandResult result = Exec(
      absl::StrCat("ls -A ", outside_tmp.Child("airlock"), "; echo listed; cat ",
                   outside_tmp.Child("airlock/sessions/s.jsonl"), " || echo unreadable"),
      {}, Options(outside_tmp.Child("airlock")));
  ASSERT_EQ(result.exit_code, 0) << result;
  EXPECT_EQ(result.out, "listed\nunreadable\n") << result;
}

TEST_P(ExecTest, TmpdirIsPrivateWritablePerCallAndRemoved) {
  CommandResult first = Exec(
      "echo \"$TMPDIR $TMP $TEMP\"; echo secret > \"$TMPDIR/marker\" && cat \"$TMPDIR/marker\";"
      "ls -A /tmp | grep -v '^airlock-it-' | tr '\\n' ' '; echo");
  ASSERT_EQ(first.exit_code, 0) << first;
  EXPECT_THAT(first.out, HasSubstr("/tmp /tmp /tmp\nsecret\n"));
  // The host's /tmp is not visible (only the workspace's mount point below it).
  EXPECT_THAT(first.out, HasSubstr("marker \n"));
  CommandResult second = Exec("ls -A \"$TMPDIR\" | grep -v '^airlock-it-' | wc -l");
  ASSERT_EQ(second.exit_code, 0) << second;
  EXPECT_EQ(second.out, "0\n") << "a new, empty temp directory per call";
  EXPECT_THAT(LeftoverCallDirs(), ::testing::IsEmpty());
  CommandResult timed_out = Exec("echo x > \"$TMPDIR/f\"; sleep 30", {"--timeout", "1"});
  EXPECT_EQ(timed_out.exit_code, 124) << timed_out;
  EXPECT_THAT(LeftoverCallDirs(), ::testing::IsEmpty());
}

TEST_P(ExecTest, HostLoopbackAndHostUnixSocketsAreUnreachable) {
  ScopedFd tcp(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(tcp.valid());
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(tcp.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(::listen(tcp.get(), 4), 0);
  socklen_t length = sizeof(address);
  ASSERT_EQ(::getsockname(tcp.get(), reinterpret_cast<sockaddr*>(&address), &length), 0);
  const int port = ntohs(address.sin_port);

  // A host socket inside the workspace, so the sandbox can see the path.
  const std::string socket_path = workspace_.Child("host.sock");
  ScopedFd unix_socket(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un unix_address{};
  unix_address.sun_family = AF_UNIX;
  ASSERT_LT(socket_path.size(), sizeof(unix_address.sun_path));
  memcpy(unix_address.sun_path, socket_path.c_str(), socket_path.size() + 1);
  ASSERT_EQ(::bind(unix_socket.get(), reinterpret_cast<sockaddr*>(&unix_address),
                   sizeof(unix_address)), 0);
  ASSERT_EQ(::listen(unix_socket.get(), 4), 0);
  ::chmod(socket_path.c_str(), 0777);

  // The harness's control: the host itself can connect.
  CommandResult control = RunCommand(
      {"/bin/bash", "-c", absl::StrCat("echo hi > /dev/tcp/127.0.0.1/", port, " && echo up")},
      Options());
  ASSERT_THAT(control.out, HasSubstr("up")) << control;

  CommandResult result = Exec(absl::StrCat(
      "echo hi > /dev/tcp/127.0.0.1/", port, " && echo tcp-reached;",
      "/usr/bin/python3 -c 'import socket; s = socket.socket(socket.AF_UNIX);"
      " s.connect(\"", socket_path, "\"); print(\"unix-reached\")' 2>&1;",
      "/usr/bin/python3 -c 'import socket; a, b = socket.socketpair(); a.send(b\"p\");"
      " print(\"pair\", b.recv(1))'"));
  EXPECT_THAT(result.out, Not(HasSubstr("tcp-reached"))) << result;
  EXPECT_THAT(result.out, Not(HasSubstr("unix-reached"))) << result;
  EXPECT_THAT(result.out, HasSubstr("PermissionError")) << result;
  EXPECT_THAT(result.out, HasSubstr("pair b'p'")) << result;
}

TEST_P(ExecTest, OnlyAllowlistedEnvironmentVariablesAreVisible) {
  RunOptions options = Options();
  options.env.push_back("SECRET_TOKEN=hunter2");
  options.env.push_back("LD_PRELOAD=/nonexistent.so");
  options.env.push_back("BASH_ENV=/nonexistent");
  options.env.push_back("TZ=UTC");
  CommandResult result = Exec("env | cut -d= -f1 | sort | tr '\\n' ' '", {}, options);
  ASSERT_EQ(result.exit_code, 0) << result;
  const std::set<std::string> allowed = {"PATH", "HOME", "LANG", "LC_ALL", "TERM",  "TZ",
                                         "TMPDIR", "TMP", "TEMP", "PWD", "SHLVL", "_"};
  for (absl::string_view name : absl::StrSplit(result.out, ' ', absl::SkipWhitespace())) {
    EXPECT_TRUE(allowed.count(std::string(name)) != 0) << "visible: " << name;
  }
  EXPECT_THAT(result.out, HasSubstr("TZ "));
  EXPECT_THAT(result.out, Not(HasSubstr("SECRET_TOKEN")));
}

TEST_P(ExecTest, NoCapabilitiesNoNewPrivilegesSeccompAndOnlyThreeDescriptors) {
  CommandResult result = Exec(
      absl::StrCat("grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status | tr -d '\\t';",
                   airlock::testing::kPrintInheritedDescriptors));
  ASSERT_EQ(result.exit_code, 0) << result;
  EXPECT_THAT(result.out, HasSubstr("CapEff:0000000000000000\n"));
  EXPECT_THAT(result.out, HasSubstr("NoNewPrivs:1\n"));
  EXPECT_THAT(result.out, HasSubstr("Seccomp:2\n"));
  EXPECT_THAT(result.out, HasSubstr("\nfds=0 1 2 \n"));
}

TEST_P(ExecTest, PtraceMountUsernsIoUringAndTiocstiAreRefused) {
  CommandResult result = Exec(
      "mount -t tmpfs none /mnt 2>/dev/null && echo mount-worked;"
      "unshare -U true 2>/dev/null && echo userns-worked;"
      "unshare -r true 2>/dev/null && echo userns-root-worked;"
      "/usr/bin/python3 - <<'EOF'\n"
      "import ctypes, fcntl, os, termios\n"
      "libc = ctypes.CDLL(None, use_errno=True)\n"
      "def check(name, result):\n"
      "    print(name, 'EPERM' if result == -1 and ctypes.get_errno() == 1 else 'ALLOWED')\n"
      "check('ptrace', libc.ptrace(0, 0, 0, 0))\n"
      "check('io_uring', libc.syscall(425, 1, ctypes.create_string_buffer(120)))\n"
      "try:\n"
      "    fcntl.ioctl(0, termios.TIOCSTI, b'x'); print('tiocsti ALLOWED')\n"
      "except OSError as e:\n"
      "    print('tiocsti', 'EPERM' if e.errno == 1 else e.errno)\n"
      "EOF");
  ASSERT_EQ(result.exit_code, 0) << result;
  EXPECT_THAT(result.out, Not(HasSubstr("worked"))) << result;
  EXPECT_THAT(result.out, HasSubstr("ptrace EPERM"));
  EXPECT_THAT(result.out, HasSubstr("io_uring EPERM"));
  EXPECT_THAT(result.out, HasSubstr("tiocsti EPERM"));
}

TEST_P(ExecTest, ExitStatusPropagates) {
  EXPECT_EQ(Exec("exit 42").exit_code, 42);
  CommandResult killed = Exec("kill -TERM $$");
  EXPECT_EQ(killed.exit_code, 128 + 15) << killed;
  EXPECT_THAT(killed.err, HasSubstr("preset read-only"));
  EXPECT_EQ(Exec("true").exit_code, 0);
}

TEST_P(ExecTest, TimeoutKillsGrandchildren) {
  CommandResult result = ExecWrite(
      "(bash -c 'while true; do date +%s%N > tick; sleep 0.05; done' &) ; sleep 30",
      {"--timeout", "3"});
  EXPECT_EQ(result.exit_code, 124) << result;
  ASSERT_TRUE(Exists(workspace_.Child("tick")));
  const std::string first = ReadFileOrMissing(workspace_.Child("tick"));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(ReadFileOrMissing(workspace_.Child("tick")), first) << "a grandchild survived";
}

TEST_P(ExecTest, BackgroundJobsDoNotOutliveTheCall) {
  CommandResult result = ExecWrite(
      "(bash -c 'sleep 2; echo late > late' &); setsid bash -c 'sleep 2; echo late2 > late2' &"
      " echo started");
  ASSERT_EQ(result.exit_code, 0) << result;
  std::this_thread::sleep_for(std::chrono::milliseconds(3000));
  EXPECT_FALSE(Exists(workspace_.Child("late")));
  EXPECT_FALSE(Exists(workspace_.Child("late2")));
}

TEST_P(ExecTest, UserCommandIsNeverABwrapOption) {
  CommandResult result = RunAirlock({"exec", "--workspace", workspace_.path(), "--", "--bind",
                                     "/", "/", "sh", "-c", "echo escaped"},
                                    Options());
  EXPECT_EQ(result.exit_code, 127) << result;
  EXPECT_THAT(result.out, Not(HasSubstr("escaped")));
  EXPECT_THAT(result.err, HasSubstr("airlock: --bind: command not found"));
}

TEST_P(ExecTest, BwrapEarlierOnPathIsIgnored) {
  const std::string marker = outside_.Child("fake-bwrap-ran");
  outside_.Write("bin/bwrap", absl::StrCat("#!/bin/sh\ntouch ", marker, "\nexec \"$@\"\n"));
  ::chmod(outside_.Child("bin/bwrap").c_str(), 0755);
  RunOptions options = Options();
  options.env.push_back(absl::StrCat("PATH=", outside_.Child("bin"), ":/usr/bin:/bin"));
  CommandResult result = Exec("grep -c . /proc/self/status >/dev/null; echo sandboxed", {},
                              options);
  EXPECT_EQ(result.exit_code, 0) << result;
  EXPECT_FALSE(Exists(marker));
}

TEST_P(ExecTest, AuditKeyIsUnreadableInside) {
  // A home inside the workspace, so the sandbox could otherwise see it.
  workspace_.Write("home/audit.key", "TOPSECRETKEY");
  RunOptions options = Options(workspace_.Child("home"));
  CommandResult result =
      Exec("cat home/audit.key; echo; echo x > home/new 2>/dev/null; echo done", {}, options);
  EXPECT_THAT(result.out, Not(HasSubstr("TOPSECRETKEY"))) << result;
  EXPECT_THAT(result.out, HasSubstr("done"));
}

// XDG_RUNTIME_DIR naming another user's directory (what `su` leaves) or a missing one: the
// runtime directory falls back (README) instead of refusing or landing where the sandbox
// cannot reach it; nothing is created in the other user's directory.
TEST_P(ExecTest, UnusableXdgRuntimeDirFallsBack) {
  // Another user's private directory: root's when we run unprivileged, 65534's as root.
  const RunAs other = GetParam() == RunAs::kUnprivileged ? RunAs::kCurrentUser
                                                         : RunAs::kUnprivileged;
  if (::geteuid() != 0) GTEST_SKIP() << "making another user's directory needs root";
  Scratch foreign(other);
  ASSERT_EQ(::chmod(foreign.path().c_str(), 0700), 0);
  for (const std::string& xdg : {foreign.path(), runtime_.Child("missing")}) {
    SCOPED_TRACE(xdg);
    RunOptions options = Options();
    options.env.back() = absl::StrCat("XDG_RUNTIME_DIR=", xdg);
    CommandResult result = Exec("echo x > \"$TMPDIR/f\" && echo ran", {}, options);
    EXPECT_EQ(result.exit_code, 0) << result;
    EXPECT_EQ(result.out, "ran\n");
  }
  EXPECT_THAT(testing::SortedNames(foreign.path()), ::testing::IsEmpty());
  EXPECT_FALSE(Exists(runtime_.Child("missing")));
}

// SPEC §6: output past the limit is kept whole in a host-owned file whose path the result
// gives — a file the agent can page through with the read tool (it is not broker state), and
// that goes with the broker.
TEST_P(ExecTest, FullOutputIsReadableThroughTheReadToolAndRemovedAtExit) {
  const std::string binary = AirlockBinary(GetParam());
  RunOptions options = Options();
  options.env.push_back(
      absl::StrCat("PATH=", binary.substr(0, binary.rfind('/')), ":/usr/bin:/bin"));
  const std::string script =
      "out=$(airlock tool bash --command \"head -c 300000 /dev/zero | tr '\\\\0' a; echo END\");"
      "p=$(echo \"$out\" | grep -o '\"full_output\":\"[^\"]*\"' | cut -d'\"' -f4);"
      "echo \"path=$p\"; airlock tool read \"$p\" --offset 299995 --limit 100";
  CommandResult result =
      RunAirlock({"run", "--workspace", workspace_.path(), "--preset", "workspace-write", "--mode",
                  "on-request", "--", "/bin/sh", "-c", script},
                 options);
  ASSERT_EQ(result.exit_code, 0) << result;
  const std::string output_dir = runtime_.Child("xdg/airlock-output");
  EXPECT_THAT(result.out, HasSubstr(absl::StrCat("path=", output_dir, "/output-"))) << result;
  EXPECT_THAT(result.out, HasSubstr("\"ok\":true")) << result;
  EXPECT_THAT(result.out, HasSubstr("\"content\":\"aaaaaEND\\n\"")) << result;
  EXPECT_THAT(result.out, Not(HasSubstr("PROTECTED_PATH"))) << result;
  EXPECT_THAT(testing::SortedNames(output_dir), ::testing::IsEmpty()) << "the broker removes its files";
}

// SPEC §10: command line > settings.json > read-only, for `airlock exec` as for `airlock run`.
TEST_P(ExecTest, SettingsPresetAndProtectApplyUnlessTheCommandLineSaysOtherwise) {
  home_.Write("settings.json",
              R"({"permissionPreset": "workspace-write", "protect": ["secret"]})");
  workspace_.Write("secret/data", "keep");
  CommandResult result = Exec("echo x > f && echo wrote; echo evil > secret/data");
  EXPECT_THAT(result.out, HasSubstr("wrote")) << result;
  EXPECT_EQ(ReadFileOrMissing(workspace_.Child("f")), "x\n");
  EXPECT_EQ(ReadFileOrMissing(workspace_.Child("secret/data")), "keep");

  CommandResult read_only = Exec("echo y > g; echo status=$?", {"--preset", "read-only"});
  EXPECT_THAT(read_only.out, HasSubstr("status=1")) << read_only;
  EXPECT_FALSE(Exists(workspace_.Child("g")));
}

TEST_P(ExecTest, InvalidSettingsRefuseToRunAnything) {
  const struct {
    const char* json;
    const char* field;
  } cases[] = {
      {R"({"permissionPreset": "everything"})", "permissionPreset"},
      {R"({"permissionPreset": "workspace-write", "bogusField": 1})", "bogusField"},
      {R"({"protect": "secret"})", "protect"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.json);
    home_.Write("settings.json", c.json);
    CommandResult result = Exec("touch ran", {"--preset", "workspace-write"});
    EXPECT_EQ(result.exit_code, 125) << result;
    EXPECT_THAT(result.err, HasSubstr("settings.json")) << result;
    EXPECT_THAT(result.err, HasSubstr(c.field)) << result;
    EXPECT_FALSE(Exists(workspace_.Child("ran")));
  }
}

INSTANTIATE_TEST_SUITE_P(Identities, ExecTest, ::testing::ValuesIn(IdentitiesToTest()),
                         RunAsName);

// Root only: a private mount namespace in which both system bwrap paths are masked.
TEST(ExecUnavailableTest, MaskedBwrapExits125AndNothingRuns) {
  if (::geteuid() != 0) GTEST_SKIP() << "masking /usr/bin/bwrap needs root (unshare -m)";
  Scratch workspace(RunAs::kCurrentUser);
  const std::string marker = workspace.Child("ran");
  const std::string script = absl::StrCat(
      "mount --bind /dev/null /usr/bin/bwrap && "
      "{ [ -L /bin ] || mount --bind /dev/null /bin/bwrap; } && cd ", workspace.path(), " && exec ",
      AirlockBinary(RunAs::kCurrentUser), " exec --workspace ", workspace.path(),
      " --preset workspace-write -- touch ", marker);
  CommandResult result = RunCommand({"/usr/bin/unshare", "-m", "/bin/sh", "-c", script}, {});
  EXPECT_EQ(result.exit_code, 125) << result;
  EXPECT_THAT(result.err, HasSubstr("bwrap"));
  EXPECT_FALSE(Exists(marker));
}

}  // namespace
}  // namespace airlock::integration
