// UTF-8 encoding of one code point (for JSON \u escapes, decoded by more than one reader).
#ifndef PLATFORM_BASE_UTF8_H_
#define PLATFORM_BASE_UTF8_H_

#include <cstdint>
#include <string>

namespace airlock {

// Appends `code_point` (at most 0x10FFFF) as UTF-8.
void AppendUtf8(std::string* out, uint32_t code_point);

}  // namespace airlock

#endif  // PLATFORM_BASE_UTF8_H_
