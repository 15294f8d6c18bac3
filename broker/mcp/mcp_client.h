// The broker's side of one MCP server over stdio (JSON-RPC 2.0, one JSON object per line):
// initialize, tools/list and tools/call. The server is untrusted: every message is bounded
// (line length, number of tools, pages, skipped messages, time), requests it sends to us are
// answered "method not found" and its notifications are ignored — the server can never make
// the broker do anything. Any protocol violation, a timeout or a cancelled call marks the
// connection broken (a late answer would otherwise be taken for the next one's); the owner
// then stops the server and starts a fresh one.
//
// Not thread-safe: one request at a time (McpServerConnection serializes them).
#ifndef BROKER_MCP_MCP_CLIENT_H_
#define BROKER_MCP_MCP_CLIENT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "google/protobuf/struct.pb.h"
#include "platform/process/process_tree.h"

namespace airlock::broker {

struct McpLimits {
  size_t max_line_bytes = 4 * 1024 * 1024;
  size_t max_tools = 1000;
  size_t max_pages = 100;
  // Notifications and server requests tolerated while waiting for one answer.
  size_t max_skipped_messages = 1000;
  size_t max_tool_name_bytes = 128;
  // Names, descriptions and input schemas of all tools together: what the broker keeps and
  // lists for this server (each line alone may be 4 MiB, and there may be 100 pages).
  size_t max_listing_bytes = 2 * 1024 * 1024;
  // Objects and arrays inside one message (protobuf's JSON parser slows down with the square
  // of the depth).
  size_t max_nesting = 40;
};

struct McpTool {
  std::string name;
  std::string description;
  std::string input_schema_json;  // the inputSchema object, re-serialized
};

struct McpCallResult {
  bool is_error = false;
  std::string text;         // the text content items, joined with newlines
  std::string result_json;  // the whole result object, re-serialized
};

class McpClient {
 public:
  // Takes no ownership of the descriptors (both are made non-blocking). Runs the handshake:
  // initialize, then notifications/initialized.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<McpClient>> Connect(
      int to_server_fd, int from_server_fd, std::string server_name, absl::Duration timeout,
      McpLimits limits = {});

  // Every page of tools/list (nextCursor followed, bounded). `timeout` applies per page.
  [[nodiscard]] absl::StatusOr<std::vector<McpTool>> ListTools(absl::Duration timeout);

  // tools/call. A tool's own failure is a result with is_error; a JSON-RPC error answer is a
  // failed status (the connection stays usable).
  [[nodiscard]] absl::StatusOr<McpCallResult> CallTool(
      const std::string& tool, const google::protobuf::Struct& arguments,
      absl::Duration timeout, CancelToken* cancel = nullptr);

  bool broken() const { return broken_; }
  const std::string& server_name() const { return server_name_; }
  const std::string& protocol_version() const { return protocol_version_; }

 private:
  McpClient(int to_server_fd, int from_server_fd, std::string server_name, McpLimits limits)
      : to_server_fd_(to_server_fd),
        from_server_fd_(from_server_fd),
        server_name_(std::move(server_name)),
        limits_(limits) {}

  absl::Status Initialize(absl::Duration timeout);
  // Sends one request and waits for its answer's `result` object.
  absl::StatusOr<google::protobuf::Struct> Request(const std::string& method,
                                                   google::protobuf::Struct params,
                                                   absl::Duration timeout, CancelToken* cancel);
  absl::Status Send(const google::protobuf::Struct& message, absl::Time deadline);
  // The next complete line, without its newline.
  absl::StatusOr<std::string> ReadLine(absl::Time deadline, absl::Duration timeout,
                                       CancelToken* cancel, const std::string& method);
  // Marks the connection broken and returns the failure, naming the server.
  absl::Status Broken(absl::Status status);
  absl::Status Violation(const std::string& method, const std::string& what);

  const int to_server_fd_;
  const int from_server_fd_;
  const std::string server_name_;
  const McpLimits limits_;
  std::string protocol_version_;
  std::string buffer_;  // bytes read past the last line
  bool eof_ = false;
  bool broken_ = false;
  std::string broken_reason_;
  int64_t next_id_ = 1;
};

}  // namespace airlock::broker

#endif  // BROKER_MCP_MCP_CLIENT_H_
