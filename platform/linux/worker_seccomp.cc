#include "platform/linux/worker_seccomp.h"

#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "platform/base/errno_status.h"

namespace airlock::linux_sandbox {
namespace {

// Syscalls newer than Debian 12's libseccomp (2.5.4), with their numbers in the generic table
// that x86_64 and aarch64 share from 424 on. Used only when libseccomp cannot resolve the name.
struct NewSyscall {
  const char* name;
  int number;
};
constexpr NewSyscall kNewSyscalls[] = {
    {"fchmodat2", 452},     {"setxattrat", 463},    {"removexattrat", 466},
    {"open_tree_attr", 467}, {"file_setattr", 469},
};

// Denied outright with EPERM, in every directory (see the header for why each is here).
constexpr const char* kDeniedSyscalls[] = {
    // metadata and special files
    "chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat",
    "setxattr", "lsetxattr", "fsetxattr", "setxattrat", "removexattr", "lremovexattr",
    "fremovexattr", "removexattrat", "file_setattr", "mknod", "mknodat", "link", "linkat",
    "symlink", "symlinkat", "truncate", "creat",
    // mounts and namespaces
    "mount", "umount2", "pivot_root", "fsopen", "fsconfig", "fsmount", "fspick", "move_mount",
    "open_tree", "open_tree_attr", "mount_setattr", "setns",
    // other processes and the kernel
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "io_uring_setup",
    "io_uring_enter", "io_uring_register", "bpf", "perf_event_open", "userfaultfd", "keyctl",
    "add_key", "request_key",
};

// Pointer-argument syscalls made to fail as "not implemented" so libc falls back.
constexpr const char* kNotImplementedSyscalls[] = {"openat2", "clone3"};

constexpr uint64_t kNamespaceFlags[] = {CLONE_NEWNS,  CLONE_NEWCGROUP, CLONE_NEWUTS,
                                        CLONE_NEWIPC, CLONE_NEWUSER,   CLONE_NEWPID,
                                        CLONE_NEWNET};
// unshare also takes CLONE_NEWTIME (for clone, bit 7 is part of the exit signal).
constexpr uint64_t kCloneNewTime = 0x00000080;

constexpr uint64_t kTerminalInjectionIoctls[] = {TIOCSTI, TIOCLINUX};

// Owns a scmp_filter_ctx.
class Filter {
 public:
  Filter() : ctx_(seccomp_init(SCMP_ACT_ALLOW)) {}
  ~Filter() {
    if (ctx_ != nullptr) seccomp_release(ctx_);
  }
  Filter(const Filter&) = delete;
  Filter& operator=(const Filter&) = delete;
  scmp_filter_ctx get() const { return ctx_; }

