// `airlock run` end to end: the worker's processes open their own channels, the broker serves
// many at once, hostile channels lose only themselves, and the worker dies with the broker.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/harness.h"
#include "tests/testing/temp_dir.h"

namespace airlock::integration {
namespace {

using ::testing::HasSubstr;

class RunTest : public ::testing::TestWithParam<RunAs> {
 protected:
  RunOptions Options() const {
    RunOptions options;
    options.run_as = GetParam();
    options.env = {absl::StrCat("AIRLOCK_HOME=", home_.path()), absl::StrCat("HOME=", home_.path())};
    return options;
  }
  // `airlock run --workspace W -- sh -c SCRIPT` with `airlock` on the worker's PATH.
  CommandResult RunScript(const std::string& script) {
    const std::string binary = AirlockBinary(GetParam());
    const std::string dir = binary.substr(0, binary.rfind('/'));
    RunOptions options = Options();
    options.env.push_back(absl::StrCat("PATH=", dir, ":/usr/bin:/bin"));
    return RunAirlock({"run", "--workspace", workspace_.path(), "--", "/bin/sh", "-c", script},
                      options);
  }

  // The same with options before `--`.
  CommandResult RunScriptWith(const std::vector<std::string>& run_options,
                              const std::string& script) {
    const std::string binary = AirlockBinary(GetParam());
    RunOptions options = Options();
    options.env.push_back(absl::StrCat("PATH=", binary.substr(0, binary.rfind('/')), ":/usr/bin:/bin"));
    std::vector<std::string> argv = {"run", "--workspace", workspace_.path()};
    argv.insert(argv.end(), run_options.begin(), run_options.end());
    argv.insert(argv.end(), {"--", "/bin/sh", "-c", script});
    return RunAirlock(argv, options);
  }

