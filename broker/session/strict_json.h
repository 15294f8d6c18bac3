// Protobuf's JSON parser with the strictness our files need: unknown fields rejected, and a
// repeated field given a single value (which protobuf 3.21 quietly accepts) rejected too.
#ifndef BROKER_SESSION_STRICT_JSON_H_
#define BROKER_SESSION_STRICT_JSON_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace airlock::broker {

// Parses `json` into `message`; errors are prefixed with `origin`.
[[nodiscard]] absl::Status ParseStrictJson(absl::string_view json, google::protobuf::Message* message,
                                           absl::string_view origin);

}  // namespace airlock::broker

#endif  // BROKER_SESSION_STRICT_JSON_H_
