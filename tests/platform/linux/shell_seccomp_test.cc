#include "platform/linux/shell_seccomp.h"

#include <fcntl.h>
#include <linux/filter.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace airlock::linux_sandbox {
namespace {

using ::airlock::testing::IsOk;

// Runs `probe` in a forked child after installing the filter; returns the errno the probe
// reports (0: the call succeeded), or -1 if the child did not exit normally.
int ErrnoUnderFilter(const ShellSeccompOptions& options, const std::function<long()>& probe) {
  absl::StatusOr<std::string> program = BuildShellSeccompProgram(options);
  EXPECT_THAT(program, IsOk());
  if (!program.ok()) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (!InstallSeccompProgram(*program).ok()) _exit(250);
    errno = 0;
    const long r = probe();
    _exit(r >= 0 ? 0 : (errno > 0 && errno < 250 ? errno : 251));
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(ShellSeccompTest, ProgramIsWholeBpfInstructions) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::string program, BuildShellSeccompProgram({}));
  ASSERT_FALSE(program.empty());
  EXPECT_EQ(program.size() % sizeof(sock_filter), 0u);
  // The first instruction loads the architecture (seccomp_data.arch at offset 4).
  sock_filter first;
  memcpy(&first, program.data(), sizeof(first));
  EXPECT_EQ(first.code, BPF_LD | BPF_W | BPF_ABS);
  EXPECT_EQ(first.k, 4u);
}

TEST(ShellSeccompTest, DangerousCallsFailWithEperm) {
  const ShellSeccompOptions options;
  EXPECT_EQ(ErrnoUnderFilter(options, [] { return ::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr); }),
            EPERM);
  EXPECT_EQ(ErrnoUnderFilter(options, [] { return ::syscall(SYS_io_uring_setup, 1, nullptr); }),
            EPERM);
  EXPECT_EQ(ErrnoUnderFilter(options, [] { return ::socket(AF_UNIX, SOCK_STREAM, 0); }), EPERM);
  EXPECT_EQ(ErrnoUnderFilter(options, [] { return ::unshare(CLONE_NEWUSER); }), EPERM);
  EXPECT_EQ(ErrnoUnderFilter(options, [] { return ::unshare(CLONE_NEWUSER | CLONE_NEWNS); }),
            EPERM);
  EXPECT_EQ(ErrnoUnderFilter(options,
                             [] { return ::mount("none", "/tmp", "tmpfs", 0, nullptr); }),
            EPERM);
  EXPECT_EQ(ErrnoUnderFilter(options, [] { return ::syscall(SYS_fsopen, "tmpfs", 0); }), EPERM);
  EXPECT_EQ(ErrnoUnderFilter(options, [] { return ::syscall(SYS_open_tree, -1, "/", 0); }),
            EPERM);
  EXPECT_EQ(ErrnoUnderFilter(options, [] { return ::syscall(SYS_keyctl, 0, 0, 0, 0, 0); }),
            EPERM);
  EXPECT_EQ(ErrnoUnderFilter(options, [] { return ::syscall(SYS_bpf, 0, nullptr, 0); }), EPERM);
  EXPECT_EQ(ErrnoUnderFilter(options, [] { return ::syscall(SYS_userfaultfd, 0); }), EPERM);
  EXPECT_EQ(ErrnoUnderFilter(options,
                             [] {
                               char c = 'x';
                               return static_cast<long>(::ioctl(0, TIOCSTI, &c));
                             }),
            EPERM);
  EXPECT_EQ(ErrnoUnderFilter(options, [] { return ::syscall(SYS_setns, 0, 0); }), EPERM);
  // clone3 cannot be inspected: ENOSYS makes libc fall back to clone, which is checked.
  EXPECT_EQ(ErrnoUnderFilter(options, [] { return ::syscall(SYS_clone3, nullptr, 0); }), ENOSYS);
}

TEST(ShellSeccompTest, OrdinaryCallsStillWork) {
  const ShellSeccompOptions options;
  EXPECT_EQ(ErrnoUnderFilter(options,
                             [] {
                               int fds[2];
                               return static_cast<long>(
                                   ::socketpair(AF_UNIX, SOCK_STREAM, 0, fds));
                             }),
            0);
  EXPECT_EQ(ErrnoUnderFilter(options, [] { return ::socket(AF_INET, SOCK_STREAM, 0); }), 0);
  EXPECT_EQ(ErrnoUnderFilter(options,
                             [] {
                               int winsize[4];
                               // Any ioctl but TIOCSTI is untouched (ENOTTY on a non-tty).
                               long r = ::ioctl(::open("/dev/null", O_RDONLY), TIOCGWINSZ,
                                                winsize);
                               return errno == ENOTTY ? 0 : r;
                             }),
            0);
  EXPECT_EQ(ErrnoUnderFilter(options,
                             [] {
                               const pid_t child = ::fork();
                               if (child == 0) _exit(0);
                               int status;
                               return static_cast<long>(::waitpid(child, &status, 0));
                             }),
            0);
}

TEST(ShellSeccompTest, UnixSocketsCanBeAllowed) {
  ShellSeccompOptions options;
  options.allow_unix_sockets = true;
  EXPECT_EQ(ErrnoUnderFilter(options, [] { return ::socket(AF_UNIX, SOCK_STREAM, 0); }), 0);
  // The rest of the filter is unchanged.
  EXPECT_EQ(ErrnoUnderFilter(options, [] { return ::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr); }),
            EPERM);
}

TEST(ShellSeccompTest, InstallRejectsMalformedPrograms) {
  EXPECT_FALSE(InstallSeccompProgram("").ok());
  EXPECT_FALSE(InstallSeccompProgram("abc").ok());
}

}  // namespace
}  // namespace airlock::linux_sandbox
