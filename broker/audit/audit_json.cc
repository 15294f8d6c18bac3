#include "broker/audit/audit_json.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "platform/base/utf8.h"

namespace airlock::broker::audit {
namespace {

constexpr size_t kMaxFields = 64;

// Code points that must never reach a terminal raw: they move the cursor, end lines in some
// viewers, or reorder the text around them.
bool IsUnsafeCodePoint(uint32_t c) {
  return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0x061c || c == 0x200e || c == 0x200f ||
         (c >= 0x2028 && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069) || c == 0xfeff;
}

class Parser {
 public:
  explicit Parser(absl::string_view text) : text_(text) {}

  absl::Status ParseObject(std::vector<std::pair<std::string, JsonValue>>* out) {
    if (!Consume('{')) return Error("expected '{'");
    if (Consume('}')) return Finish();
    for (;;) {
      if (out->size() >= kMaxFields) return Error("too many fields");
      std::string key;
      if (!Peek('"')) return Error("expected a key");
      if (absl::Status s = ParseString(&key); !s.ok()) return s;
      for (const auto& field : *out) {
        if (field.first == key) return Error(absl::StrCat("duplicate key \"", key, "\""));
      }
      if (!Consume(':')) return Error("expected ':'");
      JsonValue value;
      if (Peek('"')) {
        value.is_string = true;
        if (absl::Status s = ParseString(&value.string_value); !s.ok()) return s;
      } else if (absl::Status s = ParseInteger(&value.int_value); !s.ok()) {
        return s;
      }
      out->emplace_back(std::move(key), std::move(value));
      if (Consume(',')) continue;
      if (Consume('}')) return Finish();
      return Error("expected ',' or '}'");
    }
  }

 private:
  absl::Status Finish() {
    if (at_ != text_.size()) return Error("bytes after the object");
    return absl::OkStatus();
  }

  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat("JSON at byte ", at_, ": ", what));
  }
  bool Peek(char c) const { return at_ < text_.size() && text_[at_] == c; }
  bool Consume(char c) {
    if (!Peek(c)) return false;
    ++at_;
    return true;
  }

  absl::Status ParseHex4(uint32_t* value) {
    if (at_ + 4 > text_.size()) return Error("short \\u escape");
    *value = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[at_++];
      int digit;
      if (c >= '0' && c <= '9') {
        digit = c - '0';
      } else if (c >= 'a' && c <= 'f') {
        digit = c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        digit = c - 'A' + 10;
      } else {
        return Error("bad \\u escape");
      }
      *value = (*value << 4) | static_cast<uint32_t>(digit);
    }
    return absl::OkStatus();
  }

  absl::Status ParseString(std::string* out) {
    ++at_;  // the opening quote
    for (;;) {
      if (at_ >= text_.size()) return Error("unterminated string");
      const unsigned char c = static_cast<unsigned char>(text_[at_]);
      if (c == '"') {
        ++at_;
        return absl::OkStatus();
      }
      if (c < 0x20) return Error("raw control character in a string");
      if (c != '\\') {
        out->push_back(static_cast<char>(c));
        ++at_;
        continue;
      }
      ++at_;
      if (at_ >= text_.size()) return Error("unterminated escape");
      const char e = text_[at_++];
      switch (e) {
        case '"': out->push_back('"'); break;
        case '\\': out->push_back('\\'); break;
        case '/': out->push_back('/'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': {
          uint32_t unit = 0;
          if (absl::Status s = ParseHex4(&unit); !s.ok()) return s;
          if (unit >= 0xdc80 && unit <= 0xdcff) {  // an escaped raw byte
            out->push_back(static_cast<char>(unit - 0xdc00));
          } else if (unit >= 0xd800 && unit <= 0xdbff) {
            if (!(Consume('\\') && Consume('u'))) return Error("lone high surrogate");
            uint32_t low = 0;
            if (absl::Status s = ParseHex4(&low); !s.ok()) return s;
            if (low < 0xdc00 || low > 0xdfff) return Error("bad surrogate pair");
            AppendUtf8(out, 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00));
          } else if (unit >= 0xdc00 && unit <= 0xdfff) {
            return Error("lone low surrogate");
          } else {
            AppendUtf8(out, unit);
          }
          break;
        }
        default:
          return Error("unknown escape");
      }
    }
  }

  absl::Status ParseInteger(int64_t* value) {
    const bool negative = Consume('-');
    const size_t start = at_;
    uint64_t magnitude = 0;
    while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') {
      const uint64_t digit = static_cast<uint64_t>(text_[at_] - '0');
      if (magnitude > (std::numeric_limits<uint64_t>::max() - digit) / 10) {
        return Error("integer out of range");
      }
      magnitude = magnitude * 10 + digit;
      ++at_;
    }
    if (at_ == start) return Error("expected a string or an integer");
    if (at_ - start > 1 && text_[start] == '0') return Error("leading zero");
    const uint64_t limit =
        static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + (negative ? 1 : 0);
    if (magnitude > limit) return Error("integer out of range");
    if (negative && magnitude == 0) return Error("negative zero");
    *value = negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
    return absl::OkStatus();
  }

  absl::string_view text_;
  size_t at_ = 0;
};

}  // namespace

