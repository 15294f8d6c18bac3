#include "broker/audit/audit_record.h"

#include <array>
#include <utility>

#include "absl/strings/str_cat.h"
#include "broker/audit/audit_crypto.h"
#include "broker/audit/audit_json.h"

namespace airlock::broker::audit {
namespace {

constexpr std::array<std::pair<AuditEvent, absl::string_view>, 12> kEventNames = {{
    {AuditEvent::kRunStart, "run_start"},
    {AuditEvent::kRunEnd, "run_end"},
    {AuditEvent::kRequest, "request"},
    {AuditEvent::kDecision, "decision"},
    {AuditEvent::kApprovalAsked, "approval_asked"},
    {AuditEvent::kApprovalAnswered, "approval_answered"},
    {AuditEvent::kResult, "result"},
    {AuditEvent::kPresetChanged, "preset_changed"},
    {AuditEvent::kProtocolError, "protocol_error"},
    {AuditEvent::kEpochClose, "epoch_close"},
    {AuditEvent::kRecovery, "recovery"},
    {AuditEvent::kSeal, "seal"},
}};

void AppendString(std::string* out, absl::string_view key, absl::string_view value,
                  size_t limit) {
  if (value.empty()) return;
  absl::StrAppend(out, ",\"", key, "\":");
  if (value.size() <= limit) {
    AppendJsonString(out, value);
  } else {
    AppendJsonString(out, absl::StrCat(value.substr(0, limit), "\xe2\x80\xa6[cut ",
                                       value.size() - limit, " bytes]"));
  }
}

template <typename Int>
void AppendInteger(std::string* out, absl::string_view key, const std::optional<Int>& value) {
  if (value.has_value()) absl::StrAppend(out, ",\"", key, "\":", *value);
}

absl::Status CheckDigest(absl::string_view name, absl::string_view value, bool absent_allowed) {
  if (value.empty() || IsLowerHex64(value) || (absent_allowed && value == "absent")) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "audit record field ", name, " must be a SHA-256 (64 lowercase hex digits)",
      absent_allowed ? " or \"absent\"" : "", "; refusing to log anything else there"));
}

}  // namespace

absl::string_view AuditEventName(AuditEvent event) {
  for (const auto& [value, name] : kEventNames) {
    if (value == event) return name;
  }
  return "unknown";
}

std::optional<AuditEvent> AuditEventFromName(absl::string_view name) {
  for (const auto& [value, event_name] : kEventNames) {
    if (event_name == name) return value;
  }
  return std::nullopt;
}

bool IsLogControlEvent(AuditEvent event) {
  return event == AuditEvent::kEpochClose || event == AuditEvent::kRecovery ||
         event == AuditEvent::kSeal;
}

absl::StatusOr<std::string> SerializeRecordFields(const AuditRecord& record) {
  if (IsLogControlEvent(record.event)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "audit event ", AuditEventName(record.event), " is written by the log itself"));
  }
  if (absl::Status s = CheckDigest("content_sha256", record.content_sha256, false); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckDigest("previous_sha256", record.previous_sha256, true); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckDigest("command_sha256", record.command_sha256, false); !s.ok()) {
    return s;
  }
  std::string out;
  AppendInteger(&out, "channel", record.channel);
  AppendInteger(&out, "request_id", record.request_id);
  AppendString(&out, "tool", record.tool, kMaxTextFieldBytes);
  AppendString(&out, "target", record.target, kMaxPathFieldBytes);
  AppendString(&out, "cwd", record.cwd, kMaxPathFieldBytes);
  AppendString(&out, "content_sha256", record.content_sha256, 64);
  AppendString(&out, "previous_sha256", record.previous_sha256, 64);
  AppendString(&out, "command_sha256", record.command_sha256, 64);
  AppendString(&out, "decision", record.decision, kMaxTextFieldBytes);
  AppendString(&out, "rule", record.rule, kMaxTextFieldBytes);
  AppendString(&out, "preset", record.preset, kMaxTextFieldBytes);
  AppendString(&out, "mode", record.mode, kMaxTextFieldBytes);
  AppendString(&out, "approver", record.approver, kMaxTextFieldBytes);
  AppendString(&out, "code", record.code, kMaxTextFieldBytes);
  AppendInteger(&out, "exit_code", record.exit_code);
  AppendInteger(&out, "policy_epoch", record.policy_epoch);
  AppendString(&out, "justification", record.justification, kMaxTextFieldBytes);
  AppendString(&out, "detail", record.detail, kMaxTextFieldBytes);
  return out;
}

}  // namespace airlock::broker::audit
