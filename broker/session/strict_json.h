// Protobuf's JSON parser with the strictness our files need. Protobuf 3.21 quietly accepts
// what proto3 JSON does not; rejected here, each with a message naming it: unknown fields, a
// repeated field given a single value, a string for a boolean (at any depth, in array
// elements too), a key twice in one object (protobuf keeps the last, or joins the arrays),
// single-quoted strings, unquoted keys and trailing commas.
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
