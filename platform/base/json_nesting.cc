#include "platform/base/json_nesting.h"

namespace airlock {

bool JsonNestingWithin(absl::string_view json, size_t limit) {
  size_t depth = 0;
  char quote = 0;  // the quote that opened the string being read; 0 outside strings
  bool escaped = false;
  for (const char c : json) {
    if (quote != 0) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == quote) {
        quote = 0;
      }
    } else if (c == '"' || c == '\'') {
      // Protobuf's parser also takes single-quoted strings: a lone ' must not hide brackets.
      quote = c;
    } else if (c == '{' || c == '[') {
      if (++depth > limit) return false;
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
  return true;
}

}  // namespace airlock
