// Statuses that carry one of the wire's error codes (SPEC §8), and their conversion to the
// wire's Error message. Code that refuses something says which wire code it means; everything
// else is mapped from the absl code.
#ifndef BROKER_WIRE_ERROR_H_
#define BROKER_WIRE_ERROR_H_

#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "airlock/v1/wire.pb.h"

namespace airlock::broker {

// A status whose wire code is `code`. The absl code is chosen to match (DENIED →
// PermissionDenied, TOO_LARGE → ResourceExhausted, …) so generic callers still see sense.
[[nodiscard]] absl::Status WireError(v1::ErrorCode code, absl::string_view message);

// Attaches the rule that decided (e.g. "protected-path:.git/hooks") to a status.
[[nodiscard]] absl::Status WithRule(absl::Status status, absl::string_view rule);

// The wire code of a status: the one attached by WireError, else mapped from the absl code.
v1::ErrorCode WireCodeOf(const absl::Status& status);
std::string RuleOf(const absl::Status& status);

// The wire Error for a failed status, naming the active preset.
v1::Error ToWireError(const absl::Status& status, v1::Preset preset);

// "read-only", "workspace-write", "danger-full-access".
absl::string_view PresetName(v1::Preset preset);
// "default", "accept-edits", "on-request", "never".
absl::string_view ModeName(v1::Mode mode);
// "DENIED", ... as printed by `airlock tool`.
absl::string_view ErrorCodeName(v1::ErrorCode code);

}  // namespace airlock::broker

#endif  // BROKER_WIRE_ERROR_H_
