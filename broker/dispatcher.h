// Serves one request: records it, routes it through the policy and approval gate to the tool
// that performs it, records the outcome, and answers. Every request gets exactly one response;
// nothing a worker sends can make it throw or abort.
#ifndef BROKER_DISPATCHER_H_
#define BROKER_DISPATCHER_H_

#include <cstdint>

#include "absl/time/time.h"
#include "airlock/v1/wire.pb.h"
#include "broker/approval/approver.h"
#include "broker/audit/audit_log.h"
#include "broker/exec/shell_runner.h"
#include "broker/fs/file_tools.h"
#include "broker/policy_state.h"
#include "broker/session/session_store.h"
#include "broker/tool_gateway.h"
#include "platform/process/process_tree.h"

namespace airlock::broker {

struct BrokerServices {
  FileTools* files = nullptr;
  ShellRunner* shell = nullptr;
  Approver* approver = nullptr;
  absl::Duration approval_timeout = absl::Seconds(300);
  audit::AuditLog* audit = nullptr;
  SessionStore* session = nullptr;
  PolicyState* policy = nullptr;
  // Default bash timeout when the request gives none.
  absl::Duration default_bash_timeout = absl::Minutes(10);
  // Declared command tools and MCP servers; null: none declared (list_tools answers an empty
  // list, call_tool NOT_FOUND).
  ToolGateway* tools = nullptr;
};

class Dispatcher {
 public:
  explicit Dispatcher(BrokerServices services) : services_(services) {}

  // `cancel` (may be null) is triggered by a cancel request naming this one.
  v1::Response Handle(const v1::Request& request, uint64_t channel, CancelToken* cancel);

  // Audits a protocol violation that ended a channel.
  void RecordProtocolError(uint64_t channel, absl::string_view why);

 private:
  absl::StatusOr<v1::BashResult> Bash(const v1::BashRequest& request, uint64_t request_id,
                                      const struct CallContext& call, CancelToken* cancel);
  absl::StatusOr<v1::CallToolResult> CallTool(const v1::CallToolRequest& request,
                                              uint64_t request_id, const struct CallContext& call,
                                              CancelToken* cancel);

  BrokerServices services_;
};

// The tool name of a request body ("read", "write", …, "cancel", "get_context").
const char* ToolNameOf(const v1::Request& request);

}  // namespace airlock::broker

#endif  // BROKER_DISPATCHER_H_
