#include "platform/linux/worker_seccomp.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <pty.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/platform/linux/child_runner.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock::linux_sandbox {
namespace {

using ::airlock::testing::ExpectErrno;
using ::airlock::testing::ExpectSuccess;
using ::airlock::testing::IsOk;
using ::airlock::testing::RunInChild;

class WorkerSeccompTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::Status probe = ProbeSeccomp();
    if (!probe.ok()) GTEST_SKIP() << "no seccomp here: " << probe;
    file_ = dir_.Child("file");
    airlock::testing::WriteFileOrDie(file_, "content");
  }

  airlock::testing::TempDir dir_;
  std::string file_;
};

std::string Apply(bool allow_unix_sockets = false) {
  WorkerSeccompOptions options;
  options.allow_unix_sockets = allow_unix_sockets;
  absl::Status status = ApplyWorkerSeccomp(options);
  return status.ok() ? "" : absl::StrCat("apply: ", status.message(), "\n");
}

TEST_F(WorkerSeccompTest, ProbeSucceedsHere) { EXPECT_THAT(ProbeSeccomp(), IsOk()); }

TEST_F(WorkerSeccompTest, MetadataAndSpecialFileSyscallsFailWithEperm) {
  const std::string file = file_;
  const std::string dir = dir_.path();
  const std::string failure = RunInChild([&]() -> std::string {
    std::string out = Apply();
    if (!out.empty()) return out;
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    out += ExpectErrno("chmod", ::chmod(file.c_str(), 0777), EPERM);
    out += ExpectErrno("fchmod", ::fchmod(fd, 0777), EPERM);
    out += ExpectErrno("fchmodat", ::fchmodat(AT_FDCWD, file.c_str(), 0777, 0), EPERM);
    out += ExpectErrno("fchmodat2", ::syscall(452, AT_FDCWD, file.c_str(), 0777, 0), EPERM);
    out += ExpectErrno("chown", ::chown(file.c_str(), ::getuid(), ::getgid()), EPERM);
    out += ExpectErrno("fchown", ::fchown(fd, ::getuid(), ::getgid()), EPERM);
    out += ExpectErrno("lchown", ::lchown(file.c_str(), ::getuid(), ::getgid()), EPERM);
    out += ExpectErrno("fchownat",
                       ::fchownat(AT_FDCWD, file.c_str(), ::getuid(), ::getgid(), 0), EPERM);
    out += ExpectErrno("setxattr", ::setxattr(file.c_str(), "user.x", "1", 1, 0), EPERM);
    out += ExpectErrno("fsetxattr", ::fsetxattr(fd, "user.x", "1", 1, 0), EPERM);
    out += ExpectErrno("removexattr", ::removexattr(file.c_str(), "user.x"), EPERM);
    out += ExpectErrno("link", ::link(file.c_str(), (dir + "/hard").c_str()), EPERM);
    out += ExpectErrno("linkat",
                       ::linkat(AT_FDCWD, file.c_str(), AT_FDCWD, (dir + "/hard").c_str(), 0),
                       EPERM);
    out += ExpectErrno("symlink", ::symlink("file", (dir + "/sym").c_str()), EPERM);
    out += ExpectErrno("symlinkat", ::symlinkat("file", AT_FDCWD, (dir + "/sym").c_str()), EPERM);
    out += ExpectErrno("mknod", ::mknod((dir + "/fifo").c_str(), S_IFIFO | 0600, 0), EPERM);
    out += ExpectErrno("truncate", ::truncate(file.c_str(), 0), EPERM);
    out += ExpectErrno("creat", ::syscall(SYS_creat, (dir + "/created").c_str(), 0600), EPERM);
    return out;
  });
  EXPECT_EQ(failure, "");
  EXPECT_EQ(airlock::testing::ReadFileOrMissing(file_), "content");
}

