#include "broker/gateway/argv_template.h"

#include <set>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "broker/gateway/parameter_schema.h"
#include "broker/wire_error.h"
#include "google/protobuf/util/json_util.h"

namespace airlock::broker {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

constexpr size_t kMaxArgvElements = 4096;
constexpr size_t kMaxArgvBytes = 1 << 20;
constexpr int kMaxNesting = 32;

// `argument` may be a name the caller made up: escaped and cut short.
absl::Status Invalid(const v1::CommandTool& tool, absl::string_view argument,
                     absl::string_view message) {
  constexpr size_t kMaxName = 80;
  std::string name = absl::CHexEscape(argument.substr(0, kMaxName));
  if (argument.size() > kMaxName) name.append("…");
  return WireError(v1::INVALID_ARGUMENT,
                   absl::StrCat("tool ", tool.name(), ": argument ", name, ": ", message));
}

// NUL bytes can reach no argv element, and are refused anywhere in the arguments so that
// what the approver and the audit log see is what runs.
bool HasNul(const Value& value, int depth) {
  if (depth > kMaxNesting) return true;
  switch (value.kind_case()) {
    case Value::kStringValue:
      return value.string_value().find('\0') != std::string::npos;
    case Value::kListValue:
      for (const Value& item : value.list_value().values()) {
        if (HasNul(item, depth + 1)) return true;
      }
      return false;
    case Value::kStructValue:
      for (const auto& [key, item] : value.struct_value().fields()) {
        if (key.find('\0') != std::string::npos || HasNul(item, depth + 1)) return true;
      }
      return false;
    default:
      return false;
  }
}

// The text of a scalar: strings as they are, numbers and booleans as JSON writes them.
absl::StatusOr<std::string> ScalarText(const Value& value) {
  switch (value.kind_case()) {
    case Value::kStringValue:
      return value.string_value();
    case Value::kBoolValue:
      return std::string(value.bool_value() ? "true" : "false");
    case Value::kNumberValue: {
      std::string text;
      const auto status = google::protobuf::util::MessageToJsonString(value, &text);
      if (!status.ok()) return absl::InvalidArgumentError("a number JSON cannot write");
      return text;
    }
    default:
      return absl::InvalidArgumentError("not a scalar");
  }
}

// Validates the arguments against the schema; returns the present (non-null) ones.
absl::Status ValidateArguments(const v1::CommandTool& tool,
                               const std::vector<ParameterSpec>& specs, const Struct& arguments) {
  std::set<std::string> names;
  for (const auto& [name, value] : arguments.fields()) names.insert(name);
  for (const std::string& name : names) {
    const Value& value = arguments.fields().at(name);
    if (name.find('\0') != std::string::npos) {
      return WireError(v1::INVALID_ARGUMENT,
                       absl::StrCat("tool ", tool.name(), ": an argument name has a NUL byte"));
    }
    const ParameterSpec* spec = FindParameter(specs, name);
    if (spec == nullptr) return Invalid(tool, name, "no such parameter");
    if (value.kind_case() == Value::kNullValue) continue;
    if (HasNul(value, 0)) return Invalid(tool, name, "NUL byte (or nested too deep)");
    if (absl::Status s = CheckArgument(*spec, value); !s.ok()) {
      return Invalid(tool, name, s.message());
    }
  }
  for (const ParameterSpec& spec : specs) {
    if (!spec.required) continue;
    auto it = arguments.fields().find(spec.name);
    if (it == arguments.fields().end() || it->second.kind_case() == Value::kNullValue) {
      return Invalid(tool, spec.name, "required but absent");
    }
  }
  return absl::OkStatus();
}

const Value* Present(const Struct& arguments, const std::string& name) {
  auto it = arguments.fields().find(name);
  if (it == arguments.fields().end() || it->second.kind_case() == Value::kNullValue) {
    return nullptr;
  }
  return &it->second;
}

}  // namespace

absl::StatusOr<std::vector<TemplatePiece>> ParseTemplateElement(absl::string_view element) {
  std::vector<TemplatePiece> pieces;
  std::string literal;
  auto flush = [&] {
    if (!literal.empty()) pieces.push_back({false, std::move(literal)});
    literal.clear();
  };
  for (size_t i = 0; i < element.size(); ++i) {
    const char c = element[i];
    if (c == '}') {
      if (i + 1 < element.size() && element[i + 1] == '}') {
        literal.push_back('}');
        ++i;
        continue;
      }
      return absl::InvalidArgumentError("a lone '}' (write '}}' for a literal brace)");
    }
    if (c != '{') {
      literal.push_back(c);
      continue;
    }
    if (i + 1 < element.size() && element[i + 1] == '{') {
      literal.push_back('{');
      ++i;
      continue;
    }
    const size_t close = element.find('}', i + 1);
    if (close == absl::string_view::npos) {
      return absl::InvalidArgumentError("an unclosed '{' (write '{{' for a literal brace)");
    }
    const absl::string_view name = element.substr(i + 1, close - i - 1);
    if (name.empty()) return absl::InvalidArgumentError("an empty placeholder {}");
    for (char n : name) {
      if (!IsParameterNameChar(n)) {
        return absl::InvalidArgumentError(
            absl::StrCat("placeholder {", name, "} is not a parameter name (A-Z a-z 0-9 _ -)"));
      }
    }
    flush();
    pieces.push_back({true, std::string(name)});
    i = close;
  }
  flush();
  return pieces;
}

