#include "platform/process/spawn.h"

#include <fcntl.h>
#include <unistd.h>

#include <csignal>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "platform/base/fd_io.h"
#include "platform/base/scoped_fd.h"
#include "tests/testing/status_matchers.h"

namespace airlock {
namespace {

using ::airlock::testing::StatusIs;

struct Captured {
  ExitStatus status;
  std::string out;
};

Captured RunShell(const std::string& script, SpawnOptions options = {}) {
  int fds[2];
  EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  ScopedFd read_end(fds[0]), write_end(fds[1]);
  options.argv = {"/bin/sh", "-c", script};
  options.descriptors = {{0, 0}, {1, write_end.get()}, {2, 2}};
  auto pid = Spawn(options);
  EXPECT_TRUE(pid.ok()) << pid.status();
  write_end.reset();
  auto out = ReadToEnd(read_end.get(), 1 << 20, "pipe");
  auto status = WaitForExit(*pid);
  EXPECT_TRUE(status.ok());
  return {*status, out.value_or("")};
}

TEST(SpawnTest, ExactEnvironment) {
  SpawnOptions options;
  options.env = {"ONLY=this"};
  Captured c = RunShell("env | grep -v '^PWD=' | grep -v '^SHLVL=' | grep -v '^_='", options);
  EXPECT_EQ(c.out, "ONLY=this\n");
}

TEST(SpawnTest, OnlyMappedDescriptorsAreOpen) {
  ScopedFd leaked(::open("/dev/null", O_RDONLY));  // deliberately not close-on-exec
  ASSERT_TRUE(leaked.valid());
  Captured c = RunShell("ls /proc/self/fd | sort -n | tr '\\n' ' '");
  // ls itself opens one descriptor for the directory it lists.
  EXPECT_THAT(c.out, ::testing::MatchesRegex("0 1 2 [0-9]+ "));
}

TEST(SpawnTest, ExitCodeAndSignal) {
  EXPECT_EQ(RunShell("exit 7").status.ShellCode(), 7);
  Captured killed = RunShell("kill -TERM $$");
  EXPECT_FALSE(killed.status.exited);
  EXPECT_EQ(killed.status.term_signal, SIGTERM);
  EXPECT_EQ(killed.status.ShellCode(), 128 + SIGTERM);
}

TEST(SpawnTest, NewSessionHasNoControllingTerminal) {
  SpawnOptions options;
  options.new_session = true;
  Captured c = RunShell("ps -o sid= -p $$ | tr -d ' '; echo; echo $$", options);
  std::string sid = c.out.substr(0, c.out.find('\n'));
  std::string pid = c.out.substr(c.out.rfind('\n', c.out.size() - 2) + 1);
  pid.pop_back();
  EXPECT_EQ(sid, pid);
}

TEST(SpawnTest, NoNewPrivileges) {
  SpawnOptions options;
  options.no_new_privileges = true;
  Captured c = RunShell("grep NoNewPrivs /proc/self/status", options);
  EXPECT_THAT(c.out, ::testing::HasSubstr("1"));
}

TEST(SpawnTest, RefusesBareProgramName) {
  SpawnOptions options;
  options.argv = {"sh"};
  EXPECT_THAT(Spawn(options), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(SpawnTest, ExecFailureIs127) {
  SpawnOptions options;
  options.argv = {"/nonexistent/program"};
  auto pid = Spawn(options);
  ASSERT_TRUE(pid.ok());
  auto status = WaitForExit(*pid);
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->ShellCode(), 127);
}

// The child starts with every signal blocked and caught ones reset (it shares the parent's
// memory until exec); the command still runs with an empty mask and default dispositions,
// and the spawning thread's own mask is as it was.
TEST(SpawnTest, ChildGetsAnEmptySignalMaskAndTheParentKeepsItsOwn) {
  struct sigaction handler {};
  struct sigaction previous {};
  handler.sa_handler = [](int) {};
  ASSERT_EQ(::sigaction(SIGUSR1, &handler, &previous), 0);
  sigset_t blocked, before, after;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGUSR2);
  ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &blocked, &before), 0);
  Captured c = RunShell("grep '^SigBlk:' /proc/self/status; kill -USR1 $$; echo survived");
  ASSERT_EQ(::pthread_sigmask(SIG_SETMASK, &before, &after), 0);
  ::sigaction(SIGUSR1, &previous, nullptr);
  EXPECT_EQ(c.out, "SigBlk:\t0000000000000000\n");  // killed by SIGUSR1 before "survived"
  EXPECT_EQ(c.status.term_signal, SIGUSR1);
  EXPECT_EQ(::sigismember(&after, SIGUSR2), 1);
  EXPECT_EQ(::sigismember(&after, SIGUSR1), 0);
}

TEST(FindExecutableTest, SearchesPath) {
  auto found = FindExecutable("sh", "/nonexistent:/bin");
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(*found, "/bin/sh");
  EXPECT_THAT(FindExecutable("no-such-program-xyz", "/bin"),
              StatusIs(absl::StatusCode::kNotFound));
}

}  // namespace
}  // namespace airlock
