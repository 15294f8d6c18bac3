// airlock's own tools as MCP tools (`airlock mcp`): what tools/list offers, and the broker
// request a tools/call becomes — the same requests `airlock tool` makes. Arguments are checked
// strictly against each tool's schema: an unknown name, a wrong type or a missing required
// argument is refused here, before anything reaches the broker. Pure, so it is tested without
// a broker.
#ifndef WORKER_MCP_TOOLS_H_
#define WORKER_MCP_TOOLS_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "airlock/v1/wire.pb.h"
#include "google/protobuf/struct.pb.h"

namespace airlock::worker {

// The tools, as the `tools` array of a tools/list result: name, description, inputSchema (a
// JSON schema object that allows no other properties).
google::protobuf::ListValue McpToolList();

// The request for a call of `tool` with `arguments`; InvalidArgument (saying which tool and
// argument) for an unknown tool or arguments its schema does not allow.
absl::StatusOr<v1::Request> RequestForMcpCall(absl::string_view tool,
                                              const google::protobuf::Struct& arguments);

}  // namespace airlock::worker

#endif  // WORKER_MCP_TOOLS_H_
