// $AIRLOCK_HOME/settings.json: parsed by protobuf's JSON parser into v1::Settings (unknown
// fields and wrong types rejected by the parser), then every value validated by name.
#ifndef BROKER_SESSION_SETTINGS_H_
#define BROKER_SESSION_SETTINGS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "airlock/v1/session.pb.h"

namespace airlock::broker {

// Parses settings from JSON text; `origin` names the file in errors.
[[nodiscard]] absl::StatusOr<v1::Settings> ParseSettings(absl::string_view json,
                                                         absl::string_view origin);

// Loads `path`; a missing file is empty settings. Anything unreadable or invalid is an error
// that names the file and the field — the broker refuses to start rather than guess.
[[nodiscard]] absl::StatusOr<v1::Settings> LoadSettings(const std::string& path);

// The closed sets of values, shared with the command line and the session store.
bool IsPresetName(absl::string_view name);
bool IsModeName(absl::string_view name);

}  // namespace airlock::broker

#endif  // BROKER_SESSION_SETTINGS_H_
