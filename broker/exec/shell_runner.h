// The shell runner behind the broker's bash tool and `airlock exec` (SPEC §6): each call gets
// a fresh bubblewrap sandbox with its own private temp directory, or — for
// danger-full-access and approved escalations — runs on the host with the host environment.
// Both paths share the timeout, cancellation and output handling. The runner never decides
// policy: the caller says which preset applies and whether the call was escalated.
#ifndef BROKER_EXEC_SHELL_RUNNER_H_
#define BROKER_EXEC_SHELL_RUNNER_H_

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "airlock/v1/wire.pb.h"
#include "broker/exec/protection_plan.h"
#include "broker/exec/runtime_dir.h"
#include "platform/linux/bwrap_launcher.h"
#include "platform/process/process_tree.h"

namespace airlock::broker {

struct ShellRunnerOptions {
  // Empty: $XDG_RUNTIME_DIR/airlock, /dev/shm/airlock-<uid> or /tmp/airlock-<uid>, the first
  // usable one (see runtime_dir.h). Given: that directory or nothing.
  // Full-output files go to the runtime directory's path plus "-output".
  std::string runtime_dir;
  // Files or directories that must be unreadable inside every sandbox (the audit key, the
  // session store if wanted). The runtime directory is always hidden.
  std::vector<std::string> hidden_paths;
  size_t stream_limit = kDefaultStreamLimit;
  ProtectionLimits protection_limits;
};

struct ShellRequest {
  // Either a shell command line, run as `bash --noprofile --norc -c COMMAND`, …
  std::string command;
  // … or, when nonempty, an argument vector run as is (`airlock exec`); argv[0] is looked up
  // in PATH (the sandbox's PATH when sandboxed).
  std::vector<std::string> argv;
  // Absolute. Empty: roots[0]. For restricted presets it must resolve inside a root, else
  // OUTSIDE_SANDBOX.
  std::string cwd;
  std::chrono::milliseconds timeout{0};  // zero: none
  v1::Preset preset = v1::PRESET_READ_ONLY;
  // Canonical; roots[0] is the workspace. Writable only under workspace-write.
  std::vector<std::string> roots;
  // --protect paths and the broker's protected storage ($AIRLOCK_HOME, sessions, …).
  std::vector<std::string> protected_paths;
  // An approved require_escalated call: no sandbox, host filesystem, network, environment.
  bool escalated = false;
  bool allow_unix_sockets = false;
  // True (bash tool): output captured into the result. False (`airlock exec`): the command
  // shares the caller's descriptors 0, 1 and 2.
  bool capture_output = true;
  // What must hold before the command starts (the durable audit intent): sandboxed, awaited
  // once bwrap has set the instance up and before the preflight's "go", so that the two
  // overlap; on the host, right before the spawn. A non-OK status refuses the call with
  // nothing run.
  std::function<absl::Status()> before_start;
};

// A long-lived process (an MCP server over stdio) started in the shell sandbox of a preset:
// the same layout, seccomp filter, preflight, private temp directory, masks and environment
// as a bash call; under danger-full-access, on the host like bash there.
struct ServerProcessRequest {
  // argv[0] may be a bare name: looked up in the sandbox's PATH (the host's under
  // danger-full-access).
  std::vector<std::string> argv;
  // Absolute. Empty: roots[0]. For restricted presets it must resolve inside a root.
  std::string cwd;
  v1::Preset preset = v1::PRESET_READ_ONLY;
  std::vector<std::string> roots;            // canonical; roots[0] is the workspace
  std::vector<std::string> protected_paths;
  bool allow_unix_sockets = false;
  // How long the sandbox may take to say "ready".
  std::chrono::milliseconds start_timeout{30000};
};

// Owns the started tree, its pipes and its private call directory.
class SandboxedProcess {
 public:
  ~SandboxedProcess() { Stop(); }
  SandboxedProcess(const SandboxedProcess&) = delete;
  SandboxedProcess& operator=(const SandboxedProcess&) = delete;

  int stdin_fd() const { return process_->stdin_fd(); }    // write end, close-on-exec
  int stdout_fd() const { return process_->stdout_fd(); }  // read end, close-on-exec
  // The last few KiB of its stderr (bounded), removed from the buffer.
  std::string TakeStderr() { return process_->TakeStderr(); }
  // Never blocks.
  bool Exited() const { return process_->Exited(); }
  // Kills the whole tree (SIGKILL to its group; under bwrap, its pid namespace goes with it),
  // reaps it, removes the private call directory and the masks' mount points. Idempotent.
  void Stop();
  // Kills the tree now, from any thread (a call waiting on the server then sees EOF); Stop()
  // still does the cleanup.
  void Kill() { process_->Kill(); }

  v1::Preset preset() const { return preset_; }
  bool sandboxed() const { return !call_dir_.empty(); }
  pid_t pid() const { return process_->pid(); }
  // The host directory holding the private /tmp (empty on the host).
  const std::string& call_dir() const { return call_dir_; }

 private:
  friend class ShellRunner;
  SandboxedProcess(std::unique_ptr<KeptProcess> process, v1::Preset preset,
                   std::string call_dir, std::vector<linux_sandbox::CoveredPath> masks,
                   std::unique_ptr<ReadOnlyHolds> held_read_only)
      : process_(std::move(process)),
        preset_(preset),
        call_dir_(std::move(call_dir)),
        masks_(std::move(masks)),
        held_read_only_(std::move(held_read_only)) {}

