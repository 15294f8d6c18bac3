#include "broker/gateway/parameter_schema.h"

#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace airlock::broker {
namespace {

using google::protobuf::ListValue;
using google::protobuf::Struct;
using google::protobuf::Value;

constexpr size_t kMaxParameters = 256;
constexpr size_t kMaxParameterName = 64;
constexpr double kMaxSafeInteger = 9007199254740992.0;  // 2^53

constexpr char kAllowedTypes[] = "string, number, integer, boolean, array, object";

absl::Status Invalid(absl::string_view field, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", message));
}

std::optional<ParameterType> TypeFromName(absl::string_view name) {
  if (name == "string") return ParameterType::kString;
  if (name == "number") return ParameterType::kNumber;
  if (name == "integer") return ParameterType::kInteger;
  if (name == "boolean") return ParameterType::kBoolean;
  if (name == "array") return ParameterType::kArray;
  if (name == "object") return ParameterType::kObject;
  return std::nullopt;
}

bool IsScalarType(ParameterType type) {
  return type != ParameterType::kArray && type != ParameterType::kObject;
}

absl::string_view KindName(const Value& value) {
  switch (value.kind_case()) {
    case Value::kNullValue: return "null";
    case Value::kNumberValue: return "number";
    case Value::kStringValue: return "string";
    case Value::kBoolValue: return "boolean";
    case Value::kStructValue: return "object";
    case Value::kListValue: return "array";
    default: return "nothing";
  }
}

absl::StatusOr<ParameterType> ParseType(const Struct& object, absl::string_view field) {
  auto it = object.fields().find("type");
  if (it == object.fields().end()) return Invalid(field, "missing \"type\"");
  if (it->second.kind_case() != Value::kStringValue) {
    return Invalid(absl::StrCat(field, ".type"),
                   absl::StrCat("must be one type name as a string (allowed: ", kAllowedTypes,
                                ")"));
  }
  std::optional<ParameterType> type = TypeFromName(it->second.string_value());
  if (!type) {
    return Invalid(absl::StrCat(field, ".type"),
                   absl::StrCat("unknown type \"", it->second.string_value(), "\" (allowed: ",
                                kAllowedTypes, ")"));
  }
  return *type;
}

absl::Status CheckString(const Struct& object, absl::string_view key, absl::string_view field) {
  auto it = object.fields().find(std::string(key));
  if (it != object.fields().end() && it->second.kind_case() != Value::kStringValue) {
    return Invalid(absl::StrCat(field, ".", key), "must be a string");
  }
  return absl::OkStatus();
}

// Keys in sorted order, so the first problem reported does not depend on hashing.
std::vector<std::string> SortedKeys(const Struct& object) {
  std::set<std::string> keys;
  for (const auto& [key, value] : object.fields()) keys.insert(key);
  return {keys.begin(), keys.end()};
}

absl::StatusOr<ParameterSpec> ParseProperty(const std::string& name, const Value& value,
                                            const std::string& field) {
  if (name.empty() || name.size() > kMaxParameterName) {
    return Invalid(field, "a parameter name must have 1 to 64 characters");
  }
  for (char c : name) {
    if (!IsParameterNameChar(c)) {
      return Invalid(field, "a parameter name may contain only A-Z a-z 0-9 _ -");
    }
  }
  if (value.kind_case() != Value::kStructValue) return Invalid(field, "must be an object");
  const Struct& object = value.struct_value();
  for (const std::string& key : SortedKeys(object)) {
    if (key != "type" && key != "description" && key != "title" && key != "enum" &&
        key != "items") {
      return Invalid(absl::StrCat(field, ".", key),
                     "unsupported schema keyword (allowed: type, description, title, enum, "
                     "items)");
    }
  }
  ParameterSpec spec;
  spec.name = name;
  auto type = ParseType(object, field);
  if (!type.ok()) return type.status();
  spec.type = *type;
  for (absl::string_view key : {"description", "title"}) {
    if (absl::Status s = CheckString(object, key, field); !s.ok()) return s;
  }
  auto items = object.fields().find("items");
  if (items != object.fields().end()) {
    const std::string items_field = absl::StrCat(field, ".items");
    if (spec.type != ParameterType::kArray) return Invalid(items_field, "only arrays have items");
    if (items->second.kind_case() != Value::kStructValue) {
      return Invalid(items_field, "must be an object");
    }
    const Struct& items_object = items->second.struct_value();
    for (const std::string& key : SortedKeys(items_object)) {
      if (key != "type" && key != "description") {
        return Invalid(absl::StrCat(items_field, ".", key),
                       "unsupported schema keyword (allowed: type, description)");
      }
    }
    auto item_type = ParseType(items_object, items_field);
    if (!item_type.ok()) return item_type.status();
    if (!IsScalarType(*item_type)) {
      return Invalid(absl::StrCat(items_field, ".type"),
                     "array elements must be string, number, integer or boolean");
    }
    spec.item_type = *item_type;
    if (absl::Status s = CheckString(items_object, "description", items_field); !s.ok()) return s;
  }
  auto enum_it = object.fields().find("enum");
  if (enum_it != object.fields().end()) {
    const std::string enum_field = absl::StrCat(field, ".enum");
    if (!IsScalarType(spec.type)) return Invalid(enum_field, "only scalar types take an enum");
    if (enum_it->second.kind_case() != Value::kListValue ||
        enum_it->second.list_value().values().empty()) {
      return Invalid(enum_field, "must be a nonempty array");
    }
    const ListValue& list = enum_it->second.list_value();
    for (int i = 0; i < list.values_size(); ++i) {
      if (!HasType(list.values(i), spec.type)) {
        return Invalid(absl::StrCat(enum_field, "[", i, "]"),
                       absl::StrCat("is not a ", ParameterTypeName(spec.type)));
      }
      spec.enum_values.push_back(list.values(i));
    }
  }
  return spec;
}

bool SameScalar(const Value& a, const Value& b) {
  if (a.kind_case() != b.kind_case()) return false;
  switch (a.kind_case()) {
    case Value::kStringValue: return a.string_value() == b.string_value();
    case Value::kNumberValue: return a.number_value() == b.number_value();
    case Value::kBoolValue: return a.bool_value() == b.bool_value();
    default: return false;
  }
}

}  // namespace

