#include "broker/run_command.h"

#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "airlock/v1/control.pb.h"
#include "broker/approval/approver.h"
#include "platform/base/canonical_path.h"
#include "broker/audit/audit_key.h"
#include "broker/audit/audit_log.h"
#include "broker/control/control_server.h"
#include "broker/dispatcher.h"
#include "broker/exec/shell_runner.h"
#include "broker/policy/policy.h"
#include "broker/policy_state.h"
#include "broker/session/session_store.h"
#include "broker/session/settings.h"
#include "broker/fs/file_tools.h"
#include "broker/policy_options.h"
#include "broker/gateway/tool_config.h"
#include "broker/server.h"
#include "broker/tool_gateway.h"
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
  int approval_timeout_seconds = 0;  // 0: settings.json, else 300
  std::string control_socket;
  std::string audit_log;
  std::string audit_key_file;
  std::string session;
  std::string worker_network = "host";
  std::string tools_file;  // empty: $AIRLOCK_HOME/tools.json when present
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

absl::StatusOr<std::string> CanonicalDirectory(const std::string& path) {
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) return LastErrnoStatus("resolve", path);
  return std::string(resolved);
}

std::string CurrentDirectory() {
  char cwd[PATH_MAX];
  return ::getcwd(cwd, sizeof(cwd)) != nullptr ? std::string(cwd) : std::string();
}

absl::Status EnsurePrivateDirectory(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return LastErrnoStatus("mkdir", dir);
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) return LastErrnoStatus("stat", dir);
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
    return absl::FailedPreconditionError(
        absl::StrCat(dir, " must be a directory owned by this user"));
  }
  return absl::OkStatus();
}

// The first nonempty of the command line, settings.json and the built-in default.
std::string FirstOf(const std::string& option, const std::string& setting,
                    const std::string& builtin = {}) {
  if (!option.empty()) return option;
  if (!setting.empty()) return setting;
  return builtin;
}

// Everything `airlock run` holds while the worker runs, in construction order (members are
// destroyed in reverse: the servers stop before the services they use).
struct Broker {
  std::string home;
  std::string session_id;
  std::unique_ptr<SessionStore> session;
  std::unique_ptr<audit::AuditLog> audit;
  std::unique_ptr<FileTools> files;
  std::unique_ptr<ShellRunner> shell;
  std::unique_ptr<Approver> approver;
  std::unique_ptr<PolicyState> policy;
  std::unique_ptr<ToolGateway> tools;
  std::unique_ptr<Dispatcher> dispatcher;
  std::unique_ptr<Server> server;
  std::unique_ptr<ControlServer> control;
};

