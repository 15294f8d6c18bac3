// One MCP server as the broker keeps it: the process started by the shell runner (inside the
// shell sandbox of the preset it was started under) and the MCP client speaking to it. Calls
// are serialized (one request at a time per server). A connection that broke (a protocol
// violation, a timeout, a cancelled call, a dead server) refuses every later call; the owner
// stops it and starts a new one.
#ifndef BROKER_MCP_MCP_SERVER_CONNECTION_H_
#define BROKER_MCP_MCP_SERVER_CONNECTION_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "broker/exec/shell_runner.h"
#include "broker/mcp/mcp_client.h"
#include "google/protobuf/struct.pb.h"

namespace airlock::broker {

class McpServerConnection {
 public:
  // Starts `argv` with `request` (its argv replaced; preset, roots, protected paths, cwd as
  // given) and runs the MCP handshake within `timeout`, which is also every later request's
  // default. Errors name the server; the server's last stderr is appended when it failed.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<McpServerConnection>> Start(
      ShellRunner& runner, std::string name, std::vector<std::string> argv,
      ServerProcessRequest request, absl::Duration timeout, McpLimits limits = {});
  ~McpServerConnection() { Stop(); }

  [[nodiscard]] absl::StatusOr<std::vector<McpTool>> ListTools();
  // `timeout` zero: the connection's default.
  [[nodiscard]] absl::StatusOr<McpCallResult> CallTool(const std::string& tool,
                                                       const google::protobuf::Struct& arguments,
                                                       CancelToken* cancel = nullptr,
                                                       absl::Duration timeout = {});
  // Kills the server's tree (a call in flight fails at once) and removes its private temp
  // directory. Idempotent; later calls fail.
  void Stop();

  // Broken, stopped, or the server exited: start a new connection.
  bool usable();
  const std::string& name() const { return name_; }
  v1::Preset preset() const { return preset_; }
  // The process (for tests and diagnostics), stopped or not.
  SandboxedProcess* process() { return process_.get(); }

 private:
  McpServerConnection(std::string name, v1::Preset preset, absl::Duration timeout)
      : name_(std::move(name)), preset_(preset), timeout_(timeout) {}
  // When a failure broke the connection: stops the server and adds its last stderr.
  absl::Status Explained(absl::Status status);

  const std::string name_;
  const v1::Preset preset_;
  const absl::Duration timeout_;
  // Set by Start() and kept until destruction, so that Stop() can kill it without the mutex.
  std::unique_ptr<SandboxedProcess> process_;
  std::mutex mutex_;  // one request at a time
  std::unique_ptr<McpClient> client_;  // null once stopped
};

}  // namespace airlock::broker

#endif  // BROKER_MCP_MCP_SERVER_CONNECTION_H_
