#include "broker/dispatcher.h"

#include <chrono>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "broker/approval/authorize.h"
#include "broker/call_context.h"
#include "broker/fs/digest.h"
#include "broker/journaled_approver.h"
#include "broker/journaled_file_tools.h"
#include "broker/session/session_store.h"
#include "broker/wire_error.h"
#include "platform/base/logging.h"
#include "platform/base/status_macros.h"

namespace airlock::broker {
namespace {

// A call_tool's arguments are kept in the session up to this size (their digest always).
constexpr size_t kRecordedArgumentsBytes = 64 * 1024;

// The session's record of a call: arguments, bulk bytes as size and digest.
v1::ToolCallRecord ToolCallOf(const v1::Request& request) {
  v1::ToolCallRecord call;
  call.set_time(NowRfc3339());
  call.set_request_id(request.id());
  call.set_tool(ToolNameOf(request));
  switch (request.body_case()) {
    case v1::Request::kRead:
      call.set_path(request.read().path());
      break;
    case v1::Request::kList:
      call.set_path(request.list().path());
      break;
    case v1::Request::kWrite:
      call.set_path(request.write().path());
      call.set_content_bytes(request.write().content().size());
      call.set_content_sha256(Sha256Hex(request.write().content()));
      call.set_justification(request.write().justification());
      break;
    case v1::Request::kEdit:
      call.set_path(request.edit().path());
      call.set_old_string_sha256(Sha256Hex(request.edit().old_string()));
      call.set_new_string_sha256(Sha256Hex(request.edit().new_string()));
      call.set_justification(request.edit().justification());
      break;
    case v1::Request::kBash:
      call.set_command(request.bash().command());
      call.set_cwd(request.bash().cwd());
      call.set_escalate(request.bash().sandbox_permissions() ==
                        v1::SANDBOX_PERMISSIONS_REQUIRE_ESCALATED);
      call.set_justification(request.bash().justification());
      break;
    case v1::Request::kCallTool:
      call.set_tool_name(request.call_tool().name());
      call.set_arguments_sha256(Sha256Hex(request.call_tool().arguments_json()));
      if (request.call_tool().arguments_json().size() <= kRecordedArgumentsBytes) {
        call.set_arguments_json(request.call_tool().arguments_json());
      }
      call.set_content_bytes(request.call_tool().arguments_json().size());
      call.set_justification(request.call_tool().justification());
      break;
    default:
      break;
  }
  return call;
}

v1::ToolResultRecord ToolResultOf(const v1::Response& response) {
  v1::ToolResultRecord result;
  result.set_time(NowRfc3339());
  result.set_request_id(response.id());
  result.set_ok(!response.has_error());
  if (response.has_error()) {
    result.set_error_code(std::string(ErrorCodeName(response.error().code())));
    result.set_error_message(response.error().message());
  }
  switch (response.body_case()) {
    case v1::Response::kRead:
      result.set_canonical_path(response.read().canonical_path());
      result.set_bytes(response.read().content().size());
      result.set_content_sha256(Sha256Hex(response.read().content()));
      break;
    case v1::Response::kWrite:
      result.set_canonical_path(response.write().canonical_path());
      result.set_content_sha256(response.write().content_sha256());
      result.set_bytes(response.write().bytes_written());
      break;
    case v1::Response::kEdit:
      result.set_canonical_path(response.edit().canonical_path());
      result.set_content_sha256(response.edit().content_sha256());
      break;
    case v1::Response::kList:
      result.set_canonical_path(response.list().canonical_path());
      break;
    case v1::Response::kBash:
      result.set_exit_code(response.bash().exit_code());
      break;
    case v1::Response::kCallTool:
      result.set_exit_code(response.call_tool().exit_code());
      result.set_tool_is_error(response.call_tool().is_error());
      result.set_bytes(response.call_tool().text().size());
      result.set_content_sha256(Sha256Hex(response.call_tool().text()));
      break;
    case v1::Response::kListTools:
      result.set_bytes(static_cast<uint64_t>(response.list_tools().tools_size()));
      break;
    default:
      break;
  }
  return result;
}

template <typename Result>
void SetResult(v1::Response& response, absl::StatusOr<Result> result, v1::Preset preset,
               Result* (v1::Response::*mutable_field)()) {
  if (result.ok()) {
    *(response.*mutable_field)() = std::move(*result);
  } else {
    *response.mutable_error() = ToWireError(result.status(), preset);
  }
}

}  // namespace

const char* ToolNameOf(const v1::Request& request) {
  switch (request.body_case()) {
    case v1::Request::kRead: return "read";
    case v1::Request::kWrite: return "write";
    case v1::Request::kEdit: return "edit";
    case v1::Request::kList: return "list";
    case v1::Request::kBash: return "bash";
    case v1::Request::kCancel: return "cancel";
    case v1::Request::kGetContext: return "get_context";
    case v1::Request::kListTools: return "list_tools";
    case v1::Request::kCallTool: return "call_tool";
    case v1::Request::BODY_NOT_SET: return "none";
  }
  return "none";
}

void Dispatcher::RecordProtocolError(uint64_t channel, absl::string_view why) {
  audit::AuditRecord record;
  record.event = audit::AuditEvent::kProtocolError;
  record.channel = channel;
  record.detail = std::string(why);
  (void)services_.audit->Append(record, audit::Durability::kBuffered);
}

v1::Response Dispatcher::Handle(const v1::Request& request, uint64_t channel,
                                CancelToken* cancel) {
  CallContext call;
  call.channel = channel;
  call.request_id = request.id();
  call.tool = ToolNameOf(request);
  if (request.has_call_tool()) {
    // The declared tool's name, bounded (it is the worker's text; the audit log escapes it).
    call.tool = absl::StrCat("call_tool:", request.call_tool().name().substr(0, 128));
  }
  call.policy = services_.policy->Current();
  call.audit = services_.audit;
  call.policy_state = services_.policy;
  const v1::Preset preset = call.policy->preset();

  v1::Response response;
  response.set_id(request.id());

  // Every request is on the record before anything is checked. A log that cannot be written
  // refuses the request.
  audit::AuditRecord arrived = call.Record(audit::AuditEvent::kRequest);
  if (request.has_bash()) arrived.command_sha256 = Sha256Hex(request.bash().command());
  if (absl::StatusOr<uint64_t> seq = services_.audit->Append(arrived, audit::Durability::kBuffered);
      !seq.ok()) {
    *response.mutable_error() = ToWireError(
        WithRule(WireError(v1::INTERNAL, absl::StrCat(call.tool, " refused: the audit log cannot "
                                                      "be written (", seq.status().message(), ")")),
                 "audit:unwritable"),
        preset);
    return response;
  }
  // The session keeps the context in force (a snapshot only when it changed) and the call.
  const v1::Context context = services_.policy->CurrentContext();
  absl::Status session_status = services_.session->RecordContextIfChanged(SnapshotOfContext(context)).status();
  if (session_status.ok()) session_status = services_.session->RecordToolCall(ToolCallOf(request));
  if (!session_status.ok()) {
    AIRLOCK_LOG(kWarning, "session store: ", session_status.message());
  }

  JournaledFileTools files(*services_.files, call);
  JournaledApprover approver(*services_.approver, call);
  ApprovalGate gate(files, approver, services_.approval_timeout,
                    [this] { return *services_.policy->Current(); });

  switch (request.body_case()) {
    case v1::Request::kRead:
      SetResult(response, services_.files->Read(request.read()), preset, &v1::Response::mutable_read);
      break;
    case v1::Request::kList:
      SetResult(response, services_.files->List(request.list()), preset, &v1::Response::mutable_list);
      break;
    case v1::Request::kWrite:
      SetResult(response, gate.Write(request.id(), request.write()), preset,
                &v1::Response::mutable_write);
      break;
    case v1::Request::kEdit:
      SetResult(response, gate.Edit(request.id(), request.edit()), preset,
                &v1::Response::mutable_edit);
      break;
    case v1::Request::kBash:
      SetResult(response, Bash(request.bash(), request.id(), call, cancel), preset,
                &v1::Response::mutable_bash);
      break;
    case v1::Request::kGetContext:
      *response.mutable_context() = context;
      break;
    case v1::Request::kListTools:
      if (services_.tools != nullptr) {
        *response.mutable_list_tools() = services_.tools->ListTools(*call.policy);
      } else {
        response.mutable_list_tools();
      }
      break;
    case v1::Request::kCallTool:
      SetResult(response, CallTool(request.call_tool(), request.id(), call, cancel), preset,
                &v1::Response::mutable_call_tool);
      break;
    case v1::Request::kCancel:
      // Cancels are answered by the server, which knows the channel's calls in flight.
      *response.mutable_error() = ToWireError(
          WireError(v1::INTERNAL, "cancel reached the dispatcher; nothing was cancelled"), preset);
      break;
    case v1::Request::BODY_NOT_SET:
      *response.mutable_error() = ToWireError(
          WireError(v1::INVALID_ARGUMENT,
                    absl::StrCat("request ", request.id(), " names no tool (unknown or empty body)")),
          preset);
      break;
  }

  audit::AuditRecord outcome = call.Record(audit::AuditEvent::kResult);
  if (response.has_error()) {
    outcome.decision = "error";
    outcome.code = std::string(ErrorCodeName(response.error().code()));
    outcome.rule = response.error().rule();
    outcome.detail = response.error().message();
  } else {
    outcome.decision = "ok";
    if (response.has_write()) {
      outcome.target = response.write().canonical_path();
      outcome.content_sha256 = response.write().content_sha256();
    } else if (response.has_edit()) {
      outcome.target = response.edit().canonical_path();
      outcome.content_sha256 = response.edit().content_sha256();
    } else if (response.has_read()) {
      outcome.target = response.read().canonical_path();
    } else if (response.has_list()) {
      outcome.target = response.list().canonical_path();
    } else if (response.has_bash()) {
      outcome.exit_code = response.bash().exit_code();
    } else if (response.has_call_tool()) {
      outcome.exit_code = response.call_tool().exit_code();
      outcome.content_sha256 = Sha256Hex(response.call_tool().text());
      outcome.detail = absl::StrCat(response.call_tool().name(),
                                    response.call_tool().is_error() ? ": the tool reported "
                                                                      "failure"
                                                                    : ": the tool succeeded");
    }
  }
  // Outcomes are group-committed off the reply's path: written now (they survive a killed
  // broker), synced by the next durable record or the log's background flush within
  // milliseconds. What acted is already on disk, and its durable intent names it.
  if (absl::StatusOr<uint64_t> seq = services_.audit->Append(outcome, audit::Durability::kBuffered);
      !seq.ok()) {
    AIRLOCK_LOG(kError, "audit log: the outcome of request ", request.id(),
                " could not be recorded: ", seq.status().message());
  }
  if (absl::Status s = services_.session->RecordToolResult(ToolResultOf(response)); !s.ok()) {
    AIRLOCK_LOG(kWarning, "session store: ", s.message());
  }
  return response;
}

absl::StatusOr<v1::BashResult> Dispatcher::Bash(const v1::BashRequest& request,
                                                uint64_t request_id, const CallContext& call,
                                                CancelToken* cancel) {
  const Policy& policy = *call.policy;
  if (absl::StripAsciiWhitespace(request.command()).empty()) {
    return WireError(v1::INVALID_ARGUMENT, "bash refused: empty command");
  }
  AIRLOCK_RETURN_IF_ERROR(ShellRunner::CheckCommand(request.command()));
  // The working directory: the workspace unless given; resolved like a file-tool path.
  const std::string requested_cwd = request.cwd().empty() ? policy.roots().front() : request.cwd();
  AIRLOCK_ASSIGN_OR_RETURN(ClassifiedTarget cwd, services_.files->Classify(requested_cwd));
  const bool restricted = policy.preset() != v1::PRESET_DANGER_FULL_ACCESS;
  if (restricted && request.sandbox_permissions() != v1::SANDBOX_PERMISSIONS_REQUIRE_ESCALATED &&
      !cwd.inside_roots) {
    return WithRule(WireError(v1::OUTSIDE_SANDBOX,
                              absl::StrCat("bash in ", cwd.canonical_path,
                                           " refused: the working directory is outside every "
                                           "root")),
                    "fence:outside-roots");
  }
  JournaledApprover approver(*services_.approver, call);
  ApprovalGate gate(*services_.files, approver, services_.approval_timeout,
                    [this] { return *services_.policy->Current(); });
  AIRLOCK_ASSIGN_OR_RETURN(ApprovalGate::BashPermit permit,
                           gate.AuthorizeBash(request_id, request, cwd.canonical_path));
  AIRLOCK_ASSIGN_OR_RETURN(PolicyState::Execution execution,
                           services_.policy->BeginExecution(policy.epoch()));
  audit::AuditRecord intent = call.Record(audit::AuditEvent::kDecision);
  intent.cwd = cwd.canonical_path;
  intent.command_sha256 = Sha256Hex(request.command());
  intent.decision = permit.asked ? "approved" : "allow";
  intent.rule = permit.decision.rule;
  intent.justification = request.justification();
  intent.detail = permit.unsandboxed ? "intent: run without the sandbox" : "intent: run sandboxed";
  // The intent is written now and its sync started; the runner lays out the sandbox meanwhile
  // and waits for it right before the command starts. Either failing refuses with nothing run.
  const auto unwritable = [](const absl::Status& status) {
    return WithRule(WireError(v1::INTERNAL, absl::StrCat("bash refused: the audit log cannot be "
                                                         "written (", status.message(),
                                                         "); nothing ran")),
                    "audit:unwritable");
  };
  absl::StatusOr<audit::PendingRecord> pending = services_.audit->AppendPending(intent);
  if (!pending.ok()) return unwritable(pending.status());
  ShellRequest shell;
  audit::AuditLog* const log = services_.audit;
  shell.before_start = [log, record = *pending, unwritable]() -> absl::Status {
    absl::Status durable = log->AwaitDurable(record);
    return durable.ok() ? durable : unwritable(durable);
  };
  shell.command = request.command();
  shell.cwd = cwd.canonical_path;
  const absl::Duration timeout = request.timeout_seconds() > 0
                                     ? absl::Seconds(request.timeout_seconds())
                                     : services_.default_bash_timeout;
  shell.timeout = std::chrono::milliseconds(absl::ToInt64Milliseconds(timeout));
  shell.preset = policy.preset();
  shell.roots = policy.roots();
  shell.protected_paths = policy.protected_paths();
  shell.escalated = permit.unsandboxed;
  shell.allow_unix_sockets = policy.allow_unix_sockets();
  return services_.shell->Run(shell, cancel);
}

absl::StatusOr<v1::CallToolResult> Dispatcher::CallTool(const v1::CallToolRequest& request,
                                                        uint64_t request_id,
                                                        const CallContext& call,
                                                        CancelToken* cancel) {
  const Policy& policy = *call.policy;
  if (services_.tools == nullptr) {
    return WireError(v1::NOT_FOUND, absl::StrCat("call_tool refused: no tool named '",
                                                 request.name(), "' is declared (no tools.json)"));
  }
  ToolGateway& tools = *services_.tools;
  // Found, arguments validated and path arguments classified: fences apply before anything
  // is asked, so approving cannot open them.
  AIRLOCK_ASSIGN_OR_RETURN(PreparedToolCall prepared,
                           tools.Prepare(request, *services_.files, policy));
  prepared.approval.request_id = request_id;
  JournaledApprover approver(*services_.approver, call);
  AIRLOCK_ASSIGN_OR_RETURN(
      Authorization authorization,
      Authorize(policy, prepared.policy_call, prepared.approval, approver,
                services_.approval_timeout));
  if (authorization.asked && authorization.answer.scope == Answer::Scope::kSession &&
      prepared.approval.session_grant_offered) {
    tools.Grant(prepared.name, policy.epoch());
    audit::AuditRecord granted = call.Record(audit::AuditEvent::kDecision);
    granted.decision = "session-grant";
    granted.rule = authorization.decision.rule;
    granted.detail = absl::StrCat("live-session grant for ", prepared.name,
                                  " until the session ends or the policy changes (epoch ",
                                  policy.epoch(), ")");
    (void)services_.audit->Append(granted, audit::Durability::kBuffered);
  }
  AIRLOCK_ASSIGN_OR_RETURN(PolicyState::Execution execution,
                           services_.policy->BeginExecution(policy.epoch()));
  // What was decided (and perhaps approved) is what runs: every path argument still resolves
  // where and as it did (a link swapped meanwhile would redirect the tool).
  AIRLOCK_ASSIGN_OR_RETURN(std::vector<PathArgument> now,
                           ClassifyPathArguments(*services_.files, prepared.arguments));
  if (now.size() != prepared.paths.size()) {
    return WithRule(WireError(v1::APPROVAL_STALE,
                              absl::StrCat("call_tool ", prepared.name,
                                           " refused: its path arguments changed since the "
                                           "decision; nothing ran")),
                    "approval:stale-target");
  }
  for (size_t i = 0; i < now.size(); ++i) {
    const ClassifiedTarget& was = prepared.paths[i].target;
    if (now[i].target.canonical_path != was.canonical_path ||
        now[i].target.target_class != was.target_class) {
      return WithRule(WireError(v1::APPROVAL_STALE,
                                absl::StrCat("call_tool ", prepared.name, " refused: argument ",
                                             now[i].pointer, " now resolves to ",
                                             now[i].target.canonical_path, " (decided for ",
                                             was.canonical_path, "); nothing ran")),
                      "approval:stale-target");
    }
  }
  audit::AuditRecord intent = call.Record(audit::AuditEvent::kDecision);
  intent.target = prepared.policy_call.target;
  intent.command_sha256 = prepared.arguments_sha256;
  intent.decision = authorization.asked ? "approved" : "allow";
  intent.rule = authorization.decision.rule;
  intent.justification = request.justification();
  intent.detail = prepared.mcp
                      ? absl::StrCat("intent: call MCP tool ", prepared.name)
                      : absl::StrCat("intent: run command tool ", prepared.name,
                                     policy.preset() == v1::PRESET_DANGER_FULL_ACCESS
                                         ? " on the host"
                                         : " sandboxed");
  if (absl::StatusOr<uint64_t> seq = services_.audit->Append(intent, audit::Durability::kDurable);
      !seq.ok()) {
    return WithRule(WireError(v1::INTERNAL, absl::StrCat("call_tool ", prepared.name,
                                                         " refused: the audit log cannot be "
                                                         "written (", seq.status().message(),
                                                         "); nothing ran")),
                    "audit:unwritable");
  }
  return tools.Run(prepared, policy, cancel);
}

}  // namespace airlock::broker
