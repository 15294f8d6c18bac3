#include "broker/wire_text.h"

#include <string>
#include <vector>

#include "platform/base/utf8.h"

namespace airlock::broker {

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

}  // namespace airlock::broker
