// UTF-8: encoding one code point (for JSON \u escapes, decoded by more than one reader), and
// telling (and escaping) bytes that are not strict UTF-8 — what protobuf's string fields and
// JSON text must hold.
#ifndef PLATFORM_BASE_UTF8_H_
#define PLATFORM_BASE_UTF8_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace airlock {

// Appends `code_point` (at most 0x10FFFF) as UTF-8.
void AppendUtf8(std::string* out, uint32_t code_point);

// Decodes one UTF-8 sequence at text[at] (at < text.size()). Returns its length and sets
// *code_point, or 0 when the bytes there are not strict UTF-8 (overlong forms, surrogates and
// code points above U+10FFFF included).
size_t DecodeUtf8(absl::string_view text, size_t at, uint32_t* code_point);

// Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
bool IsValidUtf8(absl::string_view bytes);

// `bytes` with every byte that is not part of a strict UTF-8 sequence written as `\xNN`
// (lowercase hex); valid text is returned unchanged.
std::string EscapeInvalidUtf8(absl::string_view bytes);

}  // namespace airlock

#endif  // PLATFORM_BASE_UTF8_H_