  std::unique_ptr<KeptProcess> process_;
  v1::Preset preset_;
  std::string call_dir_;
  std::vector<linux_sandbox::CoveredPath> masks_;
  std::unique_ptr<ReadOnlyHolds> held_read_only_;  // released by Stop()
  bool stopped_ = false;
};

class ShellRunner {
 public:
  // At most this many full-output files of this runner exist at once: the oldest is removed
  // when a newer one is made.
  static constexpr size_t kKeptFullOutputs = 16;
  // The longest command line: bash gets it as one argument, and the kernel takes at most
  // 128 KiB (with its NUL) for one.
  static constexpr size_t kMaxCommandBytes = 128 * 1024 - 1;

  // INVALID_ARGUMENT for a command that holds a NUL byte, TOO_LARGE past kMaxCommandBytes:
  // checked before anything is asked or run.
  [[nodiscard]] static absl::Status CheckCommand(absl::string_view command);

  // Prepares the runtime and output directories and sweeps call directories and full-output
  // files left by dead brokers.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ShellRunner>> Create(
      ShellRunnerOptions options);
  // Removes the full-output files this runner made.
  ~ShellRunner();
  ShellRunner(const ShellRunner&) = delete;
  ShellRunner& operator=(const ShellRunner&) = delete;

  // Runs one call to completion. A result for every command that ran, whatever its status:
  // exit_code (128 + signal when killed), term_signal, the output (truncated past the limit,
  // the whole of it in `full_output`, a file in output_dir() kept until kKeptFullOutputs newer
  // ones exist or the runner goes), timed_out (the tree was killed), preset. Errors, with
  // wire codes: OUTSIDE_SANDBOX (cwd), SANDBOX_UNAVAILABLE (nothing ran), CANCELLED (the
  // token fired; the tree was killed), INVALID_ARGUMENT.
  [[nodiscard]] absl::StatusOr<v1::BashResult> Run(const ShellRequest& request,
                                                   CancelToken* cancel = nullptr);

  // Starts a long-lived process and returns once it runs (after the sandbox's preflight said
  // "ready"). Errors: OUTSIDE_SANDBOX (cwd), SANDBOX_UNAVAILABLE (nothing runs; never an
  // unsandboxed fallback), INVALID_ARGUMENT, NOT_FOUND (a host program under
  // danger-full-access).
  [[nodiscard]] absl::StatusOr<std::unique_ptr<SandboxedProcess>> Start(
      const ServerProcessRequest& request);

  // Broker state: hidden from sandboxes and refused to the file tools.
  const std::string& runtime_dir() const { return runtime_dir_; }
  // Full-output files: not broker state; the agent pages through them with the read tool.
  const std::string& output_dir() const { return output_dir_; }

 private:
  ShellRunner(ShellRunnerOptions options, std::string runtime_dir, std::string output_dir)
      : options_(std::move(options)),
        runtime_dir_(std::move(runtime_dir)),
        output_dir_(std::move(output_dir)) {}

  absl::StatusOr<TreeRunResult> RunSandboxed(const ShellRequest& request,
                                             const std::string& cwd, CancelToken* cancel);
  absl::StatusOr<TreeRunResult> RunOnHost(const ShellRequest& request, CancelToken* cancel);
  absl::StatusOr<std::string> SandboxCwd(const ShellRequest& request);
  // Also takes the call's holds on the read-only entries that need one (ReadOnlyHolds).
  absl::Status LayOutSandbox(const ShellRequest& request, const std::string& cwd,
                             const CallDir* call, linux_sandbox::ShellSandboxLayout& layout,
                             ReadOnlyHolds& holds);
  absl::StatusOr<std::unique_ptr<SandboxedProcess>> StartOnHost(
      const ServerProcessRequest& request);

  // Records a full-output file handed out in a result; removes the ones past the bound.
  void KeepFullOutput(const std::string& path);

  // A sandboxed call's cleanup (its masks' release, its read-only holds, its call directory),
  // deferred until its reply is sent (after_reply.h) and run once: by the call's thread then,
  // or earlier by a command about to run on the host, which must find the workspace without
  // the mount points (a later sandboxed call needs no such thing: it masks them again).
  struct Cleanup {
    std::once_flag once;
    std::function<void()> work;
    void Run() { std::call_once(once, work); }
  };
  void DeferCleanup(std::function<void()> work);
  // Runs every cleanup still pending (waits for one running on another thread).
  void RunPendingCleanups();

  ShellRunnerOptions options_;
  std::string runtime_dir_;
  std::string output_dir_;
  std::mutex full_outputs_mutex_;
  std::deque<std::string> full_outputs_;  // oldest first
  std::mutex cleanups_mutex_;
  std::vector<std::weak_ptr<Cleanup>> cleanups_;  // guarded by cleanups_mutex_; pending ones
};

// The environment a sandboxed command sees: PATH, HOME, LANG, LC_ALL, TERM, TZ from `host`
// ("NAME=value" entries) when set (PATH defaults to a system path), and TMPDIR, TMP, TEMP
// set to /tmp (the private temp directory).
std::vector<std::pair<std::string, std::string>> SandboxEnvironment(
    const std::vector<std::string>& host);

}  // namespace airlock::broker

#endif  // BROKER_EXEC_SHELL_RUNNER_H_
