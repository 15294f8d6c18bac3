#include "broker/exec/exec_command.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "broker/exec/shell_runner.h"
#include "broker/policy_options.h"
#include "broker/session/settings.h"
#include "broker/wire_error.h"
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

// A protected path need not exist: its nearest existing ancestor is resolved and the rest
// appended, so a later creation is still covered. A relative path is taken against `base`.
std::string CanonicalMaybeMissing(const std::string& path, const std::string& base) {
  std::string absolute = path;
  if (absolute.empty() || absolute[0] != '/') absolute = absl::StrCat(base, "/", path);
  std::string suffix;
  std::string existing = absolute;
  while (true) {
    absl::StatusOr<std::string> canonical = CanonicalPath(existing);
    if (canonical.ok()) return *canonical == "/" ? "/" + suffix : *canonical + (suffix.empty() ? "" : "/" + suffix);
    const size_t slash = existing.rfind('/');
    if (slash == std::string::npos || slash == 0) return absolute;
    const std::string name = existing.substr(slash + 1);
    suffix = suffix.empty() ? name : name + "/" + suffix;
    existing = existing.substr(0, slash);
  }
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
  const std::string airlock_home = CanonicalMaybeMissing(home, request.cwd);
  request.protected_paths.push_back(airlock_home);
  for (const std::string& path : settings.protect()) {
    request.protected_paths.push_back(CanonicalMaybeMissing(path, workspace));
  }
  for (const std::string& path : options.policy.protect) {
    request.protected_paths.push_back(CanonicalMaybeMissing(path, workspace));
  }

  ShellRunnerOptions runner_options;
  runner_options.hidden_paths.push_back(airlock_home + "/audit.key");
  if (const char* key = std::getenv("AIRLOCK_AUDIT_KEY_FILE"); key != nullptr && key[0] == '/') {
    runner_options.hidden_paths.push_back(key);
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
