#include "platform/process/spawn.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "platform/base/errno_status.h"
#include "platform/base/logging.h"

namespace airlock {
namespace {

constexpr int kExecFailedStatus = 127;

std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Child side of the spawn. It runs in the parent's memory (CLONE_VM, see Spawn) on its own
// stack, while the spawning thread waits: system calls only — no allocation, no locks — and
// nothing written but its stack (and the suspended thread's errno).
[[noreturn]] void RunChild(const SpawnOptions& options, char* const* argv, char* const* envp,
                           pid_t parent) {
  if (options.parent_death_signal != 0) {
    if (::prctl(PR_SET_PDEATHSIG, options.parent_death_signal) != 0) {
      RawDie("prctl(PR_SET_PDEATHSIG)", kExecFailedStatus);
    }
    // The parent may have died before prctl took effect.
    if (::getppid() != parent) _exit(kExecFailedStatus);
  }
  if (options.new_session && ::setsid() < 0) RawDie("setsid", kExecFailedStatus);
  if (options.new_process_group && !options.new_session && ::setpgid(0, 0) != 0) {
    RawDie("setpgid", kExecFailedStatus);
  }

  // Move every source above every target first, so no dup2 clobbers a later source.
  int highest_target = 2;
  for (const auto& [target, source] : options.descriptors) {
    highest_target = std::max(highest_target, target);
  }
  int staged[64];
  const size_t count = options.descriptors.size();
  if (count > 64) RawDie("too many descriptors to map", kExecFailedStatus);
  for (size_t i = 0; i < count; ++i) {
    staged[i] = ::fcntl(options.descriptors[i].second, F_DUPFD_CLOEXEC, highest_target + 1);
    if (staged[i] < 0) RawDie("fcntl(F_DUPFD) while arranging descriptors", kExecFailedStatus);
  }
  for (int fd = 0; fd <= highest_target; ++fd) {
    bool wanted = false;
    for (size_t i = 0; i < count; ++i) wanted |= options.descriptors[i].first == fd;
    if (!wanted) ::close(fd);
  }
  for (size_t i = 0; i < count; ++i) {
    // dup2 clears FD_CLOEXEC on the target.
    if (::dup2(staged[i], options.descriptors[i].first) < 0) RawDie("dup2", kExecFailedStatus);
  }
  if (::syscall(SYS_close_range, highest_target + 1, ~0U, 0) != 0) {
    RawDie("close_range", kExecFailedStatus);
  }
  if (options.working_directory.has_value() &&
      ::chdir(options.working_directory->c_str()) != 0) {
    RawDie("chdir", kExecFailedStatus);
  }
  if (options.no_new_privileges && ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    RawDie("prctl(PR_SET_NO_NEW_PRIVS)", kExecFailedStatus);
  }
  // Undo the broker's signal dispositions: ignored signals survive exec.
  ::signal(SIGPIPE, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(argv[0], argv, envp);
  RawDie("execve", kExecFailedStatus);
}

struct ChildStart {
  const SpawnOptions* options;
  char* const* argv;
  char* const* envp;
  pid_t parent;
};

int ChildMain(void* raw) {
  const ChildStart* start = static_cast<const ChildStart*>(raw);
  // All signals arrive blocked. A handler of the broker's must never run here, on memory the
  // parent shares: every caught signal goes back to its default before RunChild unblocks them
  // (the child has its own copy of the dispositions).
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction action;
    if (::sigaction(sig, nullptr, &action) != 0) continue;  // SIGKILL, SIGSTOP, libc's own
    if (action.sa_handler == SIG_DFL || action.sa_handler == SIG_IGN) continue;
    action.sa_handler = SIG_DFL;
    action.sa_flags = 0;
    ::sigaction(sig, &action, nullptr);
  }
  RunChild(*start->options, start->argv, start->envp, start->parent);
}

constexpr size_t kChildStackBytes = 64 * 1024;

}  // namespace

absl::StatusOr<pid_t> Spawn(const SpawnOptions& options) {
  if (options.argv.empty()) return absl::InvalidArgumentError("spawn: empty argv");
  if (options.argv[0].find('/') == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("spawn: program '", options.argv[0], "' is not a path"));
  }
  std::vector<char*> argv = CStrings(options.argv);
  std::vector<char*> envp = CStrings(options.env);
  ChildStart start{&options, argv.data(), envp.data(), ::getpid()};
  // Like posix_spawn (which cannot set no_new_privs or a parent-death signal): the child
  // shares this memory until it execs (CLONE_VM | CLONE_VFORK: this thread waits meanwhile),
  // so the broker's page tables are not copied — a fork cost about 0.4 ms per command here.
  void* stack = ::mmap(nullptr, kChildStackBytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) return LastErrnoStatus("mmap (child stack)", options.argv[0]);
  sigset_t all, saved;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &saved);
  const pid_t pid = ::clone(ChildMain, static_cast<char*>(stack) + kChildStackBytes,
                            CLONE_VM | CLONE_VFORK | SIGCHLD, &start);
  const int clone_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  ::munmap(stack, kChildStackBytes);
  if (pid < 0) return ErrnoToStatus(clone_errno, "clone", options.argv[0]);
  return pid;
}

absl::StatusOr<std::string> FindExecutable(const std::string& name,
                                           const std::string& search_path) {
  if (name.empty()) return absl::InvalidArgumentError("empty program name");
  if (name.find('/') != std::string::npos) return name;
  for (absl::string_view dir : absl::StrSplit(search_path, ':', absl::SkipEmpty())) {
    std::string candidate = absl::StrCat(dir, "/", name);
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return absl::NotFoundError(
      absl::StrCat("program '", name, "' not found in PATH (", search_path, ")"));
}

absl::StatusOr<ExitStatus> WaitForExit(pid_t pid) {
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, 0);
    if (r == pid) break;
    if (r < 0 && errno == EINTR) continue;
    return LastErrnoStatus("waitpid", absl::StrCat(pid));
  }
  ExitStatus result;
  if (WIFEXITED(status)) {
    result.exited = true;
    result.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.term_signal = WTERMSIG(status);
  }
  return result;
}

}  // namespace airlock
