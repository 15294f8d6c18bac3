#include "broker/wire_error.h"

#include <optional>
#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace airlock::broker {
namespace {

constexpr char kCodePayloadUrl[] = "airlock/wire-code";
constexpr char kRulePayloadUrl[] = "airlock/rule";

absl::StatusCode AbslCodeFor(v1::ErrorCode code) {
  switch (code) {
    case v1::INVALID_ARGUMENT:
      return absl::StatusCode::kInvalidArgument;
    case v1::NOT_FOUND:
      return absl::StatusCode::kNotFound;
    case v1::DENIED:
    case v1::OUTSIDE_SANDBOX:
    case v1::PROTECTED_PATH:
    case v1::NOT_APPROVED:
      return absl::StatusCode::kPermissionDenied;
    case v1::APPROVAL_STALE:
      return absl::StatusCode::kAborted;
    case v1::SANDBOX_UNAVAILABLE:
      return absl::StatusCode::kUnavailable;
    case v1::TOO_LARGE:
      return absl::StatusCode::kResourceExhausted;
    case v1::TIMEOUT:
      return absl::StatusCode::kDeadlineExceeded;
    case v1::CANCELLED:
      return absl::StatusCode::kCancelled;
    case v1::BUSY:
      return absl::StatusCode::kFailedPrecondition;
    default:
      return absl::StatusCode::kInternal;
  }
}

}  // namespace

absl::Status WireError(v1::ErrorCode code, absl::string_view message) {
  absl::Status status(AbslCodeFor(code), message);
  status.SetPayload(kCodePayloadUrl, absl::Cord(absl::StrCat(static_cast<int>(code))));
  return status;
}

absl::Status WithRule(absl::Status status, absl::string_view rule) {
  if (!status.ok()) status.SetPayload(kRulePayloadUrl, absl::Cord(rule));
  return status;
}

v1::ErrorCode WireCodeOf(const absl::Status& status) {
  if (status.ok()) return v1::ERROR_CODE_UNSPECIFIED;
  if (auto payload = status.GetPayload(kCodePayloadUrl)) {
    int value = 0;
    if (absl::SimpleAtoi(std::string(*payload), &value) && v1::ErrorCode_IsValid(value)) {
      return static_cast<v1::ErrorCode>(value);
    }
  }
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return v1::INVALID_ARGUMENT;
    case absl::StatusCode::kNotFound:
      return v1::NOT_FOUND;
    case absl::StatusCode::kPermissionDenied:
      return v1::DENIED;
    case absl::StatusCode::kResourceExhausted:
      return v1::TOO_LARGE;
    case absl::StatusCode::kDeadlineExceeded:
      return v1::TIMEOUT;
    case absl::StatusCode::kCancelled:
      return v1::CANCELLED;
    case absl::StatusCode::kUnavailable:
      return v1::SANDBOX_UNAVAILABLE;
    default:
      return v1::INTERNAL;
  }
}

std::string RuleOf(const absl::Status& status) {
  auto payload = status.GetPayload(kRulePayloadUrl);
  return payload.has_value() ? std::string(*payload) : std::string();
}

v1::Error ToWireError(const absl::Status& status, v1::Preset preset) {
  v1::Error error;
  error.set_code(WireCodeOf(status));
  error.set_rule(RuleOf(status));
  error.set_preset(preset);
  std::string message(status.message());
  const std::string preset_note = absl::StrCat("preset ", PresetName(preset));
  if (!absl::StrContains(message, preset_note)) absl::StrAppend(&message, " [", preset_note, "]");
  error.set_message(std::move(message));
  return error;
}

absl::string_view PresetName(v1::Preset preset) {
  switch (preset) {
    case v1::PRESET_READ_ONLY:
      return "read-only";
    case v1::PRESET_WORKSPACE_WRITE:
      return "workspace-write";
    case v1::PRESET_DANGER_FULL_ACCESS:
      return "danger-full-access";
    default:
      return "unspecified";
  }
}

absl::string_view ModeName(v1::Mode mode) {
  switch (mode) {
    case v1::MODE_DEFAULT:
      return "default";
    case v1::MODE_ACCEPT_EDITS:
      return "accept-edits";
    case v1::MODE_ON_REQUEST:
      return "on-request";
    case v1::MODE_NEVER:
      return "never";
    default:
      return "unspecified";
  }
}

absl::string_view ErrorCodeName(v1::ErrorCode code) {
  const std::string& name = v1::ErrorCode_Name(code);
  return name.empty() ? absl::string_view("INTERNAL") : absl::string_view(name);
}

}  // namespace airlock::broker
