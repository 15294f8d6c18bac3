// The shell runner behind the broker's bash tool and `airlock exec` (SPEC §6): each call gets
// a fresh bubblewrap sandbox with its own private temp directory, or — for
// danger-full-access and approved escalations — runs on the host with the host environment.
// Both paths share the timeout, cancellation and output handling. The runner never decides
// policy: the caller says which preset applies and whether the call was escalated.
#ifndef BROKER_EXEC_SHELL_RUNNER_H_
#define BROKER_EXEC_SHELL_RUNNER_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "airlock/v1/wire.pb.h"
#include "broker/exec/protection_plan.h"
#include "platform/process/process_tree.h"

namespace airlock::broker {

struct ShellRunnerOptions {
  // Empty: $XDG_RUNTIME_DIR/airlock or /tmp/airlock-<uid> (see runtime_dir.h).
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
};

class ShellRunner {
 public:
  // Prepares the runtime directory and sweeps call directories left by dead brokers.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ShellRunner>> Create(
      ShellRunnerOptions options);

  // Runs one call to completion. A result for every command that ran, whatever its status:
  // exit_code (128 + signal when killed), term_signal, the output (truncated past the limit,
  // the whole of it in `full_output`), timed_out (the tree was killed), preset. Errors, with
  // wire codes: OUTSIDE_SANDBOX (cwd), SANDBOX_UNAVAILABLE (nothing ran), CANCELLED (the
  // token fired; the tree was killed), INVALID_ARGUMENT.
  [[nodiscard]] absl::StatusOr<v1::BashResult> Run(const ShellRequest& request,
                                                   CancelToken* cancel = nullptr);

  const std::string& runtime_dir() const { return runtime_dir_; }

 private:
  ShellRunner(ShellRunnerOptions options, std::string runtime_dir)
      : options_(std::move(options)), runtime_dir_(std::move(runtime_dir)) {}

  absl::StatusOr<TreeRunResult> RunSandboxed(const ShellRequest& request,
                                             const std::string& cwd, CancelToken* cancel);
  absl::StatusOr<TreeRunResult> RunOnHost(const ShellRequest& request, CancelToken* cancel);

  ShellRunnerOptions options_;
  std::string runtime_dir_;
};

// The environment a sandboxed command sees: PATH, HOME, LANG, LC_ALL, TERM, TZ from `host`
// ("NAME=value" entries) when set (PATH defaults to a system path), and TMPDIR, TMP, TEMP
// set to /tmp (the private temp directory).
std::vector<std::pair<std::string, std::string>> SandboxEnvironment(
    const std::vector<std::string>& host);

}  // namespace airlock::broker

#endif  // BROKER_EXEC_SHELL_RUNNER_H_
