// The protocol side of `airlock mcp`: an MCP server over stdio (JSON-RPC 2.0, one message per
// line) whose tools (mcp_tools.h) are broker requests. The client is the agent, as trusted as
// the worker it runs in: this code holds no authority — every call still goes to the broker,
// which decides. Each line is answered on its own (no state but what the caller keeps), so a
// malformed line gets a JSON-RPC error and loses nothing else. Pure, so it is tested without a
// broker.
#ifndef WORKER_MCP_BRIDGE_H_
#define WORKER_MCP_BRIDGE_H_

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "airlock/v1/wire.pb.h"
#include "google/protobuf/struct.pb.h"

namespace airlock::worker {

// The longest line read: a write of the broker's largest content (16 MiB) fits, escaped.
inline constexpr size_t kMaxMcpLineBytes = 40u << 20;
// The deepest nesting of objects and arrays accepted in one line.
inline constexpr size_t kMaxMcpNesting = 64;

// A tools/call to run: its JSON-RPC id and the broker request it became.
struct McpToolCall {
  google::protobuf::Value id;
  // The id as JSON text, to match a later notifications/cancelled.
  std::string id_key;
  v1::Request request;
};

// What one line from the client asks for: at most one of these.
struct McpIncoming {
  // A line to send back now (initialize, ping, tools/list, and every error).
  std::optional<std::string> answer;
  // A tools/call, which may take long (an approval, a command): run elsewhere.
  std::optional<McpToolCall> call;
  // notifications/cancelled: the id (as JSON text) of a call whose answer must not be sent.
  std::optional<std::string> cancelled;
};

McpIncoming ReadMcpLine(absl::string_view line);

// The answer (one line, no newline) to a line longer than kMaxMcpLineBytes, which is skipped.
std::string McpLineTooLong();

using CallBroker = std::function<absl::StatusOr<v1::Response>(v1::Request)>;

// Runs `call` through `call_broker` and renders the tools/call result: one text item holding
// the JSON object `airlock tool` prints, and isError when the broker refused or failed, or a
// declared tool failed or timed out.
std::string RunMcpToolCall(McpToolCall call, const CallBroker& call_broker);

// The answer to a call that was not started, saying why (JSON-RPC server error -32000).
std::string McpCallNotStarted(const McpToolCall& call, const std::string& why);

}  // namespace airlock::worker

#endif  // WORKER_MCP_BRIDGE_H_