TEST_F(WorkerSeccompTest, PointerFlagSyscallsReportNotImplementedSoLibcFallsBack) {
  const std::string file = file_;
  const std::string failure = RunInChild([&]() -> std::string {
    std::string out = Apply();
    if (!out.empty()) return out;
    struct open_how how = {};
    how.flags = O_RDONLY;
    out += ExpectErrno("openat2", ::syscall(SYS_openat2, AT_FDCWD, file.c_str(), &how,
                                            sizeof(how)),
                       ENOSYS);
    out += ExpectErrno("clone3", ::syscall(SYS_clone3, nullptr, 0), ENOSYS);
    // glibc's fork and posix_spawn still work (they fall back to clone).
    const pid_t pid = ::fork();
    if (pid == 0) _exit(7);
    int status = 0;
    if (pid < 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 7) {
      out += "fork after the filter does not work\n";
    }
    return out;
  });
  EXPECT_EQ(failure, "");
}

TEST_F(WorkerSeccompTest, NamespacesMountsTracingAndKernelInterfacesFail) {
  const std::string failure = RunInChild([]() -> std::string {
    std::string out = Apply();
    if (!out.empty()) return out;
    out += ExpectErrno("unshare(NEWUSER)", ::unshare(CLONE_NEWUSER), EPERM);
    out += ExpectErrno("unshare(NEWNS)", ::unshare(CLONE_NEWNS), EPERM);
    out += ExpectErrno("clone(NEWUSER)",
                       ::syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, nullptr, nullptr, nullptr, 0),
                       EPERM);
    out += ExpectErrno("setns", ::setns(0, 0), EPERM);
    out += ExpectErrno("mount", ::mount("none", "/", "tmpfs", 0, nullptr), EPERM);
    out += ExpectErrno("umount2", ::umount2("/", 0), EPERM);
    out += ExpectErrno("fsopen", ::syscall(SYS_fsopen, "tmpfs", 0), EPERM);
    out += ExpectErrno("open_tree", ::syscall(SYS_open_tree, AT_FDCWD, "/", 0), EPERM);
    out += ExpectErrno("ptrace", ::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr), EPERM);
    char byte = 0;
    struct iovec local = {&byte, 1};
    struct iovec remote = {&byte, 1};
    out += ExpectErrno("process_vm_readv",
                       ::process_vm_readv(::getppid(), &local, 1, &remote, 1, 0), EPERM);
    out += ExpectErrno("process_vm_writev",
                       ::process_vm_writev(::getppid(), &local, 1, &remote, 1, 0), EPERM);
    out += ExpectErrno("io_uring_setup", ::syscall(SYS_io_uring_setup, 1, nullptr), EPERM);
    out += ExpectErrno("bpf", ::syscall(SYS_bpf, 0, nullptr, 0), EPERM);
    out += ExpectErrno("perf_event_open",
                       ::syscall(SYS_perf_event_open, nullptr, 0, -1, -1, 0), EPERM);
    out += ExpectErrno("userfaultfd", ::syscall(SYS_userfaultfd, 0), EPERM);
    out += ExpectErrno("keyctl", ::syscall(SYS_keyctl, 0, 0, 0, 0, 0), EPERM);
    out += ExpectErrno("add_key", ::syscall(SYS_add_key, "user", "x", "y", 1, 0), EPERM);
    return out;
  });
  EXPECT_EQ(failure, "");
}

TEST_F(WorkerSeccompTest, TerminalInjectionFailsEvenWithHighBitsSet) {
  const std::string failure = RunInChild([]() -> std::string {
    int master = -1, slave = -1;
    if (::openpty(&master, &slave, nullptr, nullptr, nullptr) != 0) return "";  // no ptys
    std::string out = Apply();
    if (!out.empty()) return out;
    char c = 'x';
    out += ExpectErrno("TIOCSTI", ::ioctl(slave, TIOCSTI, &c), EPERM);
    // The kernel reads the request as 32 bits; so must the filter.
    out += ExpectErrno("TIOCSTI | 1<<32",
                       ::syscall(SYS_ioctl, slave, 0x100000000UL | TIOCSTI, &c), EPERM);
    struct winsize size;
    out += ExpectSuccess("TIOCGWINSZ", ::ioctl(slave, TIOCGWINSZ, &size));
    return out;
  });
  EXPECT_EQ(failure, "");
}

