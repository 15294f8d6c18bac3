#include "platform/ipc/message_text.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "platform/base/utf8.h"

namespace airlock::ipc {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

void EscapeInvalidUtf8Strings(Message* message) {
  const Reflection* reflection = message->GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(*message, &fields);
  for (const FieldDescriptor* field : fields) {
    if (field->type() == FieldDescriptor::TYPE_STRING) {
      if (field->is_repeated()) {
        for (int i = 0; i < reflection->FieldSize(*message, field); ++i) {
          const std::string& text = reflection->GetRepeatedStringReference(*message, field, i, nullptr);
          if (!IsValidUtf8(text)) {
            reflection->SetRepeatedString(message, field, i, EscapeInvalidUtf8(text));
          }
        }
      } else {
        std::string scratch;
        const std::string& text = reflection->GetStringReference(*message, field, &scratch);
        if (!IsValidUtf8(text)) reflection->SetString(message, field, EscapeInvalidUtf8(text));
      }
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (field->is_repeated()) {
        for (int i = 0; i < reflection->FieldSize(*message, field); ++i) {
          EscapeInvalidUtf8Strings(reflection->MutableRepeatedMessage(message, field, i));
        }
      } else {
        EscapeInvalidUtf8Strings(reflection->MutableMessage(message, field));
      }
    }
  }
}

namespace {

absl::Status CheckUtf8Strings(const Message& message, const std::string& prefix) {
  const Reflection* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const FieldDescriptor* field : fields) {
    const std::string name = absl::StrCat(prefix, field->name());
    const int count = field->is_repeated() ? reflection->FieldSize(message, field) : 1;
    for (int i = 0; i < count; ++i) {
      const std::string at = field->is_repeated() ? absl::StrCat(name, "[", i, "]") : name;
      if (field->type() == FieldDescriptor::TYPE_STRING) {
        std::string scratch;
        const std::string& text =
            field->is_repeated()
                ? reflection->GetRepeatedStringReference(message, field, i, &scratch)
                : reflection->GetStringReference(message, field, &scratch);
        if (!IsValidUtf8(text)) {
          return absl::InvalidArgumentError(absl::StrCat(
              at, " is not UTF-8 text (\"", EscapeInvalidUtf8(text.substr(0, 80)),
              "\"): the protocol carries paths and commands as text"));
        }
      } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        const Message& inner = field->is_repeated()
                                   ? reflection->GetRepeatedMessage(message, field, i)
                                   : reflection->GetMessage(message, field);
        if (absl::Status status = CheckUtf8Strings(inner, at + "."); !status.ok()) return status;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckUtf8Strings(const Message& message) { return CheckUtf8Strings(message, ""); }

}  // namespace airlock::ipc