  Scratch workspace_{GetParam()};
  Scratch home_{GetParam()};
};

TEST_P(RunTest, ExitsWithTheWorkersStatus) {
  CommandResult result = RunScript("exit 3");
  EXPECT_EQ(result.exit_code, 3) << result;
  EXPECT_THAT(result.err, HasSubstr("airlock: session "));
}

TEST_P(RunTest, ConcurrentToolCallsFromOneWorkerTreeAreServed) {
  workspace_.Write("a", "content of a");
  workspace_.Write("b", "content of b");
  // The worker cannot write the workspace once confined, so collect through its own stdout.
  CommandResult direct = RunScript(
      "(airlock tool read a & airlock tool read b & wait) | sort");
  ASSERT_EQ(direct.exit_code, 0) << direct;
  EXPECT_THAT(direct.out, HasSubstr("\"content\":\"content of a\""));
  EXPECT_THAT(direct.out, HasSubstr("\"content\":\"content of b\""));
}

TEST_P(RunTest, ThirtyTwoConcurrentClientsAreAllAnswered) {
  workspace_.Write("f", "x");
  CommandResult result = RunScript(
      "i=0; while [ $i -lt 32 ]; do airlock tool read f & i=$((i+1)); done; wait");
  ASSERT_EQ(result.exit_code, 0) << result;
  size_t answers = 0;
  for (size_t at = result.out.find("\"ok\":true"); at != std::string::npos;
       at = result.out.find("\"ok\":true", at + 1)) {
    ++answers;
  }
  EXPECT_EQ(answers, 32u) << result;
}

TEST_P(RunTest, ListAndReadThroughTheBroker) {
  workspace_.Write("dir/one.txt", "1");
  // A name that is not UTF-8 is listed escaped, not a failure of the whole listing.
  workspace_.Write("dir/two\xff.txt", "2");
  CommandResult result = RunScript(
      "airlock tool ls dir && airlock tool read dir/one.txt && "
      "{ airlock tool read \"$(printf 'dir/two\\377.txt')\"; echo \"status=$?\"; }");
  ASSERT_EQ(result.exit_code, 0) << result;
  EXPECT_THAT(result.out, HasSubstr("\"name\":\"one.txt\""));
  EXPECT_THAT(result.out, HasSubstr("\"name\":\"two\\\\xff.txt\""));
  EXPECT_THAT(result.out, HasSubstr("\"content\":\"1\""));
  // Such a name cannot be asked for: the protocol carries paths as text; the client says so.
  EXPECT_THAT(result.out, HasSubstr("request.read.path is not UTF-8 text"));
  EXPECT_THAT(result.out, HasSubstr("status=2"));
}

// The default $AIRLOCK_HOME ($HOME/.airlock) outside /tmp, where the shell sandbox must hide
// it (and the audit log and key inside it) itself rather than rely on the private /tmp.
TEST_P(RunTest, AShellRunsWithTheDefaultAirlockHomeHiddenFromIt) {
  Scratch user_home(GetParam(), "/var/tmp");
  const std::string binary = AirlockBinary(GetParam());
  RunOptions options;
  options.run_as = GetParam();
  options.env = {absl::StrCat("HOME=", user_home.path()),
                 absl::StrCat("PATH=", binary.substr(0, binary.rfind('/')), ":/usr/bin:/bin")};
  const std::string home = user_home.Child(".airlock");
  CommandResult result = RunAirlock(
      {"run", "--workspace", workspace_.path(), "--preset", "workspace-write", "--mode",
       "on-request", "--", "/bin/sh", "-c",
       absl::StrCat("airlock tool bash --command 'ls -A ", home, "; echo listed; cat ", home,
                    "/audit/*.jsonl; echo status=$?'")},
      options);
  ASSERT_EQ(result.exit_code, 0) << result;
  EXPECT_THAT(result.out, HasSubstr("\"stdout\":\"listed\\nstatus=1\\n\"")) << result;
  // What was hidden is there on the host: the listing was empty because it was hidden.
  EXPECT_NE(testing::ReadFileOrMissing(home + "/audit.key"), "<missing>");
}

// Broker state reached through links or relative paths is hidden all the same, and a
// --protect path given through a link or relative to the workspace protects in the shell
// as it does for the file tools.
TEST_P(RunTest, LinkedAndRelativePathsProtectAndHideWhatTheyName) {
  Scratch base(GetParam(), "/var/tmp");
  base.MakeDir("home");
  base.MakeDir("ws/secrets");
  base.Write("ws/secrets/api.key", "original");
  ASSERT_EQ(::symlink(base.Child("home").c_str(), base.Child("home-link").c_str()), 0);
  ASSERT_EQ(::symlink(base.Child("ws").c_str(), base.Child("ws-link").c_str()), 0);
  const std::string binary = AirlockBinary(GetParam());
  RunOptions options;
  options.run_as = GetParam();
  options.env = {absl::StrCat("HOME=", base.Child("home-link")),
                 absl::StrCat("PATH=", binary.substr(0, binary.rfind('/')), ":/usr/bin:/bin")};
  CommandResult result = RunAirlock(
      {"run", "--workspace", base.Child("ws-link"), "--preset", "workspace-write", "--mode",
       "on-request", "--protect", "secrets", "--protect", base.Child("ws-link/more"), "--",
       "/bin/sh", "-c",
       absl::StrCat("airlock tool bash --command 'echo stolen > secrets/api.key; mkdir more; "
                    "ls -A ", base.Child("home/.airlock"), "; echo listed'")}, options);
  ASSERT_EQ(result.exit_code, 0) << result;
  EXPECT_THAT(result.out, HasSubstr("\"stdout\":\"listed\\n\"")) << result;
  EXPECT_EQ(testing::ReadFileOrMissing(base.Child("ws/secrets/api.key")), "original");
  struct stat st;
  EXPECT_NE(::stat(base.Child("ws/more").c_str(), &st), 0)
      << "a missing --protect path stays uncreatable";
}

// The approval socket's directory is broker state: a shell allowed Unix sockets must not reach
// it, or it could answer its own approvals.
TEST_P(RunTest, TheApprovalSocketIsHiddenFromShellsAllowedUnixSockets) {
  Scratch sockets(GetParam(), "/var/tmp");
  const std::string socket = sockets.Child("approve/a.sock");
  CommandResult result = RunScriptWith(
      {"--preset", "workspace-write", "--mode", "on-request", "--allow-unix-sockets",
       "--approver", "socket:" + socket},
      absl::StrCat("airlock tool bash --command 'test -e ", socket,
                   " && echo visible || echo hidden'"));
  ASSERT_EQ(result.exit_code, 0) << result;
  EXPECT_THAT(result.out, HasSubstr("\"stdout\":\"hidden\\n\"")) << result;
}

// A workspace under /dev would not exist in the worker's fresh /dev: refused at start, clearly.
TEST_P(RunTest, AWorkspaceUnderDevIsRefusedAtStart) {
  Scratch shm(GetParam(), "/dev/shm");
  RunOptions options = Options();
  CommandResult result =
      RunAirlock({"run", "--workspace", shm.path(), "--", "/bin/true"}, options);
  EXPECT_EQ(result.exit_code, 125) << result;
  EXPECT_THAT(result.err, HasSubstr("lies under /dev"));
}

// Usage errors exit 64 and say what was wrong.
TEST_P(RunTest, UnknownCommandsAndBadTimeoutsAreNamed) {
  CommandResult bogus = RunAirlock({"bogus"}, Options());
  EXPECT_EQ(bogus.exit_code, 64) << bogus;
  EXPECT_THAT(bogus.err, HasSubstr("unknown command 'bogus'"));
  CommandResult zero = RunAirlock({"run", "--approval-timeout", "0", "--", "/bin/true"}, Options());
  EXPECT_EQ(zero.exit_code, 64) << zero;
  EXPECT_THAT(zero.err, HasSubstr("number of seconds above 0"));
}

// Reads outside the roots are allowed by default (SPEC §1); writes are not.
TEST_P(RunTest, WriteOutsideTheWorkspaceIsRefusedWithExit3) {
  CommandResult result =
      RunScript("echo x | airlock tool write /proc/airlock-probe; echo \"status=$?\"");
  EXPECT_THAT(result.out, HasSubstr("\"code\":\"OUTSIDE_SANDBOX\"")) << result;
  EXPECT_THAT(result.out, HasSubstr("status=3"));
}

TEST_P(RunTest, ToolOutsideAirlockRunFailsClearly) {
  CommandResult result = RunAirlock({"tool", "read", "x"}, Options());
  EXPECT_EQ(result.exit_code, 2) << result;
  EXPECT_THAT(result.out, HasSubstr("AIRLOCK_FD is not set"));
  CommandResult mcp = RunAirlock({"mcp"}, Options());
  EXPECT_EQ(mcp.exit_code, 2) << mcp;
  EXPECT_THAT(mcp.err, HasSubstr("airlock mcp: cannot reach the broker: AIRLOCK_FD is not set"));
  EXPECT_EQ(mcp.out, "");
}

// A client that sends garbage, an oversized length, or no hello loses its own channel; a
// well-behaved client in the same worker keeps being served.
TEST_P(RunTest, HostileChannelsLoseOnlyThemselves) {
  workspace_.Write("f", "still served");
  const std::string script = R"PY(
import os, socket, struct, subprocess, sys
connector = int(os.environ["AIRLOCK_FD"])
def channel():
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    socket.socket(fileno=os.dup(connector)).sendmsg([b"C"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", theirs.fileno()))])
    theirs.close()
    return ours
def closed(s):
    s.settimeout(10)
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return data
        data += chunk
garbage = channel(); garbage.sendall(b"\x05\x00\x00\x00\xff\xff\xff\xff\xff")
huge = channel(); huge.sendall(struct.pack("<I", 0xFFFFFFFF))
nohello = channel(); nohello.sendall(b"\x00\x00\x00\x00")
for name, s in (("garbage", garbage), ("huge", huge), ("nohello", nohello)):
    print(name, "closed", b"protocol error" in closed(s))
out = subprocess.run(["airlock", "tool", "read", "f"], capture_output=True, text=True, pass_fds=(connector,)).stdout
print("good", out.strip())
)PY";
  CommandResult result = RunScript("python3 -c '" + script + "'");
  ASSERT_EQ(result.exit_code, 0) << result;
  EXPECT_THAT(result.out, HasSubstr("garbage closed True"));
  EXPECT_THAT(result.out, HasSubstr("huge closed True"));
  EXPECT_THAT(result.out, HasSubstr("nohello closed True"));
  EXPECT_THAT(result.out, HasSubstr("\"content\":\"still served\""));
}

TEST_P(RunTest, KillingTheBrokerLeavesNoWorkerBehind) {
  // The confined worker can neither write a pid file nor see host pids, so it is found by a
  // marker that only its python3 carries verbatim (the shells build it from two pieces; the
  // pgrep pattern does not match itself).
  const std::string suffix = absl::StrCat("-marker-", ::getpid(), "-", static_cast<int>(GetParam()));
  const std::string pattern = absl::StrCat("[a]irlock-orphan", suffix);
  RunOptions options = Options();
  options.timeout_seconds = 20;
  const std::string binary = AirlockBinary(GetParam());
  // Run the broker in the background through a shell so the test can SIGKILL it.
  CommandResult result = RunCommand(
      {"/bin/sh", "-c",
       absl::StrCat(binary, " run --workspace ", workspace_.path(),
                    " -- /bin/sh -c 'm=airlock-orphan; exec python3 -c "
                    "\"import time; time.sleep(300)\" \"$m", suffix, "\"' & broker=$!; "
                    "for i in $(seq 200); do pgrep -f ", pattern,
                    " >/dev/null && break; sleep 0.05; done; "
                    "pgrep -f ", pattern, " >/dev/null && echo worker-started; "
                    "kill -KILL $broker; "
                    "for i in $(seq 100); do pgrep -f ", pattern,
                    " >/dev/null || break; sleep 0.05; done; "
                    "if pgrep -f ", pattern, " >/dev/null; then echo worker-alive; "
                    "pgrep -f ", pattern, " | xargs -r kill -KILL; else echo worker-gone; fi")},
      options);
  EXPECT_THAT(result.out, HasSubstr("worker-started")) << result;
  EXPECT_THAT(result.out, HasSubstr("worker-gone")) << result;
}

INSTANTIATE_TEST_SUITE_P(Identities, RunTest, ::testing::ValuesIn(IdentitiesToTest()), RunAsName);

}  // namespace
}  // namespace airlock::integration
