// Runs one command in a fresh bubblewrap sandbox (SPEC §6): bwrap only from /usr/bin or /bin,
// with an empty environment of its own, options through `--args FD`, the seccomp program
// through `--seccomp FD`, the user command strictly after `--`.
//
// Preflight: the sandbox's first program is a fixed bash script (no profile, no rc files)
// inside the very instance the command will run in. It checks NoNewPrivs 1, Seccomp 2,
// CapEff 0 and a read-only /, writes "ready" on a private pipe, waits for the broker's "go" on
// another (see kGoFd), closes every extra descriptor and only then execs the command (or
// evaluates the shell command line in the same bash). No "ready" means bwrap or the preflight
// failed: the result is Unavailable and the command never ran; no "go", and it never runs
// either. Nothing ever falls back to running unsandboxed.
#ifndef PLATFORM_LINUX_BWRAP_LAUNCHER_H_
#define PLATFORM_LINUX_BWRAP_LAUNCHER_H_

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "platform/base/scoped_fd.h"
#include "platform/linux/bwrap_command.h"
#include "platform/process/kept_process.h"
#include "platform/process/process_tree.h"

namespace airlock::linux_sandbox {

// A path mounted over with something empty: a missing protected path (empty read-only
// directory or file) or a secret (a read-only empty tmpfs, or /dev/null over a file).
struct CoveredPath {
  std::string path;
  bool directory = true;
  // A file mask whose mount point the broker makes itself with this content (not empty, so
  // that host programs reading the path meanwhile see it too) and binds read-only onto
  // itself: `.git/commondir` holding ".", which git reads as "no other common directory".
  std::string content;
};

// Where everything goes inside the sandbox. All paths are canonical host paths.
struct ShellSandboxLayout {
  std::vector<std::string> writable_roots;   // --bind R R (workspace-write)
  std::vector<std::string> readonly_roots;   // --ro-bind R R (read-only; keeps them visible)
  // Parents of protected paths inside writable roots, bound onto themselves so that renaming
  // or removing them fails with EBUSY.
  std::vector<std::string> self_binds;
  std::vector<std::string> read_only;        // existing protected paths, re-bound read-only
  std::vector<CoveredPath> masks;            // missing protected paths: empty and read-only
  std::vector<CoveredPath> hidden;           // unreadable inside (audit key, runtime dir)
  std::string private_tmp;                   // host directory bound at /tmp
  std::string empty_dir;                     // mask sources (empty, read-only)
  std::string empty_file;
  std::string cwd;
  std::vector<std::pair<std::string, std::string>> env;  // the command's whole environment
};

// The descriptors the sandbox's bwrap process receives. The preflight says "ready" on
// kReadyFd once the instance is checked, then waits for "go" on kGoFd: the command starts only
// if the broker, alive after the whole setup, says so. A broker that died meanwhile (even one
// still being torn down, whose ends of the pipes are not yet closed) never says it, and the
// preflight exits 125 with nothing run — whatever bwrap's own die-with-parent chain missed.
inline constexpr int kReadyFd = 3;
inline constexpr int kArgsFd = 4;
inline constexpr int kSeccompFd = 5;
inline constexpr int kGoFd = 6;
// Sources inside writable roots (pinned parents, read-only re-binds) are handed to bwrap as
// descriptors from here on (BwrapArgv::fd_sources): a sandbox running meanwhile could swap
// such a directory for a link to anywhere, and bwrap resolves a path source when it mounts.
inline constexpr int kFirstSourceFd = 7;

// What runs inside: exactly one of an argument vector (argv[0] may be a bare name, looked up
// in the sandbox's PATH) or a shell command line (evaluated by the preflight's own
// `bash --noprofile --norc`, as `bash -c LINE` would run it).
struct SandboxCommand {
  std::vector<std::string> argv;
  std::string shell_line;
};

// The preflight script (exposed for tests): the argv or the command-line variant.
const char* PreflightScript(bool shell_line);

// The full bwrap command for `layout`, running `command` after the preflight in `shell`
// (an absolute path to bash).
[[nodiscard]] absl::StatusOr<BwrapArgv> BuildShellSandboxArgv(
    const ShellSandboxLayout& layout, const SandboxCommand& command, const std::string& shell);

// /usr/bin/bwrap or /bin/bwrap: a regular, executable file owned by root and writable by
// nobody else. Never PATH. Unavailable (naming what was wrong) otherwise.
[[nodiscard]] absl::StatusOr<std::string> FindSystemBwrap();
// /usr/bin/bash or /bin/bash, with the same checks.
[[nodiscard]] absl::StatusOr<std::string> FindSystemBash();

struct SandboxRunOptions {
  ShellSandboxLayout layout;
  SandboxCommand command;
  bool allow_unix_sockets = false;
  // Output, timeout and cancellation, as in TreeRunOptions. Without capture, the command
  // shares the caller's descriptors 0, 1 and 2; with it, stdin is /dev/null.
  bool capture_output = true;
  size_t stream_limit = kDefaultStreamLimit;
  std::string full_output_dir;
  std::chrono::milliseconds timeout{0};
  CancelToken* cancel = nullptr;
  // What must hold before the command starts (the durable audit intent): awaited after the
  // preflight said "ready" and before "go", so that it overlaps bwrap's setup. A non-OK status
  // kills the instance before the command ran, and is returned.
  std::function<absl::Status()> before_go;
};

// Runs the command. Unavailable when bwrap, bash or the seccomp program is missing, or when
// the instance failed before the preflight said ready (the command did not run); the
// message then carries bwrap's own diagnostic when it was captured.
[[nodiscard]] absl::StatusOr<TreeRunResult> RunInShellSandbox(const SandboxRunOptions& options);

struct SandboxStartOptions {
  ShellSandboxLayout layout;
  // argv[0] may be a bare name, looked up in the sandbox's PATH.
  std::vector<std::string> argv;
  bool allow_unix_sockets = false;
  // How long the instance may take to say "ready".
  std::chrono::milliseconds ready_timeout{30000};
  size_t stderr_keep = 8 * 1024;
};

// Starts `argv` in a fresh shell sandbox (the same bwrap layout, seccomp filter and preflight
// as RunInShellSandbox) and returns once the preflight said "ready". Unavailable when bwrap,
// bash or the seccomp program is missing, or the instance failed or stayed silent before
// "ready" (the process then never ran; the tree is killed and reaped).
[[nodiscard]] absl::StatusOr<std::unique_ptr<KeptProcess>> StartInShellSandbox(
    const SandboxStartOptions& options);

}  // namespace airlock::linux_sandbox

#endif  // PLATFORM_LINUX_BWRAP_LAUNCHER_H_