 private:
  scmp_filter_ctx ctx_;
};

absl::Status LibseccompError(int rc, absl::string_view what) {
  // libseccomp returns -errno.
  return ErrnoToStatus(-rc, absl::StrCat("seccomp: ", what));
}

// The native number of `name`, or -1 when this architecture has no such syscall.
int Resolve(const char* name) {
  const int nr = seccomp_syscall_resolve_name(name);
  if (nr != __NR_SCMP_ERROR) return nr;
  const uint32_t arch = seccomp_arch_native();
  if (arch != SCMP_ARCH_X86_64 && arch != SCMP_ARCH_AARCH64) return -1;
  for (const NewSyscall& entry : kNewSyscalls) {
    if (std::strcmp(entry.name, name) == 0) return entry.number;
  }
  return -1;
}

absl::Status Deny(const Filter& filter, const char* name, int error_number) {
  const int nr = Resolve(name);
  if (nr < 0) return absl::OkStatus();  // not a syscall on this architecture
  const int rc = seccomp_rule_add(filter.get(), SCMP_ACT_ERRNO(error_number), nr, 0);
  if (rc != 0) return LibseccompError(rc, absl::StrCat("deny ", name));
  return absl::OkStatus();
}

// Denies `name` when (argument `arg` & flag) == flag, once per flag (rules on one syscall OR).
absl::Status DenyWithFlags(const Filter& filter, const char* name, unsigned arg,
                           const uint64_t* flags, size_t count) {
  const int nr = Resolve(name);
  if (nr < 0) return absl::OkStatus();
  for (size_t i = 0; i < count; ++i) {
    const scmp_arg_cmp cmp = {arg, SCMP_CMP_MASKED_EQ, flags[i], flags[i]};
    const int rc = seccomp_rule_add_array(filter.get(), SCMP_ACT_ERRNO(EPERM), nr, 1, &cmp);
    if (rc != 0) return LibseccompError(rc, absl::StrCat("deny flagged ", name));
  }
  return absl::OkStatus();
}

// Denies `name` when the low 32 bits of argument `arg` equal `value` (ints and unsigned ints
// arrive in 64-bit registers whose upper half the kernel ignores; compare only what it reads).
absl::Status DenyWhenEqual32(const Filter& filter, const char* name, unsigned arg,
                             uint64_t value) {
  const int nr = Resolve(name);
  if (nr < 0) return absl::OkStatus();
  const scmp_arg_cmp cmp = {arg, SCMP_CMP_MASKED_EQ, 0xFFFFFFFFULL, value & 0xFFFFFFFFULL};
  const int rc = seccomp_rule_add_array(filter.get(), SCMP_ACT_ERRNO(EPERM), nr, 1, &cmp);
  if (rc != 0) return LibseccompError(rc, absl::StrCat("deny ", name, " argument"));
  return absl::OkStatus();
}

}  // namespace

absl::Status ProbeSeccomp() {
  if (::prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0 && errno == EINVAL) {
    return absl::UnimplementedError("seccomp is not supported by this kernel (CONFIG_SECCOMP)");
  }
  uint32_t action = SECCOMP_RET_ERRNO;
  if (::syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) != 0) {
    return ErrnoToStatus(errno,
                         "seccomp filters with SECCOMP_RET_ERRNO are unavailable "
                         "(CONFIG_SECCOMP_FILTER; seccomp(GET_ACTION_AVAIL))");
  }
  if (seccomp_api_get() < 2) {
    return absl::FailedPreconditionError(
        "libseccomp reports API level < 2 (no thread synchronisation)");
  }
  return absl::OkStatus();
}

std::vector<std::string> WorkerSeccompDeniedSyscalls() {
  std::vector<std::string> names;
  for (const char* name : kDeniedSyscalls) names.emplace_back(name);
  return names;
}

absl::Status ApplyWorkerSeccomp(const WorkerSeccompOptions& options) {
  Filter filter;
  if (filter.get() == nullptr) return absl::InternalError("seccomp_init failed");
  int rc = seccomp_attr_set(filter.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  if (rc != 0) return LibseccompError(rc, "bad-architecture action");
  rc = seccomp_attr_set(filter.get(), SCMP_FLTATR_CTL_NNP, 1);
  if (rc != 0) return LibseccompError(rc, "no_new_privs");
  rc = seccomp_attr_set(filter.get(), SCMP_FLTATR_CTL_TSYNC, 1);
  if (rc != 0) return LibseccompError(rc, "thread synchronisation");

  for (const char* name : kDeniedSyscalls) {
    absl::Status status = Deny(filter, name, EPERM);
    if (!status.ok()) return status;
  }
  for (const char* name : kNotImplementedSyscalls) {
    absl::Status status = Deny(filter, name, ENOSYS);
    if (!status.ok()) return status;
  }
  absl::Status status = DenyWithFlags(filter, "clone", 0, kNamespaceFlags,
                                      sizeof(kNamespaceFlags) / sizeof(kNamespaceFlags[0]));
  if (!status.ok()) return status;
  uint64_t unshare_flags[sizeof(kNamespaceFlags) / sizeof(kNamespaceFlags[0]) + 1];
  size_t count = 0;
  for (uint64_t flag : kNamespaceFlags) unshare_flags[count++] = flag;
  unshare_flags[count++] = kCloneNewTime;
  status = DenyWithFlags(filter, "unshare", 0, unshare_flags, count);
  if (!status.ok()) return status;
  for (uint64_t request : kTerminalInjectionIoctls) {
    status = DenyWhenEqual32(filter, "ioctl", 1, request);
    if (!status.ok()) return status;
  }
  if (!options.allow_unix_sockets) {
    status = DenyWhenEqual32(filter, "socket", 0, AF_UNIX);
    if (!status.ok()) return status;
  }
  rc = seccomp_load(filter.get());
  if (rc != 0) return LibseccompError(rc, "load the filter");
  return absl::OkStatus();
}

}  // namespace airlock::linux_sandbox
