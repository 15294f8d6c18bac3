#include "broker/policy/decision.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "broker/wire_error.h"

namespace airlock::broker {
namespace {

// Authority: what the preset grants, before the mode is consulted.
struct Authority {
  bool refused = false;  // a hard fence or invalid argument: final, nothing is asked
  v1::ErrorCode code = v1::ERROR_CODE_UNSPECIFIED;
  bool in_authority = false;
  std::string rule;
  std::string reason;
  bool allow_outside = false;
  bool allow_protected = false;
  bool unsandboxed = false;
};

Authority Refuse(v1::ErrorCode code, std::string rule, std::string reason) {
  Authority a;
  a.refused = true;
  a.code = code;
  a.rule = std::move(rule);
  a.reason = std::move(reason);
  return a;
}

std::string Preset(const Policy& policy) { return std::string(PresetName(policy.preset())); }

std::string ProtectedRule(const ToolCall& call) {
  if (absl::StartsWith(call.class_rule, "protected:")) return absl::StrCat("fence:", call.class_rule);
  if (call.class_rule.empty()) return "fence:protected";
  return absl::StrCat("fence:protected:", call.class_rule);
}

// Reads and listings: never asked; only the broker's secrets and the read scope refuse.
Authority ReadAuthority(const Policy& policy, const ToolCall& call) {
  if (call.target_class == TargetClass::kBrokerSecret) {
    return Refuse(v1::PROTECTED_PATH, "fence:broker-secret",
                  "the broker's own state is never readable by a tool");
  }
  if (call.target_class == TargetClass::kOutsideRoots &&
      policy.read_scope() == ReadScope::kWorkspace) {
    return Refuse(v1::OUTSIDE_SANDBOX, "read-scope:workspace",
                  "outside every root and reads are confined to the roots (--read-scope "
                  "workspace)");
  }
  Authority a;
  a.in_authority = true;
  a.rule = absl::StrCat(Preset(policy), ":", call.tool);
  a.reason = "reads and listings never ask";
  return a;
}

// The fences and the preset's authority over a path target that would be written.
Authority WriteAuthority(const Policy& policy, const ToolCall& call) {
  const std::string preset = Preset(policy);
  if (call.target_class == TargetClass::kBrokerSecret) {
    return Refuse(v1::PROTECTED_PATH, "fence:broker-secret",
                  "the broker's own state is never writable by a tool, under any preset");
  }
  Authority a;
  if (policy.preset() == v1::PRESET_DANGER_FULL_ACCESS) {
    a.in_authority = true;
    a.allow_outside = true;
    a.allow_protected = true;
    a.rule = "danger-full-access:unconfined-write";
    a.reason = "unconfined regular-file writes under preset danger-full-access";
    return a;
  }
  switch (call.target_class) {
    case TargetClass::kProtected:
      return Refuse(v1::PROTECTED_PATH, ProtectedRule(call),
                    absl::StrCat("the target overlaps protected storage, fenced under preset ",
                                 preset, "; no approval opens it"));
    case TargetClass::kOutsideRoots:
      if (policy.outside_workspace() == OutsideWorkspace::kDeny) {
        return Refuse(v1::OUTSIDE_SANDBOX, "fence:outside-workspace",
                      absl::StrCat("the target is outside every root and --outside-workspace is "
                                   "deny, under preset ",
                                   preset, "; no approval opens it"));
      }
      a.in_authority = false;
      a.allow_outside = true;  // only if approved: out of authority
      a.rule = absl::StrCat(preset, ":write-outside-roots");
      a.reason = absl::StrCat("outside every root: out of authority under preset ", preset);
      return a;
    case TargetClass::kInsideRoots:
      if (policy.preset() == v1::PRESET_READ_ONLY) {
        a.in_authority = false;
        a.rule = "read-only:write-out-of-authority";
        a.reason = "out of authority under preset read-only";
      } else {
        a.in_authority = true;
        a.rule = "workspace-write:write-inside-roots";
        a.reason = "inside the roots under preset workspace-write";
      }
      return a;
    case TargetClass::kBrokerSecret:
      break;  // handled above
  }
  return Refuse(v1::INTERNAL, "policy:unknown-target-class", "unknown target class");
}

Authority MutationAuthority(const Policy& policy, const ToolCall& call) {
  if (call.sandbox_permissions != v1::SANDBOX_PERMISSIONS_UNSPECIFIED) {
    return Refuse(v1::INVALID_ARGUMENT, "file-tools:no-sandbox-permissions",
                  "file tools take no sandbox_permissions; a justification is display-only");
  }
  return WriteAuthority(policy, call);
}

Authority BashAuthority(const Policy& policy, const ToolCall& call) {
  const std::string preset = Preset(policy);
  Authority a;
  switch (call.sandbox_permissions) {
    case v1::SANDBOX_PERMISSIONS_UNSPECIFIED:
    case v1::SANDBOX_PERMISSIONS_USE_DEFAULT:
      a.in_authority = true;
      if (policy.preset() == v1::PRESET_DANGER_FULL_ACCESS) {
        a.unsandboxed = true;
        a.rule = "danger-full-access:bash-unconfined";
        a.reason = "no sandbox under preset danger-full-access";
      } else {
        a.rule = absl::StrCat(preset, ":bash-sandboxed");
        a.reason = absl::StrCat("runs in the shell sandbox of preset ", preset);
      }
      return a;
    case v1::SANDBOX_PERMISSIONS_REQUIRE_ESCALATED:
      if (absl::StripAsciiWhitespace(call.justification).empty()) {
        return Refuse(v1::INVALID_ARGUMENT, "bash:escalation-needs-justification",
                      "require_escalated needs a nonempty justification");
      }
      a.unsandboxed = true;
      if (policy.preset() == v1::PRESET_DANGER_FULL_ACCESS) {
        a.in_authority = true;
        a.rule = "danger-full-access:bash-unconfined";
        a.reason = "no sandbox under preset danger-full-access";
      } else {
        a.in_authority = false;
        a.rule = absl::StrCat(preset, ":bash-escalated");
        a.reason = absl::StrCat(
            "an escalated (unsandboxed) command is out of authority under preset ", preset);
      }
      return a;
    default:
      return Refuse(v1::INVALID_ARGUMENT, "bash:unknown-sandbox-permissions",
                    absl::StrCat("unknown sandbox_permissions value ",
                                 static_cast<int>(call.sandbox_permissions)));
  }
}

// Declared tools: a path-like argument is fenced like a file-tool target before anything is
// asked (whatever the tool's flag says it does with it); `destructive` makes it a write, and a
// tool that is not destructive reads it — confined as a file-tool read is (--read-scope).
Authority DeclaredAuthority(const Policy& policy, const ToolCall& call) {
  const std::string preset = Preset(policy);
  if (call.has_path_target) {
    Authority fenced = WriteAuthority(policy, call);
    if (fenced.refused || call.destructive) return fenced;
    Authority read = ReadAuthority(policy, call);
    if (read.refused) return read;
  }
  Authority a;
  if (!call.destructive) {
    a.in_authority = true;
    a.rule = absl::StrCat(preset, ":tool-non-destructive");
    a.reason = "a non-destructive tool";
    return a;
  }
  a.in_authority = policy.preset() != v1::PRESET_READ_ONLY;
  a.rule = absl::StrCat(preset, a.in_authority ? ":tool-destructive" : ":tool-out-of-authority");
  a.reason = a.in_authority ? absl::StrCat("a destructive tool under preset ", preset)
                            : "a destructive tool is out of authority under preset read-only";
  return a;
}

// MCP tools (seed 003): path-like arguments are fenced first; then danger-full-access calls
// without asking, and read-only and workspace-write ask unless the exact tool holds a
// live-session grant. The server itself runs in the preset's shell sandbox either way.
Authority McpAuthority(const Policy& policy, const ToolCall& call) {
  const std::string preset = Preset(policy);
  if (call.has_path_target) {
    Authority fenced = WriteAuthority(policy, call);
    if (fenced.refused) return fenced;
  }
  Authority a;
  if (policy.preset() == v1::PRESET_DANGER_FULL_ACCESS) {
    a.in_authority = true;
    a.rule = "danger-full-access:mcp-call";
    a.reason = "MCP calls run without asking under preset danger-full-access";
  } else if (call.session_grant) {
    a.in_authority = true;
    a.rule = absl::StrCat(preset, ":mcp-session-grant");
    a.reason = "the tool holds a live-session grant";
  } else {
    a.in_authority = false;
    a.rule = absl::StrCat(preset, ":mcp-call");
    a.reason = absl::StrCat("MCP calls ask under preset ", preset,
                            " unless the tool holds a live-session grant");
  }
  return a;
}

bool IsDestructive(const ToolCall& call) {
  switch (call.kind) {
    case ToolKind::kRead:
    case ToolKind::kList:
      return false;
    case ToolKind::kWrite:
    case ToolKind::kBash:
      return true;
    case ToolKind::kDeclared:
      return call.destructive;
    case ToolKind::kMcp:
      // A granted tool runs unasked whatever the mode; otherwise every call is a write for
      // the modes (default asks even under danger-full-access).
      return !call.session_grant;
  }
  return true;
}

}  // namespace

ToolCall ToolCall::Read(std::string canonical_path, TargetClass target_class,
                        std::string class_rule) {
  ToolCall call;
  call.kind = ToolKind::kRead;
  call.tool = "read";
  call.target = std::move(canonical_path);
  call.target_class = target_class;
  call.class_rule = std::move(class_rule);
  return call;
}

ToolCall ToolCall::List(std::string canonical_path, TargetClass target_class,
                        std::string class_rule) {
  ToolCall call = Read(std::move(canonical_path), target_class, std::move(class_rule));
  call.kind = ToolKind::kList;
  call.tool = "list";
  return call;
}

ToolCall ToolCall::Mutation(const MutationPlan& plan,
                            v1::SandboxPermissions requested_permissions,
                            std::string justification) {
  ToolCall call;
  call.kind = ToolKind::kWrite;
  call.tool = plan.tool;
  call.target = plan.canonical_path;
  call.target_class = plan.target_class;
  call.class_rule = plan.rule;
  call.sandbox_permissions = requested_permissions;
  call.justification = std::move(justification);
  return call;
}

ToolCall ToolCall::Bash(std::string command, v1::SandboxPermissions requested_permissions,
                        std::string justification) {
  ToolCall call;
  call.kind = ToolKind::kBash;
  call.tool = "bash";
  call.target = std::move(command);
  call.sandbox_permissions = requested_permissions;
  call.justification = std::move(justification);
  return call;
}

ToolCall ToolCall::Declared(std::string name, bool destructive, bool has_path,
                            TargetClass worst_path_class, std::string class_rule) {
  ToolCall call;
  call.kind = ToolKind::kDeclared;
  call.tool = std::move(name);
  call.destructive = destructive;
  call.has_path_target = has_path;
  call.target_class = worst_path_class;
  call.class_rule = std::move(class_rule);
  return call;
}

ToolCall ToolCall::Mcp(std::string name, bool has_path, TargetClass worst_path_class,
                       std::string class_rule, bool session_grant) {
  ToolCall call;
  call.kind = ToolKind::kMcp;
  call.tool = std::move(name);
  call.has_path_target = has_path;
  call.target_class = worst_path_class;
  call.class_rule = std::move(class_rule);
  call.session_grant = session_grant;
  return call;
}

const char* VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kRun:
      return "run";
    case Verdict::kAsk:
      return "ask";
    case Verdict::kRefuse:
      return "refuse";
  }
  return "refuse";
}

