// The decision table of SPEC §4: one function classifies every tool call as run, ask or
// refuse, and names the table row that decided. It performs nothing and asks nobody; the
// approval path (broker/approval/authorize.h) acts on its verdict.
#ifndef BROKER_POLICY_DECISION_H_
#define BROKER_POLICY_DECISION_H_

#include <string>

#include "absl/status/status.h"
#include "airlock/v1/wire.pb.h"
#include "broker/fs/file_tools.h"
#include "broker/policy/policy.h"

namespace airlock::broker {

enum class ToolKind {
  kRead,      // read: never asks
  kList,      // list: never asks
  kWrite,     // write, edit: file mutations bound to a MutationPlan
  kBash,      // a shell command
  kDeclared,  // a declared command tool; `destructive` makes it a write for the modes
  kMcp,       // a tool of an MCP server: asks under read-only and workspace-write unless the
              // exact tool holds a live-session grant
};

// What the policy needs to know about one call. Build it with the factories: the target
// class comes from FileTools (the plan's or the resolver's), never from the request.
struct ToolCall {
  ToolKind kind = ToolKind::kRead;
  std::string tool;               // "read", "list", "write", "edit", "bash", or a declared name
  std::string target;             // canonical path (file tools), command (bash): for messages
  TargetClass target_class = TargetClass::kInsideRoots;
  std::string class_rule;         // FileTools' classification rule, e.g. "protected:.git/hooks"
  bool destructive = false;       // declared tools only
  bool has_path_target = false;   // declared and MCP tools: target_class is meaningful
  bool session_grant = false;     // MCP tools: the exact tool holds a live-session grant
  v1::SandboxPermissions sandbox_permissions = v1::SANDBOX_PERMISSIONS_UNSPECIFIED;
  std::string justification;

  static ToolCall Read(std::string canonical_path, TargetClass target_class,
                       std::string class_rule = {});
  static ToolCall List(std::string canonical_path, TargetClass target_class,
                       std::string class_rule = {});
  // `requested_permissions` and `justification` come from the Write/EditRequest.
  static ToolCall Mutation(const MutationPlan& plan,
                           v1::SandboxPermissions requested_permissions,
                           std::string justification);
  static ToolCall Bash(std::string command, v1::SandboxPermissions requested_permissions,
                       std::string justification);
  // A declared tool. `worst_path_class` is the most restrictive class among its path-like
  // arguments; `has_path` is false when it has none.
  static ToolCall Declared(std::string name, bool destructive, bool has_path,
                           TargetClass worst_path_class, std::string class_rule = {});
  // An MCP tool ("server.tool"), with the same path-argument summary and whether it holds a
  // live-session grant under the policy in force.
  static ToolCall Mcp(std::string name, bool has_path, TargetClass worst_path_class,
                      std::string class_rule, bool session_grant);
};

enum class Verdict { kRun, kAsk, kRefuse };

struct Decision {
  Verdict verdict = Verdict::kRefuse;
  // The table row that decided, e.g. "read-only:write-out-of-authority",
  // "fence:protected:.git/hooks", "workspace-write:write-inside-roots".
  std::string rule;
  // Why, in words, for messages: "out of authority under preset read-only".
  std::string reason;
  v1::ErrorCode code = v1::ERROR_CODE_UNSPECIFIED;  // set when refused
  bool in_authority = false;
  // What the call may do if it runs (or is approved): the CommitPermission for file tools,
  // and whether a shell runs without the sandbox (danger-full-access, approved escalation).
  bool allow_outside = false;
  bool allow_protected = false;
  bool unsandboxed = false;
};

// The one decision function. Pure: depends only on its arguments.
Decision Decide(const Policy& policy, const ToolCall& call);

const char* VerdictName(Verdict verdict);

// "write /w/a.txt refused: <reason> (rule <rule>) [preset read-only]" with `code` and `rule`
// attached (broker/wire_error.h).
[[nodiscard]] absl::Status RefusalStatus(const Policy& policy, const ToolCall& call,
                                         v1::ErrorCode code, absl::string_view rule,
                                         absl::string_view reason);

}  // namespace airlock::broker

#endif  // BROKER_POLICY_DECISION_H_