void AppendJsonString(std::string* out, absl::string_view value) {
  out->push_back('"');
  size_t at = 0;
  while (at < value.size()) {
    uint32_t code_point = 0;
    const size_t length = DecodeUtf8(value, at, &code_point);
    if (length == 0) {
      absl::StrAppend(out, absl::StrFormat("\\u%04x", 0xdc00 + static_cast<unsigned char>(value[at])));
      ++at;
      continue;
    }
    if (code_point == '"') {
      out->append("\\\"");
    } else if (code_point == '\\') {
      out->append("\\\\");
    } else if (code_point == '\n') {
      out->append("\\n");
    } else if (code_point == '\t') {
      out->append("\\t");
    } else if (code_point == '\r') {
      out->append("\\r");
    } else if (IsUnsafeCodePoint(code_point)) {
      absl::StrAppend(out, absl::StrFormat("\\u%04x", code_point));
    } else {
      out->append(value.data() + at, length);
    }
    at += length;
  }
  out->push_back('"');
}

const JsonValue* FlatJsonObject::Find(absl::string_view key) const {
  for (const auto& field : fields_) {
    if (field.first == key) return &field.second;
  }
  return nullptr;
}

absl::StatusOr<FlatJsonObject> ParseFlatJsonObject(absl::string_view text) {
  FlatJsonObject object;
  std::vector<std::pair<std::string, JsonValue>> fields;
  Parser parser(text);
  if (absl::Status parsed = parser.ParseObject(&fields); !parsed.ok()) return parsed;
  object.fields_ = std::move(fields);
  return object;
}

std::string EscapeForDisplay(absl::string_view text) {
  std::string out;
  size_t at = 0;
  while (at < text.size()) {
    uint32_t code_point = 0;
    const size_t length = DecodeUtf8(text, at, &code_point);
    if (length == 0) {
      absl::StrAppend(&out, absl::StrFormat("\\x%02x", static_cast<unsigned char>(text[at])));
      ++at;
      continue;
    }
    if (code_point == '\\') {
      out.append("\\\\");
    } else if (code_point == '\n') {
      out.append("\\n");
    } else if (code_point == '\r') {
      out.append("\\r");
    } else if (code_point == '\t') {
      out.append("\\t");
    } else if (IsUnsafeCodePoint(code_point)) {
      if (code_point < 0x100) {
        absl::StrAppend(&out, absl::StrFormat("\\x%02x", code_point));
      } else {
        absl::StrAppend(&out, absl::StrFormat("\\u{%04x}", code_point));
      }
    } else {
      out.append(text.data() + at, length);
    }
    at += length;
  }
  return out;
}

}  // namespace airlock::broker::audit
