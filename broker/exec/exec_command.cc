#include "broker/exec/exec_command.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "broker/exec/shell_runner.h"
#include "broker/policy_options.h"
#include "broker/session/settings.h"
#include "broker/wire_error.h"
#include "platform/base/canonical_path.h"
#include "platform/base/errno_status.h"
#include "platform/base/status_macros.h"

namespace airlock::broker {
namespace {

constexpr int kExitTimeout = 124;
constexpr int kExitUnavailable = 125;

struct ExecOptions {
  PolicyOptions policy;
  double timeout_seconds = 0;
  std::vector<std::string> command;
};

absl::StatusOr<v1::Preset> ParseExecPreset(const std::string& name) {
  // `airlock exec` defaults to read-only (SPEC §4).
  if (name.empty() || name == "read-only") return v1::PRESET_READ_ONLY;
  if (name == "workspace-write") return v1::PRESET_WORKSPACE_WRITE;
  if (name == "danger-full-access") return v1::PRESET_DANGER_FULL_ACCESS;
  return WireError(v1::INVALID_ARGUMENT, absl::StrCat("unknown preset '", name, "'"));
}

absl::StatusOr<std::string> CanonicalPath(const std::string& path) {
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) return LastErrnoStatus("resolve", path);
  return std::string(resolved);
}

std::string AirlockHome() {
  const char* home = std::getenv("AIRLOCK_HOME");
  if (home != nullptr && home[0] != '\0') return home;
  const char* user_home = std::getenv("HOME");
  return absl::StrCat(user_home != nullptr ? user_home : "", "/.airlock");
}

absl::StatusOr<int> Exec(const ExecOptions& options) {
  const std::string home = AirlockHome();
  // What of settings.json applies to a one-shot command: the preset and the protected paths
  // (SPEC §10: the command line first, then settings, then read-only). An invalid file
  // refuses the command, as it refuses `airlock run`.
  AIRLOCK_ASSIGN_OR_RETURN(v1::Settings settings, LoadSettings(home + "/settings.json"));
  AIRLOCK_ASSIGN_OR_RETURN(
      v1::Preset preset,
      ParseExecPreset(options.policy.preset.empty() ? settings.permission_preset()
                                                    : options.policy.preset));
  ShellRequest request;
  request.preset = preset;
  request.argv = options.command;
  request.capture_output = false;
  request.allow_unix_sockets = options.policy.allow_unix_sockets;
  // Clamped before converting: a huge value must not overflow (about 31 years is "none").
  constexpr double kMaxTimeoutSeconds = 1e9;
  const double seconds = std::min(options.timeout_seconds, kMaxTimeoutSeconds);
  request.timeout = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
  AIRLOCK_ASSIGN_OR_RETURN(
      std::string workspace,
      CanonicalPath(options.policy.workspace.empty() ? "." : options.policy.workspace));
  request.roots.push_back(workspace);
  for (const std::string& root : options.policy.roots) {
    AIRLOCK_ASSIGN_OR_RETURN(std::string canonical, CanonicalPath(root));
    request.roots.push_back(canonical);
  }
  AIRLOCK_ASSIGN_OR_RETURN(request.cwd, CanonicalPath("."));
  AIRLOCK_ASSIGN_OR_RETURN(const std::string airlock_home,
                           CanonicalMaybeMissing(home, request.cwd));
  request.protected_paths.push_back(airlock_home);
  std::vector<std::string> protect(settings.protect().begin(), settings.protect().end());
  protect.insert(protect.end(), options.policy.protect.begin(), options.policy.protect.end());
  for (const std::string& path : protect) {
    absl::StatusOr<std::string> canonical = CanonicalMaybeMissing(path, workspace);
    if (!canonical.ok()) {
      return WireError(v1::INVALID_ARGUMENT,
                       absl::StrCat("protected path: ", canonical.status().message()));
    }
    request.protected_paths.push_back(*std::move(canonical));
  }

  // The broker's storage is hidden from the command as from `airlock run`'s shells (sessions
  // and audit logs hold what earlier agents saw); only the key files when it holds a root.
  ShellRunnerOptions runner_options;
  const bool home_holds_a_root =
      std::any_of(request.roots.begin(), request.roots.end(), [&](const std::string& root) {
        return root == airlock_home || absl::StartsWith(root, airlock_home + "/");
      });
  runner_options.hidden_paths.push_back(home_holds_a_root ? airlock_home + "/audit.key"
                                                          : airlock_home);
  if (const char* key = std::getenv("AIRLOCK_AUDIT_KEY_FILE"); key != nullptr && key[0] != '\0') {
    AIRLOCK_ASSIGN_OR_RETURN(std::string canonical, CanonicalMaybeMissing(key, request.cwd));
    runner_options.hidden_paths.push_back(std::move(canonical));
  }
  absl::StatusOr<std::unique_ptr<ShellRunner>> runner =
      ShellRunner::Create(std::move(runner_options));
  if (!runner.ok()) {
    return WithRule(WireError(v1::SANDBOX_UNAVAILABLE, runner.status().message()),
                    "runtime-dir");
  }
  AIRLOCK_ASSIGN_OR_RETURN(v1::BashResult result, (*runner)->Run(request));
  if (result.timed_out()) {
    std::cerr << "airlock exec: timed out after " << options.timeout_seconds
              << "s; the command's process tree was killed (preset " << PresetName(preset)
              << ")\n";
    return kExitTimeout;
  }
  if (result.exit_code() != 0) {
    std::cerr << "airlock exec: command exited with status " << result.exit_code()
              << (result.term_signal() != 0
                      ? absl::StrCat(" (signal ", result.term_signal(), ")")
                      : std::string())
              << " (preset " << PresetName(preset) << ")\n";
  }
  return result.exit_code();
}

}  // namespace

void AddExecCommand(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<ExecOptions>();
  CLI::App* command =
      app.add_subcommand("exec", "Run one command in the shell sandbox (everything after --)");
  AddPolicyOptions(command, &options->policy);
  // One value per occurrence: a repeatable option must not swallow the `--` that starts the
  // command (CLI11 would then read the command's own options as ours).
  for (const char* repeatable : {"--root", "--protect"}) {
    command->get_option(repeatable)->allow_extra_args(false);
  }
  command->add_option("--timeout", options->timeout_seconds,
                      "Kill the command's whole process tree after SECONDS (exit 124)")
      ->check(CLI::NonNegativeNumber);
  command->add_option("command", options->command, "The command, after --")->required();
  command->callback([options, &exit_code] {
    absl::StatusOr<int> status = Exec(*options);
    if (!status.ok()) {
      std::cerr << "airlock exec: " << status.status().message() << "\n";
      // Nothing ran: the sandbox (or the request) was refused before the command started.
      exit_code = kExitUnavailable;
      return;
    }
    exit_code = *status;
  });
}

}  // namespace airlock::broker