v1::ControlResponse HandleControl(Broker& broker, const v1::ControlRequest& request) {
  v1::ControlResponse response;
  response.set_ok(true);
  if (request.has_set_preset()) {
    absl::StatusOr<v1::Preset> preset = ParsePresetName(request.set_preset());
    absl::StatusOr<v1::Context> changed =
        preset.ok() ? broker.policy->ChangePreset(
                          *preset,
                          [&broker](const v1::Context& next) {
                            return broker.session->RecordContextIfChanged(SnapshotOfContext(next))
                                .status();
                          },
                          [&broker](const v1::Context& next) {
                            // No MCP server keeps the old preset's authority.
                            if (broker.tools != nullptr) {
                              broker.tools->StopServersBefore(next.policy_epoch());
                            }
                            v1::Event event;
                            *event.mutable_permission_changed()->mutable_context() = next;
                            broker.server->Broadcast(event);
                          })
                    : absl::StatusOr<v1::Context>(
                          WireError(v1::INVALID_ARGUMENT, preset.status().message()));
    audit::AuditRecord record;
    record.event = audit::AuditEvent::kPresetChanged;
    record.preset = request.set_preset();
    record.decision = changed.ok() ? "changed" : "refused";
    if (!changed.ok()) {
      record.code = std::string(ErrorCodeName(WireCodeOf(changed.status())));
      record.detail = std::string(changed.status().message());
    } else {
      record.policy_epoch = changed->policy_epoch();
    }
    (void)broker.audit->Append(record);
    if (!changed.ok()) {
      response.set_ok(false);
      response.set_code(WireCodeOf(changed.status()));
      response.set_message(std::string(changed.status().message()));
    } else {
      response.set_message(absl::StrCat("preset changed to ", PresetName(changed->preset())));
    }
  } else if (request.has_disable_mcp_server()) {
    const std::string& server = request.disable_mcp_server();
    const absl::Status disabled =
        broker.tools != nullptr
            ? broker.tools->DisableServer(server)
            : WireError(v1::NOT_FOUND, "no MCP servers are declared (no tools.json)");
    audit::AuditRecord record;
    record.event = audit::AuditEvent::kDecision;
    record.tool = "mcp";
    record.target = server;
    record.decision = disabled.ok() ? "mcp-server-disabled" : "refused";
    record.rule = "operator:mcp-disable";
    record.detail = disabled.ok() ? absl::StrCat("every later call to MCP server ", server,
                                                 " is refused")
                                  : std::string(disabled.message());
    (void)broker.audit->Append(record);
    if (!disabled.ok()) {
      response.set_ok(false);
      response.set_code(WireCodeOf(disabled));
      response.set_message(std::string(disabled.message()));
    } else {
      response.set_message(absl::StrCat("MCP server ", server, " disabled"));
    }
  } else if (!request.has_status()) {
    response.set_ok(false);
    response.set_code(v1::INVALID_ARGUMENT);
    response.set_message("unsupported control request");
  }
  *response.mutable_context() = broker.policy->CurrentContext();
  response.set_calls_in_flight(broker.policy->executing());
  return response;
}

