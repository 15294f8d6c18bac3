#include "platform/linux/shell_seccomp.h"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "absl/strings/str_cat.h"
#include "platform/base/errno_status.h"
#include "platform/base/fd_io.h"
#include "platform/base/scoped_fd.h"
#include "platform/base/status_macros.h"

namespace airlock::linux_sandbox {
namespace {

struct ContextDeleter {
  void operator()(scmp_filter_ctx ctx) const { seccomp_release(ctx); }
};
using Context = std::unique_ptr<void, ContextDeleter>;

absl::Status SeccompError(int rc, absl::string_view what) {
  // libseccomp returns -errno.
  return ErrnoToStatus(-rc, absl::StrCat("seccomp ", what));
}

// System calls refused outright, by name so that one missing on an older libseccomp is a
// clear error rather than a silent gap.
constexpr const char* kDeniedSyscalls[] = {
    "ptrace", "process_vm_readv", "process_vm_writev",
    // The mount API, old and new.
    "mount", "umount2", "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree",
    "mount_setattr", "pivot_root",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "keyctl", "add_key", "request_key",
    "bpf", "perf_event_open", "userfaultfd",
    // Joining a namespace: setns(fd, 0) accepts any type, user namespaces included, so the
    // whole call is refused (nothing in a shell needs it).
    "setns",
};

absl::Status AddRule(scmp_filter_ctx ctx, uint32_t action, const char* name,
                     const scmp_arg_cmp* cmp = nullptr, unsigned count = 0) {
  const int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR) {
    return absl::UnavailableError(absl::StrCat("seccomp: this libseccomp does not know ", name));
  }
  const int rc = count == 0 ? seccomp_rule_add(ctx, action, nr, 0)
                            : seccomp_rule_add_array(ctx, action, nr, count, cmp);
  if (rc != 0) return SeccompError(rc, absl::StrCat("rule for ", name));
  return absl::OkStatus();
}

absl::StatusOr<Context> BuildContext(const ShellSeccompOptions& options) {
  Context ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (ctx == nullptr) return absl::InternalError("seccomp_init failed");
  // Architecture first: anything but the native ABI kills the process.
  int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  if (rc != 0) return SeccompError(rc, "bad-architecture action");
  // bwrap sets no_new_privs itself; the exported program must not depend on libseccomp's.
  rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_NNP, 0);
  if (rc != 0) return SeccompError(rc, "no_new_privs attribute");

  const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
  for (const char* name : kDeniedSyscalls) {
    AIRLOCK_RETURN_IF_ERROR(AddRule(ctx.get(), eperm, name));
  }
  // TIOCSTI pushes input into a terminal; TIOCLINUX can do the same on a VT.
  const scmp_arg_cmp tiocsti[] = {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI)};
  AIRLOCK_RETURN_IF_ERROR(AddRule(ctx.get(), eperm, "ioctl", tiocsti, 1));
  const scmp_arg_cmp tioclinux[] = {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCLINUX)};
  AIRLOCK_RETURN_IF_ERROR(AddRule(ctx.get(), eperm, "ioctl", tioclinux, 1));
  // New user namespaces (bwrap's --disable-userns is the other layer).
  for (const char* name : {"unshare", "clone"}) {
    const scmp_arg_cmp newuser[] = {
        SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER)};
    AIRLOCK_RETURN_IF_ERROR(AddRule(ctx.get(), eperm, name, newuser, 1));
  }
  AIRLOCK_RETURN_IF_ERROR(AddRule(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), "clone3"));
  if (!options.allow_unix_sockets) {
    const scmp_arg_cmp unix_socket[] = {SCMP_A0(SCMP_CMP_EQ, AF_UNIX)};
    AIRLOCK_RETURN_IF_ERROR(AddRule(ctx.get(), eperm, "socket", unix_socket, 1));
  }
  return ctx;
}

}  // namespace

absl::StatusOr<std::string> BuildShellSeccompProgram(const ShellSeccompOptions& options) {
  AIRLOCK_ASSIGN_OR_RETURN(Context ctx, BuildContext(options));
  ScopedFd memory(::memfd_create("airlock-seccomp", MFD_CLOEXEC));
  if (!memory) return LastErrnoStatus("memfd_create", "seccomp program");
  const int rc = seccomp_export_bpf(ctx.get(), memory.get());
  if (rc != 0) return SeccompError(rc, "export");
  if (::lseek(memory.get(), 0, SEEK_SET) != 0) return LastErrnoStatus("lseek", "seccomp program");
  AIRLOCK_ASSIGN_OR_RETURN(std::string program,
                           ReadToEnd(memory.get(), 1 << 20, "seccomp program"));
  if (program.empty() || program.size() % sizeof(sock_filter) != 0) {
    return absl::InternalError("seccomp: exported program has an invalid size");
  }
  return program;
}

absl::Status InstallSeccompProgram(const std::string& program) {
  if (program.empty() || program.size() % sizeof(sock_filter) != 0) {
    return absl::InvalidArgumentError("seccomp: invalid program size");
  }
  sock_fprog fprog;
  fprog.len = static_cast<unsigned short>(program.size() / sizeof(sock_filter));
  fprog.filter = reinterpret_cast<sock_filter*>(const_cast<char*>(program.data()));
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return LastErrnoStatus("prctl(NO_NEW_PRIVS)");
  if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog) != 0) {
    return LastErrnoStatus("prctl(PR_SET_SECCOMP)");
  }
  return absl::OkStatus();
}

}  // namespace airlock::linux_sandbox
