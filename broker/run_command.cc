#include "broker/run_command.h"

#include <sys/random.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "broker/dispatcher.h"
#include "broker/fs/file_tools.h"
#include "broker/policy_options.h"
#include "broker/server.h"
#include "broker/wire_error.h"
#include "broker/worker_launcher.h"
#include "platform/base/errno_status.h"
#include "platform/base/status_macros.h"
#include "platform/ipc/connector.h"
#include "platform/process/spawn.h"

extern char** environ;

namespace airlock::broker {
namespace {

// Exit status of `airlock run` when the broker itself cannot start.
constexpr int kBrokerFailure = 125;

struct RunOptions {
  PolicyOptions policy;
  std::string approver;
  int approval_timeout_seconds = 300;
  std::string control_socket;
  std::string audit_log;
  std::string audit_key_file;
  std::string session;
  std::string worker_network = "host";
  WorkerConfinementOptions worker;
  std::vector<std::string> agent_command;
};

absl::StatusOr<std::string> NewSessionId() {
  unsigned char bytes[12];
  if (::getrandom(bytes, sizeof(bytes), 0) != static_cast<ssize_t>(sizeof(bytes))) {
    return LastErrnoStatus("getrandom");
  }
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(bytes), sizeof(bytes)));
}

absl::StatusOr<v1::Preset> ParsePreset(const std::string& name) {
  if (name.empty() || name == "read-only") return v1::PRESET_READ_ONLY;
  if (name == "workspace-write") return v1::PRESET_WORKSPACE_WRITE;
  if (name == "danger-full-access") return v1::PRESET_DANGER_FULL_ACCESS;
  return absl::InvalidArgumentError(absl::StrCat("unknown preset '", name, "'"));
}

v1::Mode DefaultModeFor(v1::Preset preset) {
  return preset == v1::PRESET_DANGER_FULL_ACCESS ? v1::MODE_NEVER : v1::MODE_ON_REQUEST;
}

absl::StatusOr<v1::Mode> ParseMode(const std::string& name, v1::Preset preset) {
  if (name.empty()) return DefaultModeFor(preset);
  if (name == "default") return v1::MODE_DEFAULT;
  if (name == "accept-edits") return v1::MODE_ACCEPT_EDITS;
  if (name == "on-request") return v1::MODE_ON_REQUEST;
  if (name == "never") return v1::MODE_NEVER;
  return absl::InvalidArgumentError(absl::StrCat("unknown mode '", name, "'"));
}

absl::StatusOr<std::string> CanonicalDirectory(const std::string& path) {
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) return LastErrnoStatus("resolve", path);
  return std::string(resolved);
}

absl::StatusOr<int> Run(const RunOptions& options) {
  AIRLOCK_ASSIGN_OR_RETURN(v1::Preset preset, ParsePreset(options.policy.preset));
  AIRLOCK_ASSIGN_OR_RETURN(v1::Mode mode, ParseMode(options.policy.mode, preset));
  const std::string workspace_option =
      options.policy.workspace.empty() ? std::string(".") : options.policy.workspace;
  AIRLOCK_ASSIGN_OR_RETURN(std::string workspace, CanonicalDirectory(workspace_option));
  AIRLOCK_ASSIGN_OR_RETURN(std::string session_id, NewSessionId());

  v1::Context context;
  context.set_session_id(session_id);
  context.set_preset(preset);
  context.set_mode(mode);
  context.add_roots(workspace);
  for (const std::string& root : options.policy.roots) {
    AIRLOCK_ASSIGN_OR_RETURN(std::string canonical, CanonicalDirectory(root));
    context.add_roots(canonical);
  }
  context.set_shell_network(preset == v1::PRESET_DANGER_FULL_ACCESS ? v1::NETWORK_POLICY_HOST
                                                                    : v1::NETWORK_POLICY_NONE);
  context.set_worker_network(options.worker_network == "none" ? v1::NETWORK_POLICY_NONE
                                                              : v1::NETWORK_POLICY_HOST);
  context.set_policy_epoch(1);

  FileToolsOptions file_options;
  file_options.roots.assign(context.roots().begin(), context.roots().end());
  file_options.protected_paths = options.policy.protect;
  file_options.reads_confined_to_roots = options.policy.read_scope == "workspace";
  AIRLOCK_ASSIGN_OR_RETURN(std::unique_ptr<FileTools> files,
                           FileTools::Create(std::move(file_options)));

  auto current_context = [&context] { return context; };
  Dispatcher dispatcher(*files, current_context);
  Server server(dispatcher, current_context);

  AIRLOCK_ASSIGN_OR_RETURN(ipc::ConnectorPair connector, ipc::MakeConnector());
  std::cerr << "airlock: session " << session_id << " (preset " << PresetName(preset) << ", mode "
            << ModeName(mode) << ", workspace " << workspace << ")\n";

  WorkerLaunchOptions launch;
  launch.argv = options.agent_command;
  for (char** entry = environ; *entry != nullptr; ++entry) launch.environment.emplace_back(*entry);
  launch.connector_fd = connector.worker_end.get();
  launch.session_id = session_id;
  launch.working_directory = workspace;
  launch.isolate_network = options.worker_network == "none";
  launch.confinement = options.worker;
  for (const std::string& secret : {options.audit_key_file, options.audit_log}) {
    if (!secret.empty()) launch.hidden_paths.push_back(secret);
  }
  AIRLOCK_ASSIGN_OR_RETURN(pid_t worker, LaunchWorker(launch));
  // Only the worker tree holds the worker end now: the acceptor sees a hang-up once it is gone.
  connector.worker_end.reset();
  server.Start(std::move(connector.broker_end));

  AIRLOCK_ASSIGN_OR_RETURN(ExitStatus status, WaitForExit(worker));
  server.Stop();
  return status.ShellCode();
}

}  // namespace

void AddRunCommand(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* command =
      app.add_subcommand("run", "Start the broker and run AGENT_CMD as the confined worker");
  AddPolicyOptions(command, &options->policy);
  command->add_option("--approver", options->approver,
                      "tty | socket:PATH | command:PROG | none (default: tty with a terminal)");
  command->add_option("--approval-timeout", options->approval_timeout_seconds,
                      "Seconds before an unanswered approval is denied (default 300)")
      ->check(CLI::PositiveNumber);
  command->add_option("--control-socket", options->control_socket,
                      "Listen for `airlock ctl` on this Unix socket");
  command->add_option("--audit-log", options->audit_log, "Audit log file");
  command->add_option("--audit-key-file", options->audit_key_file, "Audit key file (mode 0600)");
  command->add_option("--session", options->session, "Resume this session");
  command->add_option("--worker-network", options->worker_network, "host | none")
      ->check(CLI::IsMember({"host", "none"}));
  AddWorkerConfinementOptions(command, &options->worker);
  command->add_option("agent", options->agent_command, "The agent command, after --")
      ->required();
  command->callback([options, &exit_code] {
    absl::StatusOr<int> status = Run(*options);
    if (!status.ok()) {
      std::cerr << "airlock run: refused to start: " << status.status().message() << "\n";
      exit_code = kBrokerFailure;
      return;
    }
    exit_code = *status;
  });
}

}  // namespace airlock::broker