Decision Decide(const Policy& policy, const ToolCall& call) {
  Authority authority;
  switch (call.kind) {
    case ToolKind::kRead:
    case ToolKind::kList:
      authority = ReadAuthority(policy, call);
      break;
    case ToolKind::kWrite:
      authority = MutationAuthority(policy, call);
      break;
    case ToolKind::kBash:
      authority = BashAuthority(policy, call);
      break;
    case ToolKind::kDeclared:
      authority = DeclaredAuthority(policy, call);
      break;
    case ToolKind::kMcp:
      authority = McpAuthority(policy, call);
      break;
  }

  Decision decision;
  decision.rule = authority.rule;
  decision.reason = authority.reason;
  decision.in_authority = authority.in_authority;
  decision.allow_outside = authority.allow_outside;
  decision.allow_protected = authority.allow_protected;
  decision.unsandboxed = authority.unsandboxed;
  if (authority.refused) {
    // Hard fences and invalid arguments: before anything is asked, whatever the mode.
    decision.verdict = Verdict::kRefuse;
    decision.code = authority.code;
    decision.in_authority = false;
    return decision;
  }
  if (!IsDestructive(call)) {
    decision.verdict = Verdict::kRun;
    return decision;
  }

  const std::string mode(ModeName(policy.mode()));
  if (!authority.in_authority) {
    if (policy.mode() == v1::MODE_NEVER) {
      decision.verdict = Verdict::kRefuse;
      decision.code = v1::DENIED;
      decision.reason = absl::StrCat(authority.reason, ", and mode never asks nothing");
    } else {
      decision.verdict = Verdict::kAsk;
      decision.reason = absl::StrCat(authority.reason, "; mode ", mode,
                                     " asks for a one-call approval");
    }
    return decision;
  }
  switch (policy.mode()) {
    case v1::MODE_DEFAULT:
      decision.verdict = Verdict::kAsk;
      decision.reason = absl::StrCat(authority.reason, "; mode default asks before every ",
                                     "write, edit and shell command");
      break;
    case v1::MODE_ACCEPT_EDITS:
      if (policy.IsEditTool(call.tool)) {
        decision.verdict = Verdict::kRun;
      } else {
        decision.verdict = Verdict::kAsk;
        decision.reason = absl::StrCat(authority.reason, "; mode accept-edits asks for tools ",
                                       "not in --edit-tools");
      }
      break;
    case v1::MODE_ON_REQUEST:
    case v1::MODE_NEVER:
      decision.verdict = Verdict::kRun;
      break;
    default:
      decision.verdict = Verdict::kRefuse;
      decision.code = v1::INTERNAL;
      decision.reason = "unknown mode";
      break;
  }
  return decision;
}

absl::Status RefusalStatus(const Policy& policy, const ToolCall& call, v1::ErrorCode code,
                           absl::string_view rule, absl::string_view reason) {
  const std::string target = call.target.empty() ? std::string() : absl::StrCat(" ", call.target);
  return WithRule(WireError(code, absl::StrCat(call.tool, target, " refused: ", reason, " (rule ",
                                               rule, ") [preset ", PresetName(policy.preset()),
                                               "]")),
                  rule);
}

}  // namespace airlock::broker