TEST_F(WorkerSeccompTest, UnixSocketsFailButSocketpairWorks) {
  const std::string failure = RunInChild([]() -> std::string {
    std::string out = Apply();
    if (!out.empty()) return out;
    out += ExpectErrno("socket(AF_UNIX)", ::socket(AF_UNIX, SOCK_STREAM, 0), EPERM);
    out += ExpectErrno("socket(AF_UNIX | 1<<32)",
                       ::syscall(SYS_socket, 0x100000000UL | AF_UNIX, SOCK_STREAM, 0), EPERM);
    int pair[2];
    out += ExpectSuccess("socketpair(AF_UNIX)", ::socketpair(AF_UNIX, SOCK_STREAM, 0, pair));
    out += ExpectSuccess("socket(AF_INET)", ::socket(AF_INET, SOCK_STREAM, 0));
    return out;
  });
  EXPECT_EQ(failure, "");
}

TEST_F(WorkerSeccompTest, UnixSocketsCanBeAllowed) {
  const std::string failure = RunInChild([]() -> std::string {
    std::string out = Apply(/*allow_unix_sockets=*/true);
    if (!out.empty()) return out;
    return ExpectSuccess("socket(AF_UNIX)", ::socket(AF_UNIX, SOCK_STREAM, 0));
  });
  EXPECT_EQ(failure, "");
}

// The documented split: path-bound writes are left to layers 1 and 2, because the scratch
// directory needs them. This pins that the filter does not silently break TMPDIR.
TEST_F(WorkerSeccompTest, ReadsAndScratchStyleWritesStillWork) {
  const std::string file = file_;
  const std::string dir = dir_.path();
  const std::string failure = RunInChild([&]() -> std::string {
    std::string out = Apply();
    if (!out.empty()) return out;
    char buffer[16];
    const int in = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    out += ExpectSuccess("open for read", in);
    out += ExpectSuccess("read", ::read(in, buffer, sizeof(buffer)));
    const int fd = ::open((dir + "/tmp").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    out += ExpectSuccess("create", fd);
    out += ExpectSuccess("write", ::write(fd, "x", 1));
    out += ExpectSuccess("ftruncate", ::ftruncate(fd, 0));
    out += ExpectSuccess("mkdir", ::mkdir((dir + "/d").c_str(), 0700));
    out += ExpectSuccess("rename", ::rename((dir + "/tmp").c_str(), (dir + "/d/tmp").c_str()));
    out += ExpectSuccess("unlink", ::unlink((dir + "/d/tmp").c_str()));
    out += ExpectSuccess("rmdir", ::rmdir((dir + "/d").c_str()));
    return out;
  });
  EXPECT_EQ(failure, "");
}

TEST_F(WorkerSeccompTest, EveryThreadIsFilteredAndStatusShowsMode2) {
  const std::string file = file_;
  const std::string failure = RunInChild([&]() -> std::string {
    std::string thread_result = "thread did not run";
    std::string out;
    std::thread thread;
    int go[2];
    if (::pipe(go) != 0) return "pipe";
    // The thread exists before the filter is loaded; TSYNC must reach it.
    thread = std::thread([&] {
      char c;
      if (::read(go[0], &c, 1) != 1) return;
      thread_result = ExpectErrno("chmod in thread", ::chmod(file.c_str(), 0777), EPERM);
      if (::prctl(PR_GET_SECCOMP, 0, 0, 0, 0) != 2) thread_result += "thread not in mode 2\n";
    });
    out += Apply();
    if (::write(go[1], "g", 1) != 1) out += "write";
    thread.join();
    out += thread_result;
    if (::prctl(PR_GET_SECCOMP, 0, 0, 0, 0) != 2) out += "main thread not in mode 2\n";
    if (::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) out += "no_new_privs not set\n";
    return out;
  });
  EXPECT_EQ(failure, "");
}

TEST(WorkerSeccompListTest, NamesTheSpecSyscalls) {
  const std::vector<std::string> denied = WorkerSeccompDeniedSyscalls();
  for (const char* name : {"chmod", "chown", "setxattr", "truncate", "mknod", "mount", "ptrace",
                           "process_vm_writev", "io_uring_setup", "bpf", "perf_event_open",
                           "keyctl", "link", "symlink", "creat"}) {
    EXPECT_THAT(denied, ::testing::Contains(name));
  }
}

}  // namespace
}  // namespace airlock::linux_sandbox
