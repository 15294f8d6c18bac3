#include "worker/mcp_tools.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "platform/ipc/frame_codec.h"

namespace airlock::worker {
namespace {

using google::protobuf::ListValue;
using google::protobuf::Struct;
using google::protobuf::Value;

enum class Type { kString, kInteger, kBoolean, kObject };

const char* TypeName(Type type) {
  switch (type) {
    case Type::kString: return "string";
    case Type::kInteger: return "integer";
    case Type::kBoolean: return "boolean";
    case Type::kObject: return "object";
  }
  return "";
}

struct Parameter {
  const char* name;
  Type type;
  bool required;
  const char* description;
  // kInteger: the largest value accepted (at most 2^53, what a JSON number holds exactly).
  uint64_t maximum = 0;
};

// A tool's arguments once checked against its parameters: every present one has its type.
class Arguments {
 public:
  explicit Arguments(const Struct& fields) : fields_(fields) {}
  std::string String(const char* name) const {
    const Value* v = Find(name);
    return v == nullptr ? std::string() : v->string_value();
  }
  uint64_t Integer(const char* name) const {
    const Value* v = Find(name);
    return v == nullptr ? 0 : static_cast<uint64_t>(v->number_value());
  }
  bool Boolean(const char* name) const {
    const Value* v = Find(name);
    return v != nullptr && v->bool_value();
  }
  // The object as JSON text; empty when absent.
  std::string ObjectJson(const char* name) const {
    const Value* v = Find(name);
    std::string json;
    if (v != nullptr) {
      (void)google::protobuf::util::MessageToJsonString(v->struct_value(), &json);
    }
    return json;
  }

