// The tool gateway (SPEC §4 "Declared tools"): the command tools and MCP servers declared in
// tools.json, offered to the worker through the same policy as the built-in tools. The
// gateway finds a tool, validates its arguments and classifies its path arguments
// (Prepare), and runs an authorized call in the shell sandbox of the preset in force (Run);
// the dispatcher decides and asks in between. It also keeps the two pieces of live state the
// policy consults: live-session grants of MCP tools and disabled MCP servers.
#ifndef BROKER_TOOL_GATEWAY_H_
#define BROKER_TOOL_GATEWAY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "airlock/v1/tools.pb.h"
#include "airlock/v1/wire.pb.h"
#include "broker/approval/approver.h"
#include "broker/exec/shell_runner.h"
#include "broker/fs/file_tools.h"
#include "broker/gateway/path_arguments.h"
#include "broker/mcp/mcp_server_connection.h"
#include "broker/policy/decision.h"
#include "broker/policy/policy.h"
#include "google/protobuf/struct.pb.h"
#include "platform/process/process_tree.h"

namespace airlock::broker {

// Largest arguments_json a call may carry.
inline constexpr size_t kMaxToolArgumentsBytes = 1024 * 1024;

// One call, found, validated and classified, not yet authorized.
struct PreparedToolCall {
  std::string name;  // as offered: "fmt", or "server.tool"
  bool mcp = false;
  const v1::CommandTool* command = nullptr;  // command tools
  std::string server;                        // MCP: the server's name
  std::string server_tool;                   // MCP: the tool's name on its server
  google::protobuf::Struct arguments;
  std::vector<std::string> argv;             // command tools: the filled template
  std::vector<PathArgument> paths;
  std::string arguments_sha256;              // of the arguments as the worker sent them
  ToolCall policy_call;                      // what the policy decides on
  ApprovalRequest approval;                  // what an approver is shown
};

class ToolGateway {
 public:
  // `default_timeout` bounds command tools without their own timeout_seconds.
  ToolGateway(v1::ToolsConfig config, ShellRunner& shell, absl::Duration default_timeout);
  // Stops every MCP server.
  ~ToolGateway();

  ToolGateway(const ToolGateway&) = delete;
  ToolGateway& operator=(const ToolGateway&) = delete;

  // Every tool offered under `policy`: the command tools, and the tools of every enabled MCP
  // server, which is started in the shell sandbox of `policy` when it is not running under
  // it yet. A server that cannot be started or listed is named in `unavailable`.
  v1::ListToolsResult ListTools(const Policy& policy);

  // Finds the tool and checks the call before anything is decided: NOT_FOUND (no such tool),
  // DENIED (its MCP server is disabled), INVALID_ARGUMENT (arguments not a JSON object, not
  // matching a command tool's schema, a path argument with a backslash, …), and the path
  // arguments' classification failures. Fences are left to the policy (ToolCall).
  [[nodiscard]] absl::StatusOr<PreparedToolCall> Prepare(const v1::CallToolRequest& request,
                                                         FileTools& files,
                                                         const Policy& policy);

  // Runs an authorized call under `policy`: a command tool through the shell runner, an MCP
  // call on its server (restarted first when it runs under another policy epoch or broke).
  [[nodiscard]] absl::StatusOr<v1::CallToolResult> Run(const PreparedToolCall& call,
                                                       const Policy& policy,
                                                       CancelToken* cancel);

  // Live-session grants (memory only): valid for the policy epoch they were given under, so a
  // preset change drops them.
  void Grant(const std::string& tool, uint64_t epoch);
  bool HasGrant(const std::string& tool, uint64_t epoch) const;

  // `airlock ctl … mcp disable SERVER`: every later call to it is refused and the server is
  // stopped. NOT_FOUND for an undeclared server.
  [[nodiscard]] absl::Status DisableServer(const std::string& server);
  bool IsDisabled(const std::string& server) const;

  // The policy changed to `epoch`: every server started under an earlier one is stopped now
  // (one in a call, when that call ends) — it must not keep the old preset's authority (a
  // host process under danger-full-access, say) until its next use.
  void StopServersBefore(uint64_t epoch);

 private:
  struct Server {
    const v1::McpServer* config = nullptr;
    std::mutex mutex;  // start, list and call: one at a time per server
    std::unique_ptr<McpServerConnection> connection;
    uint64_t epoch = 0;  // the policy epoch it was started under
    std::vector<McpTool> tools;
  };

  // The server's connection, (re)started under `policy` when needed. Called with
  // server.mutex held.
  absl::StatusOr<McpServerConnection*> Connected(Server& server, const Policy& policy);
  // Stops the server if it was disabled, or started under a policy epoch older than the newest
  // (StopServersBefore), while it was held. Called with server.mutex held.
  void StopIfStale(Server& server, const std::string& name);
  absl::StatusOr<v1::CallToolResult> RunCommand(const PreparedToolCall& call,
                                                const Policy& policy, CancelToken* cancel);
  absl::StatusOr<v1::CallToolResult> RunMcp(const PreparedToolCall& call, const Policy& policy,
                                            CancelToken* cancel);

  const v1::ToolsConfig config_;
  ShellRunner& shell_;
  const absl::Duration default_timeout_;
  std::map<std::string, const v1::CommandTool*> commands_;
  std::map<std::string, std::unique_ptr<Server>> servers_;

  mutable std::mutex state_mutex_;  // grants and disabled servers
  std::map<std::string, uint64_t> grants_;
  std::map<std::string, bool> disabled_;
  uint64_t newest_epoch_ = 0;  // guarded by state_mutex_; the latest StopServersBefore
};

}  // namespace airlock::broker

#endif  // BROKER_TOOL_GATEWAY_H_
