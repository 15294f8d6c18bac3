#include "broker/mcp/mcp_server_connection.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "broker/wire_error.h"
#include "platform/base/status_macros.h"

namespace airlock::broker {
namespace {

constexpr size_t kStderrInMessages = 2048;

absl::Status WithMessage(const absl::Status& status, const std::string& message) {
  absl::Status out = WireError(WireCodeOf(status), message);
  const std::string rule = RuleOf(status);
  return rule.empty() ? out : WithRule(out, rule);
}

}  // namespace

absl::StatusOr<std::unique_ptr<McpServerConnection>> McpServerConnection::Start(
    ShellRunner& runner, std::string name, std::vector<std::string> argv,
    ServerProcessRequest request, absl::Duration timeout, McpLimits limits) {
  request.argv = std::move(argv);
  std::unique_ptr<McpServerConnection> connection(
      new McpServerConnection(std::move(name), request.preset, timeout));
  absl::StatusOr<std::unique_ptr<SandboxedProcess>> process = runner.Start(request);
  if (!process.ok()) {
    return WithMessage(process.status(),
                       absl::StrCat("MCP server '", connection->name_,
                                    "' cannot start: ", process.status().message()));
  }
  connection->process_ = std::move(*process);
  absl::StatusOr<std::unique_ptr<McpClient>> client =
      McpClient::Connect(connection->process_->stdin_fd(), connection->process_->stdout_fd(),
                         connection->name_, timeout, limits);
  if (!client.ok()) {
    const absl::Status explained = connection->Explained(client.status());
    connection->Stop();
    return explained;
  }
  connection->client_ = std::move(*client);
  return connection;
}

absl::StatusOr<std::vector<McpTool>> McpServerConnection::ListTools() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (client_ == nullptr) {
    return WireError(v1::INTERNAL, absl::StrCat("MCP server '", name_, "' was stopped"));
  }
  absl::StatusOr<std::vector<McpTool>> tools = client_->ListTools(timeout_);
  if (!tools.ok()) return Explained(tools.status());
  return tools;
}

absl::StatusOr<McpCallResult> McpServerConnection::CallTool(
    const std::string& tool, const google::protobuf::Struct& arguments, CancelToken* cancel,
    absl::Duration timeout) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (client_ == nullptr) {
    return WireError(v1::INTERNAL, absl::StrCat("MCP server '", name_, "' was stopped"));
  }
  absl::StatusOr<McpCallResult> result = client_->CallTool(
      tool, arguments, timeout == absl::ZeroDuration() ? timeout_ : timeout, cancel);
  if (!result.ok()) return Explained(result.status());
  return result;
}

void McpServerConnection::Stop() {
  if (process_ != nullptr) process_->Kill();  // ends a call in flight, which holds the mutex
  std::lock_guard<std::mutex> lock(mutex_);
  client_.reset();
  if (process_ != nullptr) process_->Stop();
}

bool McpServerConnection::usable() {
  std::lock_guard<std::mutex> lock(mutex_);
  return client_ != nullptr && !client_->broken() && process_ != nullptr && !process_->Exited();
}

absl::Status McpServerConnection::Explained(absl::Status status) {
  const bool broken = client_ == nullptr || client_->broken();
  if (!broken || process_ == nullptr) return status;
  // A broken connection is never used again: stop the server now, which also collects the
  // rest of its stderr.
  process_->Stop();
  std::string tail = process_->TakeStderr();
  if (tail.size() > kStderrInMessages) tail.erase(0, tail.size() - kStderrInMessages);
  const std::string detail(absl::StripAsciiWhitespace(tail));
  if (detail.empty()) return status;
  return WithMessage(status, absl::StrCat(status.message(), "; its stderr ends with: ", detail));
}

}  // namespace airlock::broker
