#include "broker/session/strict_json.h"

#include <set>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "platform/base/utf8.h"

namespace airlock::broker {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::ListValue;
using google::protobuf::Struct;
using google::protobuf::Value;

std::string ToString(const google::protobuf::util::Status& status) {
  return std::string(status.message().data(), status.message().size());
}

// --- What protobuf's parser lets through -----------------------------------------------------
// Protobuf 3.21 keeps the last of two equal keys (and joins repeated fields), so a file could
// say one thing to its reader and another to the broker; it also takes single-quoted strings,
// unquoted keys and trailing commas. This walk runs only on text protobuf has already parsed,
// and refuses those: it looks at structure, quotes and object keys, nothing else.

class StrictnessScanner {
 public:
  explicit StrictnessScanner(absl::string_view text) : text_(text) {}

  // What is wrong, or the empty string.
  std::string Problem() {
    std::vector<std::set<std::string>> objects;  // keys of each open object
    std::vector<bool> in_object;                 // per open container: object (true) or array
    bool expect_key = false;
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
        continue;
      }
      if (expect_key && c != '"' && c != '}') return "object keys must be double-quoted strings";
      switch (c) {
        case '{':
          objects.emplace_back();
          in_object.push_back(true);
          expect_key = true;
          ++pos_;
          break;
        case '[':
          in_object.push_back(false);
          ++pos_;
          break;
        case '}':
          if (!objects.empty()) objects.pop_back();
          [[fallthrough]];
        case ']':
          if (!in_object.empty()) in_object.pop_back();
          expect_key = false;
          ++pos_;
          break;
        case ',': {
          size_t next = pos_ + 1;
          while (next < text_.size() && (text_[next] == ' ' || text_[next] == '\t' ||
                                         text_[next] == '\n' || text_[next] == '\r')) {
            ++next;
          }
          if (next < text_.size() && (text_[next] == '}' || text_[next] == ']')) {
            return "a comma before a closing bracket";
          }
          expect_key = !in_object.empty() && in_object.back();
          ++pos_;
          break;
        }
        case '\'':
          return "strings must be in double quotes";
        case '"': {
          std::string decoded = ReadString();
          if (expect_key && !objects.empty()) {
            if (!objects.back().insert(decoded).second) {
              return absl::StrCat("key \"", absl::CEscape(decoded),
                                  "\" appears twice in one object");
            }
            expect_key = false;
          }
          break;
        }
        default:
          ++pos_;  // ':' and the characters of numbers and literals
          break;
      }
    }
    return "";
  }

 private:
  // At an opening quote: the decoded string; pos_ moves past the closing quote.
  std::string ReadString() {
    std::string out;
    ++pos_;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      if (text_[pos_] != '\\') {
        out.push_back(text_[pos_++]);
        continue;
      }
      if (++pos_ >= text_.size()) break;
      const char escaped = text_[pos_++];
      switch (escaped) {
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': AppendUtf8(&out, ReadUnicodeEscape()); break;
        default: out.push_back(escaped); break;  // '"', '\\', '/'
      }
    }
    ++pos_;  // the closing quote
    return out;
  }

  // After "\u": the code point of XXXX, joined with a following "\uXXXX" low surrogate.
  uint32_t ReadUnicodeEscape() {
    uint32_t unit = ReadHex4();
    if (unit >= 0xD800 && unit <= 0xDBFF && pos_ + 6 <= text_.size() && text_[pos_] == '\\' &&
        text_[pos_ + 1] == 'u') {
      const size_t saved = pos_;
      pos_ += 2;
      const uint32_t low = ReadHex4();
      if (low >= 0xDC00 && low <= 0xDFFF) return 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
      pos_ = saved;
    }
    return unit;
  }

  uint32_t ReadHex4() {
    uint32_t value = 0;
    for (int i = 0; i < 4 && pos_ < text_.size(); ++i, ++pos_) {
      const char h = text_[pos_];
      value <<= 4;
      if (h >= '0' && h <= '9') value |= static_cast<uint32_t>(h - '0');
      else if (h >= 'a' && h <= 'f') value |= static_cast<uint32_t>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') value |= static_cast<uint32_t>(h - 'A' + 10);
    }
    return value;
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

// --- Shapes protobuf 3.21 accepts but proto3 JSON does not ----------------------------------

absl::Status Problem(absl::string_view origin, absl::string_view field,
                     absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(origin, ": ", field, ": ", message));
}

absl::Status CheckShape(const Struct& object, const Descriptor& descriptor,
                        const std::string& where, absl::string_view origin);

// One value of `field` (an element, for a repeated field).
absl::Status CheckValue(const Value& value, const FieldDescriptor& field, const std::string& where,
                        absl::string_view origin) {
  if (field.type() == FieldDescriptor::TYPE_BOOL && value.kind_case() != Value::kBoolValue &&
      value.kind_case() != Value::kNullValue) {
    return Problem(origin, where, "must be true or false");
  }
  // google.protobuf.Struct and the other well-known types hold free-form JSON.
  if (field.type() == FieldDescriptor::TYPE_MESSAGE && value.kind_case() == Value::kStructValue &&
      field.message_type()->file()->package() != "google.protobuf") {
    return CheckShape(value.struct_value(), *field.message_type(), where, origin);
  }
  return absl::OkStatus();
}

// Walks the generic JSON alongside the schema: every repeated field must be a JSON array, a
// bool must be a JSON boolean, down through nested messages and array elements.
absl::Status CheckShape(const Struct& object, const Descriptor& descriptor,
                        const std::string& where, absl::string_view origin) {
  for (const auto& [key, value] : object.fields()) {
    const FieldDescriptor* field = descriptor.FindFieldByName(key);
    for (int i = 0; field == nullptr && i < descriptor.field_count(); ++i) {
      if (descriptor.field(i)->json_name() == key) field = descriptor.field(i);
    }
    if (field == nullptr) continue;  // the real parser reports unknown fields
    const std::string path = where.empty() ? key : absl::StrCat(where, ".", key);
    if (field->is_map()) continue;
    if (field->is_repeated()) {
      if (value.kind_case() == Value::kNullValue) continue;
      if (value.kind_case() != Value::kListValue) {
        return Problem(origin, path, "must be a JSON array");
      }
      const ListValue& list = value.list_value();
      for (int i = 0; i < list.values_size(); ++i) {
        const absl::Status element =
            CheckValue(list.values(i), *field, absl::StrCat(path, "[", i, "]"), origin);
        if (!element.ok()) return element;
      }
      continue;
    }
    const absl::Status checked = CheckValue(value, *field, path, origin);
    if (!checked.ok()) return checked;
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
  if (const std::string problem = StrictnessScanner(json).Problem(); !problem.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": ", problem));
  }
  Struct generic;
  if (google::protobuf::util::JsonStringToMessage(text, &generic).ok()) {
    return CheckShape(generic, *message->GetDescriptor(), "", origin);
  }
  return absl::OkStatus();
}

}  // namespace airlock::broker
