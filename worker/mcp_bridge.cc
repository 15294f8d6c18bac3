#include "worker/mcp_bridge.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "platform/base/json_nesting.h"
#include "platform/base/utf8.h"
#include "worker/mcp_tools.h"
#include "worker/tool_output.h"

namespace airlock::worker {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

// The protocol versions airlock's server speaks (the same tools/list and tools/call in all);
// a client asking for another gets the newest, as the MCP handshake prescribes.
constexpr const char* kVersions[] = {"2025-06-18", "2025-03-26", "2024-11-05"};

// JSON-RPC 2.0 error codes.
constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kServerError = -32000;

std::string ToJson(const google::protobuf::Message& message) {
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(message, &json).ok()) return "{}";
  return json;
}

Value Text(const std::string& text) {
  Value value;
  value.set_string_value(text);
  return value;
}

const Value* Field(const Struct& object, const char* name) {
  auto it = object.fields().find(name);
  return it == object.fields().end() ? nullptr : &it->second;
}

Value NullId() {
  Value id;
  id.set_null_value(google::protobuf::NULL_VALUE);
  return id;
}

std::string Result(const Value& id, Struct result) {
  Struct answer;
  (*answer.mutable_fields())["jsonrpc"] = Text("2.0");
  (*answer.mutable_fields())["id"] = id;
  *(*answer.mutable_fields())["result"].mutable_struct_value() = std::move(result);
  return ToJson(answer);
}

std::string Error(const Value& id, int code, const std::string& message) {
  Struct answer;
  (*answer.mutable_fields())["jsonrpc"] = Text("2.0");
  (*answer.mutable_fields())["id"] = id;
  Struct& error = *(*answer.mutable_fields())["error"].mutable_struct_value();
  (*error.mutable_fields())["code"].set_number_value(code);
  // Text the client sent may be quoted in it (a method's name, the parser's complaint).
  (*error.mutable_fields())["message"] = Text(EscapeInvalidUtf8(message));
  return ToJson(answer);
}

McpIncoming Answer(std::string line) {
  McpIncoming incoming;
  incoming.answer = std::move(line);
  return incoming;
}

Struct Initialize(const Struct* params) {
  std::string version = kVersions[0];
  const Value* asked = params == nullptr ? nullptr : Field(*params, "protocolVersion");
  for (const char* known : kVersions) {
    if (asked != nullptr && asked->string_value() == known) version = known;
  }
  Struct result;
  (*result.mutable_fields())["protocolVersion"] = Text(version);
  Struct& capabilities = *(*result.mutable_fields())["capabilities"].mutable_struct_value();
  Struct& tools = *(*capabilities.mutable_fields())["tools"].mutable_struct_value();
  (*tools.mutable_fields())["listChanged"].set_bool_value(false);
  Struct& info = *(*result.mutable_fields())["serverInfo"].mutable_struct_value();
  (*info.mutable_fields())["name"] = Text("airlock");
  (*info.mutable_fields())["version"] = Text("0.1.0");
  (*result.mutable_fields())["instructions"] = Text(
      "Every tool here is a request to the airlock broker, which checks it against the "
      "session's permission preset and mode, may ask a person first, and records it in a "
      "signed audit log. A refusal says what was refused, the rule and the preset: do not "
      "retry it another way.");
  return result;
}

McpIncoming ToolCall(const Value& id, const Struct* params) {
  const Value* name = params == nullptr ? nullptr : Field(*params, "name");
  if (name == nullptr || name->kind_case() != Value::kStringValue) {
    return Answer(Error(id, kInvalidParams, "tools/call needs params.name, a string"));
  }
  const Value* arguments = Field(*params, "arguments");
  if (arguments != nullptr && arguments->kind_case() != Value::kStructValue) {
    return Answer(Error(id, kInvalidParams, "tools/call: params.arguments must be an object"));
  }
  auto request =
      RequestForMcpCall(name->string_value(), arguments == nullptr ? Struct() : arguments->struct_value());
  if (!request.ok()) {
    return Answer(Error(id, kInvalidParams, std::string(request.status().message())));
  }
  McpIncoming incoming;
  incoming.call = McpToolCall{id, ToJson(id), *std::move(request)};
  return incoming;
}

// A request id the answer can repeat exactly: a string, or a number a double holds exactly.
bool UsableId(const Value* id) {
  if (id == nullptr) return false;
  if (id->kind_case() == Value::kStringValue) return IsValidUtf8(id->string_value());
  return id->kind_case() == Value::kNumberValue &&
         std::fabs(id->number_value()) <= static_cast<double>(uint64_t{1} << 53);
}

// `line` with what keeps it from parsing as text replaced — bytes that are not ASCII, and
// \u escapes of UTF-16 surrogates — so that the id of such a request can still be found. Only
// for answering: nothing parsed from it is ever sent to the broker.
std::string WithoutNonAscii(absl::string_view line) {
  std::string out(line);
  bool in_string = false;
  for (size_t i = 0; i < out.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(out[i]);
    if (c >= 0x80) {
      out[i] = '?';
    } else if (!in_string) {
      in_string = c == '"';
    } else if (c == '"') {
      in_string = false;
    } else if (c == '\\' && i + 1 < out.size()) {
      if (out[i + 1] == 'u' && i + 5 < out.size() && (out[i + 2] == 'd' || out[i + 2] == 'D') &&
          std::strchr("89abcdefABCDEF", out[i + 3]) != nullptr && out[i + 3] != '\0') {
        out.replace(i + 2, 4, "003f");
      }
      ++i;  // the escaped character
    }
  }
  return out;
}

