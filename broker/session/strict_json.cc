#include "broker/session/strict_json.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace airlock::broker {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Struct;
using google::protobuf::Value;

std::string ToString(const google::protobuf::util::Status& status) {
  return std::string(status.message().data(), status.message().size());
}

// Walks the generic JSON alongside the schema: every repeated field must be a JSON array.
absl::Status CheckShape(const Struct& object, const Descriptor& descriptor, absl::string_view origin) {
  for (const auto& [key, value] : object.fields()) {
    const FieldDescriptor* field = descriptor.FindFieldByName(key);
    for (int i = 0; field == nullptr && i < descriptor.field_count(); ++i) {
      if (descriptor.field(i)->json_name() == key) field = descriptor.field(i);
    }
    if (field == nullptr) continue;  // the real parser reports unknown fields
    if (field->is_repeated() && !field->is_map() && value.kind_case() != Value::kListValue &&
        value.kind_case() != Value::kNullValue) {
      return absl::InvalidArgumentError(
          absl::StrCat(origin, ": field ", key, " must be a JSON array"));
    }
    if (field->type() == FieldDescriptor::TYPE_MESSAGE && !field->is_repeated() &&
        value.kind_case() == Value::kStructValue) {
      const absl::Status nested = CheckShape(value.struct_value(), *field->message_type(), origin);
      if (!nested.ok()) return nested;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseStrictJson(absl::string_view json, google::protobuf::Message* message,
                             absl::string_view origin) {
  const google::protobuf::StringPiece text(json.data(), json.size());
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = google::protobuf::util::JsonStringToMessage(text, message, options);
  if (!status.ok()) return absl::InvalidArgumentError(absl::StrCat(origin, ": ", ToString(status)));
  Struct generic;
  if (google::protobuf::util::JsonStringToMessage(text, &generic).ok()) {
    return CheckShape(generic, *message->GetDescriptor(), origin);
  }
  return absl::OkStatus();
}

}  // namespace airlock::broker