bool IsParameterNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '-';
}

absl::string_view ParameterTypeName(ParameterType type) {
  switch (type) {
    case ParameterType::kString: return "string";
    case ParameterType::kNumber: return "number";
    case ParameterType::kInteger: return "integer";
    case ParameterType::kBoolean: return "boolean";
    case ParameterType::kArray: return "array";
    case ParameterType::kObject: return "object";
  }
  return "unknown";
}

bool HasType(const Value& value, ParameterType type) {
  switch (type) {
    case ParameterType::kString: return value.kind_case() == Value::kStringValue;
    case ParameterType::kNumber:
      return value.kind_case() == Value::kNumberValue && std::isfinite(value.number_value());
    case ParameterType::kInteger: {
      if (value.kind_case() != Value::kNumberValue) return false;
      const double v = value.number_value();
      return std::isfinite(v) && std::trunc(v) == v && std::fabs(v) <= kMaxSafeInteger;
    }
    case ParameterType::kBoolean: return value.kind_case() == Value::kBoolValue;
    case ParameterType::kArray: return value.kind_case() == Value::kListValue;
    case ParameterType::kObject: return value.kind_case() == Value::kStructValue;
  }
  return false;
}

absl::Status CheckArgument(const ParameterSpec& spec, const Value& value) {
  if (!HasType(value, spec.type)) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", ParameterTypeName(spec.type), ", got ", KindName(value)));
  }
  if (spec.item_type) {
    const ListValue& list = value.list_value();
    for (int i = 0; i < list.values_size(); ++i) {
      if (!HasType(list.values(i), *spec.item_type)) {
        return absl::InvalidArgumentError(
            absl::StrCat("element ", i, ": expected ", ParameterTypeName(*spec.item_type),
                         ", got ", KindName(list.values(i))));
      }
    }
  }
  if (!spec.enum_values.empty()) {
    bool found = false;
    for (const Value& allowed : spec.enum_values) found = found || SameScalar(allowed, value);
    if (!found) return absl::InvalidArgumentError("not one of the declared enum values");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ParameterSpec>> ParseParameterSchema(const Struct& parameters) {
  std::vector<ParameterSpec> specs;
  if (parameters.fields().empty()) return specs;
  for (const std::string& key : SortedKeys(parameters)) {
    if (key != "type" && key != "properties" && key != "required" && key != "description" &&
        key != "title" && key != "additionalProperties" && key != "$schema") {
      return Invalid(key,
                     "unsupported schema keyword (allowed: type, properties, required, "
                     "description, title, additionalProperties, $schema)");
    }
  }
  auto type = parameters.fields().find("type");
  if (type == parameters.fields().end() || type->second.kind_case() != Value::kStringValue ||
      type->second.string_value() != "object") {
    return Invalid("type", "must be \"object\"");
  }
  for (absl::string_view key : {"description", "title", "$schema"}) {
    const std::string name(key);
    auto it = parameters.fields().find(name);
    if (it != parameters.fields().end() && it->second.kind_case() != Value::kStringValue) {
      return Invalid(key, "must be a string");
    }
  }
  auto additional = parameters.fields().find("additionalProperties");
  if (additional != parameters.fields().end() &&
      !(additional->second.kind_case() == Value::kBoolValue && !additional->second.bool_value())) {
    // Undeclared arguments are always refused; a schema saying otherwise would mislead.
    return Invalid("additionalProperties", "only false is supported");
  }
  auto properties = parameters.fields().find("properties");
  if (properties != parameters.fields().end()) {
    if (properties->second.kind_case() != Value::kStructValue) {
      return Invalid("properties", "must be an object");
    }
    const Struct& declared = properties->second.struct_value();
    if (static_cast<size_t>(declared.fields_size()) > kMaxParameters) {
      return Invalid("properties", "more than 256 parameters");
    }
    for (const std::string& name : SortedKeys(declared)) {
      auto spec = ParseProperty(name, declared.fields().at(name),
                                absl::StrCat("properties.", name));
      if (!spec.ok()) return spec.status();
      specs.push_back(*std::move(spec));
    }
  }
  auto required = parameters.fields().find("required");
  if (required != parameters.fields().end()) {
    if (required->second.kind_case() != Value::kListValue) {
      return Invalid("required", "must be an array of parameter names");
    }
    const ListValue& names = required->second.list_value();
    for (int i = 0; i < names.values_size(); ++i) {
      const std::string field = absl::StrCat("required[", i, "]");
      if (names.values(i).kind_case() != Value::kStringValue) {
        return Invalid(field, "must be a parameter name");
      }
      const std::string& name = names.values(i).string_value();
      ParameterSpec* spec = nullptr;
      for (ParameterSpec& candidate : specs) {
        if (candidate.name == name) spec = &candidate;
      }
      if (spec == nullptr) {
        return Invalid(field, absl::StrCat("\"", name, "\" is not a declared property"));
      }
      if (spec->required) return Invalid(field, absl::StrCat("\"", name, "\" listed twice"));
      spec->required = true;
    }
  }
  return specs;
}

const ParameterSpec* FindParameter(const std::vector<ParameterSpec>& specs,
                                   absl::string_view name) {
  for (const ParameterSpec& spec : specs) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

}  // namespace airlock::broker