absl::StatusOr<std::vector<std::string>> FillArgv(const v1::CommandTool& tool,
                                                  const Struct& arguments) {
  auto specs = ParseParameterSchema(tool.parameters());
  if (!specs.ok()) {
    return absl::InternalError(absl::StrCat("tool ", tool.name(),
                                            ": parameters not validated: ",
                                            specs.status().message()));
  }
  if (absl::Status s = ValidateArguments(tool, *specs, arguments); !s.ok()) return s;

  std::vector<std::string> argv;
  size_t bytes = 0;
  auto add = [&](std::string element) -> absl::Status {
    bytes += element.size() + 1;
    if (argv.size() >= kMaxArgvElements || bytes > kMaxArgvBytes) {
      return WireError(v1::TOO_LARGE,
                       absl::StrCat("tool ", tool.name(),
                                    ": the filled command line exceeds 4096 elements or 1 MiB"));
    }
    argv.push_back(std::move(element));
    return absl::OkStatus();
  };
  // Until the template's own literal "--", an element that starts with '-' taken from a string
  // value is refused: the program would read it as an option (`--output=PATH`, `-oPATH`), which
  // no path check sees as the path it names. (A negative number names no path.)
  bool options_ended = false;
  auto not_an_option = [&](absl::string_view name, const Value& value,
                           absl::string_view text) -> absl::Status {
    if (options_ended || value.kind_case() != Value::kStringValue || text.size() < 2 ||
        text[0] != '-') {
      return absl::OkStatus();
    }
    return WithRule(Invalid(tool, name,
                            "the value starts with '-', and the program would read it as an "
                            "option (the tool's argv has no literal \"--\" before it)"),
                    "gateway:option-value");
  };
  for (int i = 0; i < tool.argv_size(); ++i) {
    if (tool.argv(i) == "--") options_ended = true;
    auto pieces = ParseTemplateElement(tool.argv(i));
    if (!pieces.ok()) {
      return absl::InternalError(absl::StrCat("tool ", tool.name(), ": argv[", i,
                                              "] not validated: ", pieces.status().message()));
    }
    for (const TemplatePiece& piece : *pieces) {
      if (piece.placeholder && FindParameter(*specs, piece.text) == nullptr) {
        return absl::InternalError(absl::StrCat("tool ", tool.name(), ": argv[", i,
                                                "] names no parameter: {", piece.text, "}"));
      }
    }
    if (i == 0 && (pieces->size() != 1 || (*pieces)[0].placeholder)) {
      // The program is the declaration's, never the caller's.
      return absl::InternalError(
          absl::StrCat("tool ", tool.name(), ": argv[0] must be a literal program"));
    }
    if (pieces->size() == 1 && (*pieces)[0].placeholder) {
      const std::string& name = (*pieces)[0].text;
      const Value* value = Present(arguments, name);
      if (value == nullptr) continue;  // an absent optional argument drops its element
      if (value->kind_case() == Value::kStructValue) {
        return Invalid(tool, name, "an object cannot become a command-line element");
      }
      if (value->kind_case() == Value::kListValue) {
        const auto& items = value->list_value().values();
        for (int k = 0; k < items.size(); ++k) {
          auto text = ScalarText(items[k]);
          if (!text.ok()) {
            return Invalid(tool, name,
                           absl::StrCat("element ", k, ": only arrays of scalars expand"));
          }
          if (absl::Status s = not_an_option(name, items[k], *text); !s.ok()) return s;
          if (absl::Status s = add(*std::move(text)); !s.ok()) return s;
        }
        continue;
      }
      auto text = ScalarText(*value);
      if (!text.ok()) return Invalid(tool, name, text.status().message());
      if (absl::Status s = not_an_option(name, *value, *text); !s.ok()) return s;
      if (absl::Status s = add(*std::move(text)); !s.ok()) return s;
      continue;
    }
    std::string element;
    for (const TemplatePiece& piece : *pieces) {
      if (!piece.placeholder) {
        element.append(piece.text);
        continue;
      }
      const Value* value = Present(arguments, piece.text);
      if (value == nullptr) {
        return Invalid(tool, piece.text,
                       absl::StrCat("absent, but argv[", i, "] needs it inline"));
      }
      auto text = ScalarText(*value);
      if (!text.ok()) {
        return Invalid(tool, piece.text,
                       absl::StrCat("argv[", i, "] substitutes it inline: only scalars fit"));
      }
      element.append(*text);
    }
    // An element that begins with a value is an option if the value makes it one.
    if (!pieces->empty() && (*pieces)[0].placeholder) {
      const std::string& first = (*pieces)[0].text;
      if (absl::Status s = not_an_option(first, *Present(arguments, first), element); !s.ok()) {
        return s;
      }
    }
    if (absl::Status s = add(std::move(element)); !s.ok()) return s;
  }
  return argv;
}

}  // namespace airlock::broker