// The answer to a line protobuf's JSON parser refused: with the request's id when the line
// parses once its non-ASCII text is set aside (it held text that is not Unicode: invalid
// UTF-8, or an unpaired surrogate escape, which no text field can carry), else with none.
McpIncoming Unparsable(absl::string_view line, const std::string& why) {
  Value message;
  if (google::protobuf::util::JsonStringToMessage(WithoutNonAscii(line), &message).ok() &&
      message.kind_case() == Value::kStructValue) {
    const Value* id = Field(message.struct_value(), "id");
    if (UsableId(id)) {
      return Answer(Error(*id, kInvalidParams,
                          absl::StrCat("Invalid params: the request holds text that is not "
                                       "Unicode (invalid UTF-8, or an unpaired UTF-16 surrogate "
                                       "escape): ", why, "; nothing was done")));
    }
  }
  return Answer(Error(NullId(), kParseError,
                      absl::StrCat("Parse error: ", why, "; nothing was done")));
}

}  // namespace

McpIncoming ReadMcpLine(absl::string_view line) {
  if (!JsonNestingWithin(line, kMaxMcpNesting)) {
    return Answer(Error(NullId(), kParseError,
                        absl::StrCat("Parse error: the message nests objects and arrays more "
                                     "than ", kMaxMcpNesting, " levels deep; nothing was done")));
  }
  Value message;
  if (const auto parsed = google::protobuf::util::JsonStringToMessage(std::string(line), &message);
      !parsed.ok()) {
    return Unparsable(line, std::string(parsed.message().data(), parsed.message().size()));
  }
  if (message.kind_case() != Value::kStructValue) {
    return Answer(Error(NullId(), kInvalidRequest, "Invalid Request: not a JSON object"));
  }
  const Struct& object = message.struct_value();
  const Value* id = Field(object, "id");
  const bool id_usable = UsableId(id);
  const Value answer_id = id_usable ? *id : NullId();
  const Value* version = Field(object, "jsonrpc");
  if (version == nullptr || version->string_value() != "2.0") {
    return Answer(Error(answer_id, kInvalidRequest, "Invalid Request: jsonrpc must be \"2.0\""));
  }
  const Value* method = Field(object, "method");
  if (method == nullptr) return {};  // an answer of the client's: airlock asks it nothing
  if (method->kind_case() != Value::kStringValue || (id != nullptr && !id_usable)) {
    return Answer(Error(answer_id, kInvalidRequest,
                        "Invalid Request: method must be a string, id a string or a number"));
  }
  const Value* params_value = Field(object, "params");
  const Struct* params = params_value != nullptr &&
                                 params_value->kind_case() == Value::kStructValue
                             ? &params_value->struct_value()
                             : nullptr;
  const std::string& name = method->string_value();
  if (id == nullptr) {  // a notification: never answered
    McpIncoming incoming;
    const Value* cancelled = params == nullptr ? nullptr : Field(*params, "requestId");
    if (name == "notifications/cancelled" && cancelled != nullptr) {
      incoming.cancelled = ToJson(*cancelled);
    }
    return incoming;
  }
  if (name == "initialize") return Answer(Result(*id, Initialize(params)));
  if (name == "ping") return Answer(Result(*id, Struct()));
  if (name == "tools/list") {
    Struct result;
    *(*result.mutable_fields())["tools"].mutable_list_value() = McpToolList();
    return Answer(Result(*id, std::move(result)));
  }
  if (name == "tools/call") return ToolCall(*id, params);
  return Answer(Error(*id, kMethodNotFound, absl::StrCat("Method not found: ", name)));
}

std::string McpLineTooLong() {
  return Error(NullId(), kInvalidRequest,
               absl::StrCat("Invalid Request: a message longer than ", kMaxMcpLineBytes,
                            " bytes was skipped unread (a write takes at most 16 MiB); nothing "
                            "was done"));
}

std::string RunMcpToolCall(McpToolCall call, const CallBroker& call_broker) {
  absl::StatusOr<v1::Response> response = call_broker(std::move(call.request));
  const ToolOutput output =
      response.ok() ? RenderResponse(*response) : RenderLocalFailure(response.status());
  // A declared tool that failed or ran out of time failed, though the broker answered; a
  // command's nonzero exit status is its result.
  const bool tool_failed = response.ok() && response->has_call_tool() &&
                           (response->call_tool().is_error() || response->call_tool().timed_out());
  Struct result;
  Value& item = *(*result.mutable_fields())["content"].mutable_list_value()->add_values();
  (*item.mutable_struct_value()->mutable_fields())["type"] = Text("text");
  (*item.mutable_struct_value()->mutable_fields())["text"] = Text(output.json);
  (*result.mutable_fields())["isError"].set_bool_value(output.exit_code != kExitOk || tool_failed);
  return Result(call.id, std::move(result));
}

std::string McpCallNotStarted(const McpToolCall& call, const std::string& why) {
  return Error(call.id, kServerError, absl::StrCat(why, "; the call was not started"));
}

}  // namespace airlock::worker
