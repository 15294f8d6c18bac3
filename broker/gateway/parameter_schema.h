// The subset of JSON schema a command tool's `parameters` may use: an object whose properties
// each have one known type (string, number, integer, boolean, array of scalars, object), an
// optional enum of scalars, and a list of required names. Anything else is refused rather than
// silently not enforced: a declaration must not promise a check the broker does not make.
#ifndef BROKER_GATEWAY_PARAMETER_SCHEMA_H_
#define BROKER_GATEWAY_PARAMETER_SCHEMA_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/struct.pb.h"

namespace airlock::broker {

enum class ParameterType { kString, kNumber, kInteger, kBoolean, kArray, kObject };

struct ParameterSpec {
  std::string name;
  ParameterType type = ParameterType::kString;
  bool required = false;
  std::optional<ParameterType> item_type;          // arrays: the type of every element
  std::vector<google::protobuf::Value> enum_values;  // scalars only; empty: any value
};

// Parses a `parameters` schema. An empty Struct declares no parameters. Errors are
// INVALID_ARGUMENT naming the schema field relative to `parameters`, e.g.
// "properties.path.type: unknown type \"str\" (allowed: ...)".
[[nodiscard]] absl::StatusOr<std::vector<ParameterSpec>> ParseParameterSchema(
    const google::protobuf::Struct& parameters);

// The spec named `name`, or nullptr.
const ParameterSpec* FindParameter(const std::vector<ParameterSpec>& specs,
                                   absl::string_view name);

// "string", "number", …
absl::string_view ParameterTypeName(ParameterType type);

// Whether `value` has the declared type (integers: integral and within ±2^53; numbers:
// finite). Does not look inside arrays.
bool HasType(const google::protobuf::Value& value, ParameterType type);

// Checks one argument against its spec: type, array element types, enum. Errors are
// messages without a prefix ("expected integer, got string"), for the caller to place.
[[nodiscard]] absl::Status CheckArgument(const ParameterSpec& spec,
                                         const google::protobuf::Value& value);

// True for characters allowed in parameter names: [A-Za-z0-9_-].
bool IsParameterNameChar(char c);

}  // namespace airlock::broker

#endif  // BROKER_GATEWAY_PARAMETER_SCHEMA_H_