absl::StatusOr<int> Run(const RunOptions& options) {
  Broker broker;
  AIRLOCK_ASSIGN_OR_RETURN(std::string home, audit::ResolveAirlockHome());
  // Canonical (a relative $AIRLOCK_HOME, a $HOME reached through a link): it is hidden from
  // every sandbox by mounting over exactly this path.
  AIRLOCK_ASSIGN_OR_RETURN(broker.home, CanonicalMaybeMissing(home, CurrentDirectory()));
  AIRLOCK_RETURN_IF_ERROR(EnsurePrivateDirectory(broker.home));
  AIRLOCK_ASSIGN_OR_RETURN(v1::Settings settings, LoadSettings(broker.home + "/settings.json"));
  const std::string sessions_dir = broker.home + "/sessions";

  // The session: resumed (its recorded preset) or new.
  std::string recorded_preset;
  if (!options.session.empty()) {
    AIRLOCK_ASSIGN_OR_RETURN(broker.session, SessionStore::Resume(sessions_dir, options.session));
    broker.session_id = options.session;
    recorded_preset = broker.session->RecordedPreset();
  } else {
    AIRLOCK_ASSIGN_OR_RETURN(broker.session_id, NewSessionId());
  }

  // Precedence: command line > resumed session's recorded preset > settings > read-only.
  const std::string preset_name =
      FirstOf(options.policy.preset, FirstOf(recorded_preset, settings.permission_preset()),
              "read-only");
  const std::string workspace_option =
      options.policy.workspace.empty() ? std::string(".") : options.policy.workspace;
  AIRLOCK_ASSIGN_OR_RETURN(std::string workspace, CanonicalDirectory(workspace_option));
  // The worker sees a fresh /dev with its private scratch directory at /dev/shm: a workspace
  // there would not exist in its view (refused here, not as an obscure bwrap chdir failure).
  if (workspace == "/dev" || absl::StartsWith(workspace, "/dev/")) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the workspace ", workspace, " lies under /dev, which the confined worker sees fresh "
        "(its private scratch directory is /dev/shm); use a workspace elsewhere"));
  }
  PolicyBuilder builder;
  builder.SetPresetName(preset_name)
      .SetModeName(FirstOf(options.policy.mode, settings.mode()))
      .SetEditTools(FirstOf(options.policy.edit_tools,
                            absl::StrJoin(settings.edit_tools(), ","), "write,edit"))
      .SetOutsideWorkspaceName(FirstOf(options.policy.outside_workspace,
                                       settings.outside_workspace(), "deny"))
      .SetReadScopeName(FirstOf(options.policy.read_scope, settings.read_scope(), "any"))
      .AllowUnixSockets(options.policy.allow_unix_sockets)
      .AddRoot(workspace);
  std::vector<std::string> roots = {workspace};
  for (const std::string& root : options.policy.roots) {
    AIRLOCK_ASSIGN_OR_RETURN(std::string canonical, CanonicalDirectory(root));
    builder.AddRoot(canonical);
    roots.push_back(canonical);
  }
  // Relative ones against the workspace; canonical, so that the shell's mounts and the file
  // tools' fences both find them when given through a link.
  std::vector<std::string> requested_protect(settings.protect().begin(),
                                             settings.protect().end());
  requested_protect.insert(requested_protect.end(), options.policy.protect.begin(),
                           options.policy.protect.end());
  std::vector<std::string> protect;
  for (const std::string& path : requested_protect) {
    absl::StatusOr<std::string> canonical = CanonicalMaybeMissing(path, workspace);
    if (!canonical.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("protected path: ", canonical.status().message()));
    }
    protect.push_back(*std::move(canonical));
  }
  for (const std::string& path : protect) builder.AddProtectedPath(path);
  AIRLOCK_ASSIGN_OR_RETURN(Policy policy, builder.Build());

  if (broker.session == nullptr) {
    AIRLOCK_ASSIGN_OR_RETURN(broker.session,
                             SessionStore::Create(sessions_dir, broker.session_id,
                                                  std::string(PresetName(policy.preset())),
                                                  workspace));
  }

  // The audit log: always on. The key from --audit-key-file, AIRLOCK_AUDIT_KEY, or the default.
  audit::AuditKeyOptions key_options;
  key_options.key_file = options.audit_key_file;
  // Taken out of the environment, so that nothing the broker starts can inherit it.
  key_options.env_key = audit::TakeAuditKeyFromEnvironment();
  key_options.airlock_home = broker.home;
  AIRLOCK_ASSIGN_OR_RETURN(audit::AuditKey key, audit::LoadOrCreateAuditKey(key_options));
  std::string audit_path = options.audit_log;
  if (audit_path.empty()) {
    AIRLOCK_RETURN_IF_ERROR(EnsurePrivateDirectory(broker.home + "/audit"));
    audit_path = absl::StrCat(broker.home, "/audit/", broker.session_id, ".jsonl");
  }
  AIRLOCK_ASSIGN_OR_RETURN(broker.audit,
                           audit::AuditLog::Open(audit_path, key, broker.session_id));
  if (broker.audit->open_outcome() == audit::OpenOutcome::kRecovered) {
    std::cerr << "airlock: audit: " << broker.audit->recovery_detail() << "\n";
  }

  // Broker state no tool, shell or worker may touch (SPEC §5, §9), canonical (bwrap mounts
  // over exactly these paths): the home, the log and key wherever they are, and the
  // directories of the control and approval sockets — a sandbox allowed Unix sockets could
  // otherwise answer its own approvals or change the preset.
  std::vector<std::string> requested_secrets = {broker.home, audit_path};
  if (!key.path.empty()) requested_secrets.push_back(key.path);
  const std::string approver_spec = FirstOf(options.approver, settings.approver());
  for (const std::string& socket :
       {options.control_socket,
        absl::StartsWith(approver_spec, "socket:") ? approver_spec.substr(7) : std::string()}) {
    const size_t slash = socket.rfind('/');
    if (socket.empty()) continue;
    requested_secrets.push_back(slash == std::string::npos ? std::string(".")
                                : slash == 0               ? std::string("/")
                                                           : socket.substr(0, slash));
  }
  std::vector<std::string> secrets;
  for (const std::string& path : requested_secrets) {
    AIRLOCK_ASSIGN_OR_RETURN(std::string canonical,
                             CanonicalMaybeMissing(path, CurrentDirectory()));
    secrets.push_back(std::move(canonical));
  }

  ShellRunnerOptions shell_options;
  shell_options.hidden_paths = secrets;
  AIRLOCK_ASSIGN_OR_RETURN(broker.shell, ShellRunner::Create(std::move(shell_options)));
  secrets.push_back(broker.shell->runtime_dir());

  FileToolsOptions file_options;
  file_options.roots = roots;
  file_options.protected_paths = protect;
  file_options.broker_secret_paths = secrets;
  file_options.reads_confined_to_roots = policy.read_scope() == ReadScope::kWorkspace;
  AIRLOCK_ASSIGN_OR_RETURN(broker.files, FileTools::Create(std::move(file_options)));

  AIRLOCK_ASSIGN_OR_RETURN(broker.approver,
                           MakeApprover(FirstOf(options.approver, settings.approver())));
  const int timeout_seconds =
      options.approval_timeout_seconds > 0
          ? options.approval_timeout_seconds
          : (settings.approval_timeout_seconds() > 0
                 ? static_cast<int>(settings.approval_timeout_seconds())
                 : 300);

  v1::Context base;
  base.set_session_id(broker.session_id);
  base.set_worker_network(options.worker_network == "none" ? v1::NETWORK_POLICY_NONE
                                                           : v1::NETWORK_POLICY_HOST);
  broker.policy = std::make_unique<PolicyState>(std::move(policy), base);
  if (!options.session.empty()) {
    // A resumed session records the context it continues under (an explicit --preset shows).
    AIRLOCK_RETURN_IF_ERROR(
        broker.session->RecordContextIfChanged(SnapshotOfContext(broker.policy->CurrentContext()))
            .status());
  }

  // Declared tools: --tools FILE, else $AIRLOCK_HOME/tools.json when present.
  {
    const std::string tools_path =
        options.tools_file.empty() ? broker.home + "/tools.json" : options.tools_file;
    absl::StatusOr<v1::ToolsConfig> tools = LoadToolsConfig(tools_path);
    if (tools.ok()) {
      broker.tools = std::make_unique<ToolGateway>(std::move(*tools), *broker.shell,
                                                   absl::Minutes(10));
    } else if (!absl::IsNotFound(tools.status()) || !options.tools_file.empty()) {
      return tools.status();
    }
  }

  BrokerServices services;
  services.files = broker.files.get();
  services.shell = broker.shell.get();
  services.approver = broker.approver.get();
  services.approval_timeout = absl::Seconds(timeout_seconds);
  services.audit = broker.audit.get();
  services.session = broker.session.get();
  services.policy = broker.policy.get();
  services.tools = broker.tools.get();
  broker.dispatcher = std::make_unique<Dispatcher>(services);
  PolicyState* policy_state = broker.policy.get();
  broker.server = std::make_unique<Server>(
      *broker.dispatcher, [policy_state] { return policy_state->CurrentContext(); });
  if (!options.control_socket.empty()) {
    AIRLOCK_ASSIGN_OR_RETURN(
        broker.control,
        ControlServer::Start(options.control_socket, [&broker](const v1::ControlRequest& request) {
          return HandleControl(broker, request);
        }));
  }

  AIRLOCK_ASSIGN_OR_RETURN(ipc::ConnectorPair connector, ipc::MakeConnector());
  const v1::Context context = broker.policy->CurrentContext();
  std::cerr << "airlock: session " << broker.session_id << " (preset "
            << PresetName(context.preset()) << ", mode " << ModeName(context.mode())
            << ", workspace " << workspace << ", approver " << broker.approver->Describe()
            << ", audit log " << audit_path << ")\n";

  WorkerLaunchOptions launch;
  launch.argv = options.agent_command;
  for (char** entry = environ; *entry != nullptr; ++entry) launch.environment.emplace_back(*entry);
  launch.connector_fd = connector.worker_end.get();
  launch.session_id = broker.session_id;
  launch.working_directory = workspace;
  launch.isolate_network = options.worker_network == "none";
  launch.confinement = options.worker;
  launch.confinement.allow_unix_sockets = options.policy.allow_unix_sockets;
  launch.hidden_paths = secrets;

  audit::AuditRecord start;
  start.event = audit::AuditEvent::kRunStart;
  start.preset = std::string(PresetName(context.preset()));
  start.mode = std::string(ModeName(context.mode()));
  start.target = workspace;
  start.approver = broker.approver->Describe();
  start.policy_epoch = context.policy_epoch();
  start.detail = absl::StrCat(options.session.empty() ? "new session" : "resumed session",
                              "; agent: ", absl::StrJoin(options.agent_command, " "));
  AIRLOCK_RETURN_IF_ERROR(broker.audit->Append(start).status());

  absl::StatusOr<WorkerLaunch> worker = LaunchConfinedWorker(launch);
  if (!worker.ok()) {
    audit::AuditRecord failed;
    failed.event = audit::AuditEvent::kRunEnd;
    failed.decision = "refused";
    failed.detail = std::string(worker.status().message());
    (void)broker.audit->Append(failed);
    (void)broker.audit->Seal("the worker could not be started");
    return worker.status();
  }
  std::cerr << "airlock: " << DescribeWorkerLaunch(*worker) << "\n";
  {
    audit::AuditRecord confined;
    confined.event = audit::AuditEvent::kRunStart;
    confined.decision = "worker-started";
    confined.detail = absl::StrCat(DescribeWorkerLaunch(*worker), "; layers active: ",
                                   absl::StrJoin(worker->active, ","));
    AIRLOCK_RETURN_IF_ERROR(broker.audit->Append(confined).status());
  }
  // Only the worker tree holds the worker end now: the acceptor sees a hang-up once it is gone.
  connector.worker_end.reset();
  broker.server->Start(std::move(connector.broker_end));

  AIRLOCK_ASSIGN_OR_RETURN(ExitStatus status, WaitForExit(worker->pid));
  broker.control.reset();
  broker.server->Stop();
  audit::AuditRecord end;
  end.event = audit::AuditEvent::kRunEnd;
  end.exit_code = status.ShellCode();
  end.decision = "exited";
  AIRLOCK_RETURN_IF_ERROR(broker.audit->Append(end).status());
  AIRLOCK_RETURN_IF_ERROR(broker.audit->Seal());
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
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            double seconds = 0;
            if (absl::SimpleAtod(value, &seconds) && seconds > 0 && seconds <= 1e9) return "";
            return "--approval-timeout must be a number of seconds above 0 (at most 1e9), not '" +
                   value + "'";
          },
          "SECONDS"));
  command->add_option("--control-socket", options->control_socket,
                      "Listen for `airlock ctl` on this Unix socket");
  command->add_option("--audit-log", options->audit_log, "Audit log file");
  command->add_option("--audit-key-file", options->audit_key_file, "Audit key file (mode 0600)");
  command->add_option("--session", options->session, "Resume this session");
  command->add_option("--worker-network", options->worker_network, "host | none")
      ->check(CLI::IsMember({"host", "none"}));
  command->add_option("--tools", options->tools_file,
                      "Declared command tools and MCP servers (JSON; default "
                      "$AIRLOCK_HOME/tools.json when present)");
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
