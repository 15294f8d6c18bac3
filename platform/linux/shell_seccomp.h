// The seccomp filter of the shell sandbox (SPEC §6): the architecture is checked first (a
// foreign-architecture or x32 system call kills the process), then ptrace, the mount API,
// TIOCSTI/TIOCLINUX, io_uring, the key store, bpf, perf_event_open, userfaultfd, new user
// namespaces and (unless allowed) new AF_UNIX sockets fail with EPERM. socketpair() stays
// allowed: a pair cannot reach anything outside. clone3 fails with ENOSYS because its flags
// live in memory a filter cannot read; libc then falls back to clone(), which is checked.
#ifndef PLATFORM_LINUX_SHELL_SECCOMP_H_
#define PLATFORM_LINUX_SHELL_SECCOMP_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace airlock::linux_sandbox {

struct ShellSeccompOptions {
  // --allow-unix-sockets: lets the sandbox create AF_UNIX sockets (and so reach host sockets
  // such as ssh-agent or D-Bus). Off by default.
  bool allow_unix_sockets = false;
};

// The filter as a classic BPF program (struct sock_filter[]), the format bwrap's --seccomp
// reads.
[[nodiscard]] absl::StatusOr<std::string> BuildShellSeccompProgram(
    const ShellSeccompOptions& options);

// Installs a BPF program produced by BuildShellSeccompProgram on the calling thread (sets
// no_new_privs first). For tests and probes; the sandbox itself loads it through bwrap.
[[nodiscard]] absl::Status InstallSeccompProgram(const std::string& program);

}  // namespace airlock::linux_sandbox

#endif  // PLATFORM_LINUX_SHELL_SECCOMP_H_
