#include "broker/tool_gateway.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "broker/fs/digest.h"
#include "broker/gateway/argv_template.h"
#include "broker/wire_error.h"
#include "google/protobuf/util/json_util.h"
#include "platform/base/status_macros.h"

namespace airlock::broker {
namespace {

constexpr absl::Duration kDefaultMcpTimeout = absl::Seconds(60);
// How much of a call's arguments an approver is shown.
constexpr size_t kShownArgumentsBytes = 4096;

std::string Bounded(std::string text, size_t limit) {
  if (text.size() <= limit) return text;
  text.resize(limit);
  absl::StrAppend(&text, "… (truncated)");
  return text;
}

// "a 'b c'" — for display only; nothing is ever run through a shell.
std::string ShowArgv(const std::vector<std::string>& argv) {
  std::vector<std::string> shown;
  for (const std::string& arg : argv) {
    const bool plain = !arg.empty() && arg.find_first_of(" \t\n'\"\\$`;&|<>(){}*?!#~") ==
                                           std::string::npos;
    shown.push_back(plain ? arg : absl::StrCat("'", absl::StrReplaceAll(arg, {{"'", "'\\''"}}),
                                               "'"));
  }
  return absl::StrJoin(shown, " ");
}

absl::StatusOr<google::protobuf::Struct> ParseArguments(const v1::CallToolRequest& request) {
  google::protobuf::Struct arguments;
  if (request.arguments_json().size() > kMaxToolArgumentsBytes) {
    return WireError(v1::TOO_LARGE, absl::StrCat("call_tool ", request.name(), " refused: ",
                                                 "the arguments exceed ", kMaxToolArgumentsBytes,
                                                 " bytes"));
  }
  if (absl::StripAsciiWhitespace(request.arguments_json()).empty()) return arguments;
  const auto parsed = google::protobuf::util::JsonStringToMessage(request.arguments_json(),
                                                                  &arguments);
  if (!parsed.ok()) {
    return WireError(v1::INVALID_ARGUMENT,
                     absl::StrCat("call_tool ", request.name(),
                                  " refused: the arguments are not one JSON object (",
                                  parsed.ToString(), ")"));
  }
  return arguments;
}

std::string JoinedTargets(const std::vector<PathArgument>& paths) {
  std::vector<std::string> targets;
  for (const PathArgument& path : paths) targets.push_back(path.target.canonical_path);
  return absl::StrJoin(targets, ", ");
}

}  // namespace

ToolGateway::ToolGateway(v1::ToolsConfig config, ShellRunner& shell,
                         absl::Duration default_timeout)
    : config_(std::move(config)), shell_(shell), default_timeout_(default_timeout) {
  for (const v1::CommandTool& tool : config_.command_tools()) commands_[tool.name()] = &tool;
  for (const v1::McpServer& server : config_.mcp_servers()) {
    auto entry = std::make_unique<Server>();
    entry->config = &server;
    servers_[server.name()] = std::move(entry);
  }
}

ToolGateway::~ToolGateway() {
  for (auto& [name, server] : servers_) {
    std::lock_guard<std::mutex> lock(server->mutex);
    server->connection.reset();
  }
}

void ToolGateway::Grant(const std::string& tool, uint64_t epoch) {
  std::lock_guard<std::mutex> lock(state_mutex_);
  grants_[tool] = epoch;
}

bool ToolGateway::HasGrant(const std::string& tool, uint64_t epoch) const {
  std::lock_guard<std::mutex> lock(state_mutex_);
  auto it = grants_.find(tool);
  return it != grants_.end() && it->second == epoch;
}

bool ToolGateway::IsDisabled(const std::string& server) const {
  std::lock_guard<std::mutex> lock(state_mutex_);
  return disabled_.count(server) > 0;
}

absl::Status ToolGateway::DisableServer(const std::string& server) {
  auto it = servers_.find(server);
  if (it == servers_.end()) {
    return WireError(v1::NOT_FOUND,
                     absl::StrCat("no MCP server named '", server, "' is declared"));
  }
  {
    std::lock_guard<std::mutex> lock(state_mutex_);
    disabled_[server] = true;
  }
  // Stopped now unless a call holds it; that call's end stops it (RunMcp checks again).
  std::unique_lock<std::mutex> lock(it->second->mutex, std::try_to_lock);
  if (lock.owns_lock()) it->second->connection.reset();
  return absl::OkStatus();
}

void ToolGateway::StopServersBefore(uint64_t epoch) {
  {
    std::lock_guard<std::mutex> lock(state_mutex_);
    newest_epoch_ = std::max(newest_epoch_, epoch);
  }
  for (auto& [name, server] : servers_) {
    // Stopped now unless a call holds it; that call's end stops it (RunMcp checks again).
    std::unique_lock<std::mutex> lock(server->mutex, std::try_to_lock);
    if (lock.owns_lock() && server->connection != nullptr && server->epoch < epoch) {
      server->connection.reset();
      server->tools.clear();
    }
  }
}

void ToolGateway::StopIfStale(Server& server, const std::string& name) {
  bool outdated;
  {
    std::lock_guard<std::mutex> state(state_mutex_);
    outdated = server.epoch < newest_epoch_;
  }
  if (IsDisabled(name) || outdated) {
    server.connection.reset();
    server.tools.clear();
  }
}

absl::StatusOr<McpServerConnection*> ToolGateway::Connected(Server& server,
                                                            const Policy& policy) {
  if (server.connection != nullptr &&
      (server.epoch != policy.epoch() || !server.connection->usable())) {
    server.connection.reset();
    server.tools.clear();
  }
  if (server.connection == nullptr) {
    const v1::McpServer& config = *server.config;
    std::vector<std::string> argv = {config.command()};
    argv.insert(argv.end(), config.args().begin(), config.args().end());
    ServerProcessRequest request;
    request.preset = policy.preset();
    request.roots = policy.roots();
    request.protected_paths = policy.protected_paths();
    request.allow_unix_sockets = policy.allow_unix_sockets();
    const absl::Duration timeout = config.timeout_seconds() > 0
                                       ? absl::Seconds(config.timeout_seconds())
                                       : kDefaultMcpTimeout;
    AIRLOCK_ASSIGN_OR_RETURN(server.connection,
                             McpServerConnection::Start(shell_, config.name(), std::move(argv),
                                                        std::move(request), timeout));
    server.epoch = policy.epoch();
    absl::StatusOr<std::vector<McpTool>> tools = server.connection->ListTools();
    if (!tools.ok()) {
      server.connection.reset();
      return tools.status();
    }
    server.tools = std::move(*tools);
  }
  return server.connection.get();
}

namespace {

// The most a tools listing holds, well within one frame.
constexpr size_t kMaxListingBytes = 12 * 1024 * 1024;

}  // namespace

v1::ListToolsResult ToolGateway::ListTools(const Policy& policy) {
  v1::ListToolsResult result;
  for (const auto& [name, tool] : commands_) {
    v1::ToolInfo* info = result.add_tools();
    info->set_name(name);
    info->set_description(tool->description());
    std::string schema;
    if (google::protobuf::util::MessageToJsonString(tool->parameters(), &schema).ok()) {
      info->set_input_schema_json(schema);
    }
    info->set_origin(v1::TOOL_ORIGIN_COMMAND);
    info->set_destructive(tool->destructive());
  }
  for (auto& [name, server] : servers_) {
    if (IsDisabled(name)) {
      result.add_unavailable(absl::StrCat(name, ": disabled by the operator"));
      continue;
    }
    std::lock_guard<std::mutex> lock(server->mutex);
    absl::StatusOr<McpServerConnection*> connection = Connected(*server, policy);
    if (!connection.ok()) {
      result.add_unavailable(absl::StrCat(name, ": ", connection.status().message()));
      continue;
    }
    // Listed under the policy this listing began with: a server started under it after a
    // preset change does not outlive the listing.
    const std::vector<McpTool> tools = server->tools;
    StopIfStale(*server, name);
    // Each server's listing is bounded (McpLimits); all of them together must still fit one
    // answer: a server that would not is listed as unavailable.
    size_t listing_bytes = 0;
    for (const McpTool& tool : tools) {
      listing_bytes += tool.name.size() + tool.description.size() + tool.input_schema_json.size();
    }
    if (result.ByteSizeLong() + listing_bytes > kMaxListingBytes) {
      result.add_unavailable(absl::StrCat(name, ": its tools would make this listing larger than ",
                                          kMaxListingBytes, " bytes"));
      continue;
    }
    for (const McpTool& tool : tools) {
      v1::ToolInfo* info = result.add_tools();
      info->set_name(absl::StrCat(name, ".", tool.name));
      info->set_description(tool.description);
      info->set_input_schema_json(tool.input_schema_json);
      info->set_origin(v1::TOOL_ORIGIN_MCP);
      info->set_destructive(true);
      info->set_session_grant(HasGrant(info->name(), policy.epoch()));
    }
  }
  return result;
}

absl::StatusOr<PreparedToolCall> ToolGateway::Prepare(const v1::CallToolRequest& request,
                                                      FileTools& files, const Policy& policy) {
  PreparedToolCall call;
  call.name = request.name();
  const size_t dot = request.name().find('.');
  if (dot == std::string::npos) {
    auto it = commands_.find(request.name());
    if (it == commands_.end()) {
      return WireError(v1::NOT_FOUND, absl::StrCat("call_tool refused: no tool named '",
                                                   request.name(), "' is declared"));
    }
    call.command = it->second;
  } else {
    call.mcp = true;
    call.server = request.name().substr(0, dot);
    call.server_tool = request.name().substr(dot + 1);
    if (servers_.count(call.server) == 0 || call.server_tool.empty()) {
      return WireError(v1::NOT_FOUND, absl::StrCat("call_tool refused: no MCP server named '",
                                                   call.server, "' is declared"));
    }
    if (IsDisabled(call.server)) {
      return WithRule(WireError(v1::DENIED,
                                absl::StrCat("call_tool ", request.name(), " refused: MCP server '",
                                             call.server, "' was disabled by the operator (rule "
                                             "mcp:server-disabled) [preset ",
                                             PresetName(policy.preset()), "]")),
                      "mcp:server-disabled");
    }
  }
  AIRLOCK_ASSIGN_OR_RETURN(call.arguments, ParseArguments(request));
  call.arguments_sha256 = Sha256Hex(request.arguments_json());
  if (call.command != nullptr) {
    AIRLOCK_ASSIGN_OR_RETURN(call.argv, FillArgv(*call.command, call.arguments));
  }
  AIRLOCK_ASSIGN_OR_RETURN(call.paths, ClassifyPathArguments(files, call.arguments));
  const WorstPathTarget worst = MostRestrictive(call.paths);
  if (call.mcp) {
    call.policy_call = ToolCall::Mcp(call.name, worst.has_path, worst.target_class, worst.rule,
                                     HasGrant(call.name, policy.epoch()));
  } else {
    call.policy_call = ToolCall::Declared(call.name, call.command->destructive(), worst.has_path,
                                          worst.target_class, worst.rule);
  }
  call.policy_call.target = worst.has_path ? worst.canonical_path : std::string();
  call.policy_call.justification = request.justification();

  call.approval.tool = call.name;
  call.approval.target = JoinedTargets(call.paths);
  call.approval.cwd = policy.roots().front();
  call.approval.justification = request.justification();
  if (call.mcp) {
    std::string shown;
    (void)google::protobuf::util::MessageToJsonString(call.arguments, &shown);
    call.approval.command =
        Bounded(absl::StrCat("MCP call ", call.server_tool, " on server ", call.server, " ",
                             shown),
                kShownArgumentsBytes);
    // A grant is worth offering only where the policy would otherwise keep asking.
    call.approval.session_grant_offered = policy.preset() != v1::PRESET_DANGER_FULL_ACCESS;
  } else {
    call.approval.command = Bounded(ShowArgv(call.argv), kShownArgumentsBytes);
  }
  return call;
}

absl::StatusOr<v1::CallToolResult> ToolGateway::Run(const PreparedToolCall& call,
                                                    const Policy& policy, CancelToken* cancel) {
  absl::StatusOr<v1::CallToolResult> result =
      call.mcp ? RunMcp(call, policy, cancel) : RunCommand(call, policy, cancel);
  if (result.ok()) {
    result->set_name(call.name);
    for (const PathArgument& path : call.paths) {
      result->add_checked_paths(path.target.canonical_path);
    }
  }
  return result;
}

absl::StatusOr<v1::CallToolResult> ToolGateway::RunCommand(const PreparedToolCall& call,
                                                           const Policy& policy,
                                                           CancelToken* cancel) {
  ShellRequest shell;
  shell.argv = call.argv;
  shell.cwd = policy.roots().front();
  const absl::Duration timeout = call.command->timeout_seconds() > 0
                                     ? absl::Seconds(call.command->timeout_seconds())
                                     : default_timeout_;
  shell.timeout = std::chrono::milliseconds(absl::ToInt64Milliseconds(timeout));
  shell.preset = policy.preset();
  shell.roots = policy.roots();
  shell.protected_paths = policy.protected_paths();
  shell.allow_unix_sockets = policy.allow_unix_sockets();
  AIRLOCK_ASSIGN_OR_RETURN(v1::BashResult ran, shell_.Run(shell, cancel));
  v1::CallToolResult result;
  result.set_is_error(ran.exit_code() != 0);
  result.set_text(ran.stdout());
  result.set_exit_code(ran.exit_code());
  result.set_stderr(ran.stderr());
  result.set_truncated(ran.truncated());
  result.set_full_output(ran.full_output());
  result.set_timed_out(ran.timed_out());
  return result;
}

absl::StatusOr<v1::CallToolResult> ToolGateway::RunMcp(const PreparedToolCall& call,
                                                       const Policy& policy,
                                                       CancelToken* cancel) {
  Server& server = *servers_.at(call.server);
  std::lock_guard<std::mutex> lock(server.mutex);
  auto disabled = [&] {
    return WithRule(WireError(v1::DENIED, absl::StrCat("call_tool ", call.name,
                                                       " refused: MCP server '", call.server,
                                                       "' was disabled by the operator")),
                    "mcp:server-disabled");
  };
  if (IsDisabled(call.server)) {
    server.connection.reset();
    return disabled();
  }
  AIRLOCK_ASSIGN_OR_RETURN(McpServerConnection * connection, Connected(server, policy));
  absl::StatusOr<McpCallResult> called =
      connection->CallTool(call.server_tool, call.arguments, cancel);
  StopIfStale(server, call.server);
  if (!called.ok()) {
    if (cancel != nullptr && cancel->cancelled()) {
      return WithRule(WireError(v1::CANCELLED, absl::StrCat("call_tool ", call.name,
                                                            ": cancelled (",
                                                            called.status().message(), ")")),
                      "cancel");
    }
    return called.status();
  }
  v1::CallToolResult result;
  result.set_is_error(called->is_error);
  result.set_text(std::move(called->text));
  result.set_result_json(std::move(called->result_json));
  return result;
}

}  // namespace airlock::broker
