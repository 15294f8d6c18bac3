// The small JSON subset audit records use: one flat object per line, string and integer
// values, no whitespace. The writer escapes everything that could redraw a terminal; the
// parser is strict (it reads untrusted bytes) and never used to re-create signed bytes.
#ifndef BROKER_AUDIT_AUDIT_JSON_H_
#define BROKER_AUDIT_AUDIT_JSON_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace airlock::broker::audit {

// Appends `value` as a JSON string literal, quotes included. Control characters (C0, DEL, C1),
// line/paragraph separators and bidi controls become \uXXXX; bytes that are not UTF-8 become
// \udc80..\udcff (lone low surrogates, as Python's "surrogateescape"), so no byte is lost.
void AppendJsonString(std::string* out, absl::string_view value);

struct JsonValue {
  bool is_string = false;
  std::string string_value;  // decoded; \udcXX escapes turn back into their raw byte
  int64_t int_value = 0;
};

class FlatJsonObject {
 public:
  // nullptr when absent.
  const JsonValue* Find(absl::string_view key) const;
  const std::vector<std::pair<std::string, JsonValue>>& fields() const { return fields_; }

 private:
  friend absl::StatusOr<FlatJsonObject> ParseFlatJsonObject(absl::string_view text);
  std::vector<std::pair<std::string, JsonValue>> fields_;
};

// Parses `{"k":"v","n":12,...}` exactly: no whitespace, no nesting, no floats, booleans or
// null, no duplicate keys, integers within int64. Anything else is InvalidArgument.
[[nodiscard]] absl::StatusOr<FlatJsonObject> ParseFlatJsonObject(absl::string_view text);

// `text` for a terminal: printable ASCII and valid non-control UTF-8 as they are; `\` as `\\`;
// \n \r \t as such; other control bytes, bidi controls and invalid bytes as \xHH or \u{XXXX}.
std::string EscapeForDisplay(absl::string_view text);

}  // namespace airlock::broker::audit

#endif  // BROKER_AUDIT_AUDIT_JSON_H_
