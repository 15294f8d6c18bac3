#include "worker/tool_output.h"

#include <memory>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "platform/base/utf8.h"

namespace airlock::worker {
namespace {

using google::protobuf::Value;

std::string ToJson(const google::protobuf::Message& message) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  if (!google::protobuf::util::MessageToJsonString(message, &json, options).ok()) return "{}";
  return json;
}

// A JSON string literal, escaped by protobuf's own printer.
std::string JsonString(const std::string& text) {
  Value value;
  value.set_string_value(text);
  return ToJson(value);
}

// {"ok":true, then the result's fields in declaration order}. Byte fields (file content,
// command output) are printed as text when they are valid UTF-8, else base64 as `<name>_base64`.
std::string SuccessJson(const google::protobuf::Message& result) {
  std::unique_ptr<google::protobuf::Message> plain(result.New());
  plain->CopyFrom(result);
  const auto* descriptor = result.GetDescriptor();
  const auto* reflection = result.GetReflection();
  std::string byte_fields;
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const auto* field = descriptor->field(i);
    if (field->type() != google::protobuf::FieldDescriptor::TYPE_BYTES || field->is_repeated()) {
      continue;
    }
    const std::string bytes = reflection->GetString(result, field);
    plain->GetReflection()->ClearField(plain.get(), field);
    if (IsValidUtf8(bytes)) {
      absl::StrAppend(&byte_fields, ",\"", field->name(), "\":", JsonString(bytes));
    } else {
      absl::StrAppend(&byte_fields, ",\"", field->name(), "_base64\":",
                      JsonString(absl::Base64Escape(bytes)));
    }
  }
  std::string body = ToJson(*plain);  // "{…}", byte fields printed as ""
  // Drop the cleared byte fields. An unescaped `"name":""` cannot occur inside a JSON string,
  // and no nested result message has a byte field, so this removes exactly those entries.
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const auto* field = descriptor->field(i);
    if (field->type() != google::protobuf::FieldDescriptor::TYPE_BYTES) continue;
    const std::string entry = absl::StrCat("\"", field->name(), "\":\"\"");
    for (const std::string& form : {entry + ",", "," + entry, entry}) {
      const size_t at = body.find(form);
      if (at != std::string::npos) {
        body.erase(at, form.size());
        break;
      }
    }
  }
  std::string inner = body.size() >= 2 ? body.substr(1, body.size() - 2) : std::string();
  return absl::StrCat("{\"ok\":true", inner.empty() ? "" : ",", inner, byte_fields, "}");
}

ToolOutput RenderError(const v1::Error& error) {
  const v1::ErrorCode code =
      error.code() == v1::ERROR_CODE_UNSPECIFIED ? v1::INTERNAL : error.code();
  std::string json = absl::StrCat("{\"ok\":false,\"error\":{\"code\":",
                                  JsonString(v1::ErrorCode_Name(code)),
                                  ",\"message\":", JsonString(error.message()));
  if (!error.rule().empty()) absl::StrAppend(&json, ",\"rule\":", JsonString(error.rule()));
  if (!error.canonical_path().empty()) {
    absl::StrAppend(&json, ",\"path\":", JsonString(error.canonical_path()));
  }
  absl::StrAppend(&json, "}}");
  return ToolOutput{std::move(json), ExitCodeFor(code)};
}

}  // namespace

int ExitCodeFor(v1::ErrorCode code) {
  switch (code) {
    case v1::ERROR_CODE_UNSPECIFIED:
      return kExitOk;
    case v1::DENIED:
    case v1::OUTSIDE_SANDBOX:
    case v1::PROTECTED_PATH:
    case v1::NOT_APPROVED:
    case v1::APPROVAL_STALE:
      return kExitRefused;
    case v1::SANDBOX_UNAVAILABLE:
      return kExitSandboxUnavailable;
    default:
      return kExitError;
  }
}

ToolOutput RenderResponse(const v1::Response& response) {
  if (response.has_error()) return RenderError(response.error());
  const google::protobuf::Message* result = nullptr;
  switch (response.body_case()) {
    case v1::Response::kRead: result = &response.read(); break;
    case v1::Response::kWrite: result = &response.write(); break;
    case v1::Response::kEdit: result = &response.edit(); break;
    case v1::Response::kList: result = &response.list(); break;
    case v1::Response::kBash: result = &response.bash(); break;
    case v1::Response::kCancel: result = &response.cancel(); break;
    case v1::Response::kContext: result = &response.context(); break;
    case v1::Response::kListTools: result = &response.list_tools(); break;
    case v1::Response::kCallTool: result = &response.call_tool(); break;
    default: {
      v1::Error error;
      error.set_code(v1::INTERNAL);
      error.set_message("the broker sent an empty response");
      return RenderError(error);
    }
  }
  return ToolOutput{SuccessJson(*result), kExitOk};
}

ToolOutput RenderLocalFailure(const absl::Status& status) {
  v1::Error error;
  error.set_code(v1::INTERNAL);
  error.set_message(std::string(status.message()));
  return RenderError(error);
}

}  // namespace airlock::worker