 private:
  const Value* Find(const char* name) const {
    auto it = fields_.fields().find(name);
    return it == fields_.fields().end() ? nullptr : &it->second;
  }
  const Struct& fields_;
};

struct Tool {
  const char* name;
  const char* description;
  std::vector<Parameter> parameters;
  std::function<v1::Request(const Arguments&)> build;
};

constexpr uint64_t kMaxExactInteger = uint64_t{1} << 53;
// A request that fits one frame with room for its envelope.
constexpr size_t kMaxRequestBytes = ipc::kMaxFramePayloadBytes - 4096;
constexpr char kJustification[] = "Why, shown to the person or program that approves it";

const std::vector<Tool>& Tools() {
  static const std::vector<Tool>* const tools = new std::vector<Tool>{
      {"read",
       "Read a file through the airlock broker. Relative paths start at the workspace.",
       {{"path", Type::kString, true, "The file"},
        {"offset", Type::kInteger, false, "Byte offset to start at", kMaxExactInteger},
        {"limit", Type::kInteger, false, "At most this many bytes (0: up to the broker's bound)",
         kMaxExactInteger}},
       [](const Arguments& a) {
         v1::Request request;
         request.mutable_read()->set_path(a.String("path"));
         request.mutable_read()->set_offset(a.Integer("offset"));
         request.mutable_read()->set_limit(a.Integer("limit"));
         return request;
       }},
      {"write",
       "Write a whole file through the airlock broker (atomically; the policy may ask a person "
       "first). Missing parent directories inside the workspace are created.",
       {{"path", Type::kString, true, "The file"},
        {"content", Type::kString, true, "The new content, as text"},
        {"justification", Type::kString, false, kJustification}},
       [](const Arguments& a) {
         v1::Request request;
         request.mutable_write()->set_path(a.String("path"));
         request.mutable_write()->set_content(a.String("content"));
         request.mutable_write()->set_justification(a.String("justification"));
         return request;
       }},
      {"edit",
       "Replace an exact string in a file through the airlock broker. `old` must occur exactly "
       "once unless `all` is true.",
       {{"path", Type::kString, true, "The file"},
        {"old", Type::kString, true, "The exact text to replace"},
        {"new", Type::kString, true, "The replacement"},
        {"all", Type::kBoolean, false, "Replace every occurrence"},
        {"justification", Type::kString, false, kJustification}},
       [](const Arguments& a) {
         v1::Request request;
         v1::EditRequest* body = request.mutable_edit();
         body->set_path(a.String("path"));
         body->set_old_string(a.String("old"));
         body->set_new_string(a.String("new"));
         body->set_replace_all(a.Boolean("all"));
         body->set_justification(a.String("justification"));
         return request;
       }},
      {"ls",
       "List a directory through the airlock broker.",
       {{"path", Type::kString, true, "The directory"}},
       [](const Arguments& a) {
         v1::Request request;
         request.mutable_list()->set_path(a.String("path"));
         return request;
       }},
      {"bash",
       "Run a bash command line in airlock's shell sandbox (the policy decides what it may "
       "write; no network under restricted presets). `escalate` asks to run it without the "
       "sandbox and needs a justification.",
       {{"command", Type::kString, true, "The command line"},
        {"cwd", Type::kString, false, "Working directory (default: the workspace)"},
        {"timeout", Type::kInteger, false, "Seconds (0: the broker's default)",
         std::numeric_limits<uint32_t>::max()},
        {"escalate", Type::kBoolean, false, "Ask to run outside the sandbox"},
        {"justification", Type::kString, false, "Why escalation is needed"}},
       [](const Arguments& a) {
         v1::Request request;
         v1::BashRequest* body = request.mutable_bash();
         body->set_command(a.String("command"));
         body->set_cwd(a.String("cwd"));
         body->set_timeout_seconds(static_cast<uint32_t>(a.Integer("timeout")));
         body->set_sandbox_permissions(a.Boolean("escalate")
                                           ? v1::SANDBOX_PERMISSIONS_REQUIRE_ESCALATED
                                           : v1::SANDBOX_PERMISSIONS_USE_DEFAULT);
         body->set_justification(a.String("justification"));
         return request;
       }},
      {"context",
       "The broker's runtime context: workspace, preset, mode, what is writable and protected.",
       {},
       [](const Arguments&) {
         v1::Request request;
         request.mutable_get_context();
         return request;
       }},
      {"list_tools",
       "List the command tools and MCP tools the operator declared to the broker.",
       {},
       [](const Arguments&) {
         v1::Request request;
         request.mutable_list_tools();
         return request;
       }},
      {"call_tool",
       "Call a command tool or MCP tool the operator declared to the broker (see list_tools).",
       {{"name", Type::kString, true, "The tool: NAME, or SERVER.TOOL for MCP tools"},
        {"arguments", Type::kObject, false, "Its arguments"},
        {"justification", Type::kString, false, kJustification}},
       [](const Arguments& a) {
         v1::Request request;
         v1::CallToolRequest* body = request.mutable_call_tool();
         body->set_name(a.String("name"));
         body->set_arguments_json(a.ObjectJson("arguments"));
         body->set_justification(a.String("justification"));
         return request;
       }},
  };
  return *tools;
}

// Whether every number in `value` lies within ±2^53, where a double (what the JSON parser
// makes of a number) holds integers exactly: a larger one would reach the tool changed.
bool NumbersExact(const Value& value, int depth = 0) {
  if (depth > 64) return false;
  switch (value.kind_case()) {
    case Value::kNumberValue:
      return std::fabs(value.number_value()) <= static_cast<double>(kMaxExactInteger);
    case Value::kStructValue:
      for (const auto& [name, field] : value.struct_value().fields()) {
        if (!NumbersExact(field, depth + 1)) return false;
      }
      return true;
    case Value::kListValue:
      for (const Value& item : value.list_value().values()) {
        if (!NumbersExact(item, depth + 1)) return false;
      }
      return true;
    default:
      return true;
  }
}

bool HasType(const Value& value, const Parameter& parameter) {
  switch (parameter.type) {
    case Type::kString:
      return value.kind_case() == Value::kStringValue;
    case Type::kBoolean:
      return value.kind_case() == Value::kBoolValue;
    case Type::kObject:
      return value.kind_case() == Value::kStructValue && NumbersExact(value);
    case Type::kInteger: {
      if (value.kind_case() != Value::kNumberValue) return false;
      const double n = value.number_value();
      return n >= 0 && std::floor(n) == n && n <= static_cast<double>(parameter.maximum);
    }
  }
  return false;
}

std::string Expected(const Parameter& parameter) {
  switch (parameter.type) {
    case Type::kInteger: return absl::StrCat("an integer from 0 to ", parameter.maximum);
    case Type::kObject: return "an object whose numbers are within ±2^53 (larger ones as strings)";
    default: return absl::StrCat("a ", TypeName(parameter.type));
  }
}

Value Text(const std::string& text) {
  Value value;
  value.set_string_value(text);
  return value;
}

Value Schema(const Tool& tool) {
  Value schema;
  auto& fields = *schema.mutable_struct_value()->mutable_fields();
  fields["type"] = Text("object");
  fields["additionalProperties"].set_bool_value(false);
  Struct& properties = *fields["properties"].mutable_struct_value();
  ListValue& required = *fields["required"].mutable_list_value();
  for (const Parameter& parameter : tool.parameters) {
    Struct& property = *(*properties.mutable_fields())[parameter.name].mutable_struct_value();
    (*property.mutable_fields())["type"] = Text(TypeName(parameter.type));
    (*property.mutable_fields())["description"] = Text(parameter.description);
    if (parameter.type == Type::kInteger) {
      (*property.mutable_fields())["minimum"].set_number_value(0);
      (*property.mutable_fields())["maximum"].set_number_value(
          static_cast<double>(parameter.maximum));
    }
    if (parameter.required) *required.add_values() = Text(parameter.name);
  }
  return schema;
}

}  // namespace

ListValue McpToolList() {
  ListValue list;
  for (const Tool& tool : Tools()) {
    Struct& entry = *list.add_values()->mutable_struct_value();
    (*entry.mutable_fields())["name"] = Text(tool.name);
    (*entry.mutable_fields())["description"] = Text(tool.description);
    (*entry.mutable_fields())["inputSchema"] = Schema(tool);
  }
  return list;
}

absl::StatusOr<v1::Request> RequestForMcpCall(absl::string_view name, const Struct& arguments) {
  const Tool* tool = nullptr;
  for (const Tool& candidate : Tools()) {
    if (name == candidate.name) tool = &candidate;
  }
  if (tool == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("airlock has no tool named '", name, "'"));
  }
  for (const auto& [argument, value] : arguments.fields()) {
    const Parameter* parameter = nullptr;
    for (const Parameter& candidate : tool->parameters) {
      if (argument == candidate.name) parameter = &candidate;
    }
    if (parameter == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("tool '", tool->name, "' takes no argument '", argument, "'"));
    }
    if (!HasType(value, *parameter)) {
      return absl::InvalidArgumentError(absl::StrCat("tool '", tool->name, "': argument '",
                                                     argument, "' must be ",
                                                     Expected(*parameter)));
    }
  }
  for (const Parameter& parameter : tool->parameters) {
    if (parameter.required && arguments.fields().count(parameter.name) == 0) {
      return absl::InvalidArgumentError(absl::StrCat("tool '", tool->name,
                                                     "' needs the argument '", parameter.name,
                                                     "'"));
    }
  }
  v1::Request request = tool->build(Arguments(arguments));
  // What the channel would refuse as a frame: said here, with the bound that matters.
  if (request.ByteSizeLong() > kMaxRequestBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tool '", tool->name, "': the request would be ", request.ByteSizeLong(),
        " bytes; the broker takes requests of at most ", kMaxRequestBytes,
        " bytes (file contents up to 16 MiB)"));
  }
  return request;
}

}  // namespace airlock::worker
