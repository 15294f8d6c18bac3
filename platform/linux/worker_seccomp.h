// Seccomp (layer 3 of the worker's confinement), built with libseccomp.
//
// What this layer can and cannot do. Seccomp sees syscall numbers and register arguments,
// never paths. The worker must keep a writable private scratch directory (TMPDIR), so the
// path-blind filter cannot deny creating, opening for write, renaming, unlinking or making
// directories: those are confined by layer 1 (read-only mount view: EROFS) and layer 2
// (Landlock: EACCES) and allowed here. What this layer denies everywhere, scratch included
// (EPERM unless noted), is what the worker has no business doing at all:
//   - metadata and special files: chmod/fchmod/fchmodat/fchmodat2, chown/fchown/lchown/
//     fchownat, setxattr/removexattr families (and *xattrat, file_setattr), mknod/mknodat,
//     link/linkat, symlink/symlinkat, truncate (by path), creat;
//   - mounts and namespaces: mount, umount2, pivot_root, the new mount API (fsopen, fsconfig,
//     fsmount, fspick, move_mount, open_tree, open_tree_attr, mount_setattr), setns, unshare
//     and clone with any CLONE_NEW* flag;
//   - other processes and the kernel: ptrace, process_vm_readv/writev, pidfd_getfd,
//     io_uring_setup/enter/register, bpf, perf_event_open, userfaultfd, keyctl, add_key,
//     request_key;
//   - terminals: ioctl TIOCSTI and TIOCLINUX (input injection);
//   - sockets: socket(AF_UNIX) (connecting to host sockets: ssh-agent, docker, D-Bus);
//     socketpair stays allowed, the worker's channels need it;
//   - openat2 and clone3 fail with ENOSYS: their flags sit behind a pointer the filter cannot
//     read, and ENOSYS makes libc fall back to openat and clone, whose flags are registers.
// ftruncate on an already-open descriptor is allowed: the descriptor's write access was
// granted by layers 1 and 2 (or by whoever started airlock, for inherited ones).
// A syscall from a foreign architecture (e.g. int 0x80 on x86_64) kills the process.
#ifndef PLATFORM_LINUX_WORKER_SECCOMP_H_
#define PLATFORM_LINUX_WORKER_SECCOMP_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace airlock::linux_sandbox {

struct WorkerSeccompOptions {
  // --allow-unix-sockets: let the worker create AF_UNIX sockets.
  bool allow_unix_sockets = false;
};

// Whether seccomp filters with SECCOMP_RET_ERRNO work here; the error says why not.
[[nodiscard]] absl::Status ProbeSeccomp();

// The names of the syscalls the worker filter denies outright (for reports and docs).
std::vector<std::string> WorkerSeccompDeniedSyscalls();

// Loads the worker filter into the calling process (every thread; sets no_new_privs).
[[nodiscard]] absl::Status ApplyWorkerSeccomp(const WorkerSeccompOptions& options);

}  // namespace airlock::linux_sandbox

#endif  // PLATFORM_LINUX_WORKER_SECCOMP_H_
