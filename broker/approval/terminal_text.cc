#include "broker/approval/terminal_text.h"

#include <cstdint>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace airlock::broker {
namespace {

bool IsDangerousCodePoint(uint32_t cp) {
  if (cp >= 0x80 && cp <= 0x9f) return true;      // C1 controls (CSI = U+009B, OSC = U+009D)
  if (cp == 0x061c || cp == 0x200e || cp == 0x200f) return true;  // ALM, LRM, RLM
  if (cp >= 0x202a && cp <= 0x202e) return true;  // LRE RLE PDF LRO RLO
  if (cp >= 0x2066 && cp <= 0x2069) return true;  // LRI RLI FSI PDI
  if (cp == 0x2028 || cp == 0x2029) return true;  // line / paragraph separator
  if (cp == 0xfeff) return true;                  // zero-width no-break space
  return false;
}

// Decodes one UTF-8 sequence at `s[i]`; returns its length (0: invalid) and the code point.
size_t DecodeUtf8(absl::string_view s, size_t i, uint32_t* cp) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = byte(i);
  size_t length = 0;
  uint32_t value = 0;
  uint32_t minimum = 0;
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    length = 2, value = b0 & 0x1f, minimum = 0x80;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    length = 3, value = b0 & 0x0f, minimum = 0x800;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    length = 4, value = b0 & 0x07, minimum = 0x10000;
  } else {
    return 0;
  }
  if (i + length > s.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    const unsigned char b = byte(i + k);
    if ((b & 0xc0) != 0x80) return 0;
    value = (value << 6) | (b & 0x3f);
  }
  if (value < minimum || value > 0x10ffff || (value >= 0xd800 && value <= 0xdfff)) return 0;
  *cp = value;
  return length;
}

}  // namespace

std::string EscapeForTerminal(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\\') {
      out += "\\\\";
      ++i;
    } else if (c < 0x20 || c == 0x7f) {
      out += absl::StrFormat("\\x%02x", c);
      ++i;
    } else if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      ++i;
    } else {
      uint32_t cp = 0;
      const size_t length = DecodeUtf8(text, i, &cp);
      if (length == 0) {
        out += absl::StrFormat("\\x%02x", c);
        ++i;
      } else if (IsDangerousCodePoint(cp)) {
        out += absl::StrFormat("\\u{%04x}", cp);
        i += length;
      } else {
        out.append(text.data() + i, length);
        i += length;
      }
    }
  }
  return out;
}

std::string ToValidUtf8(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    uint32_t cp = 0;
    const size_t length = c < 0x80 ? 1 : DecodeUtf8(text, i, &cp);
    if (length == 0) {
      out += absl::StrFormat("\\x%02x", c);
      ++i;
    } else {
      out.append(text.data() + i, length);
      i += length;
    }
  }
  return out;
}

std::string EscapeLinesForTerminal(absl::string_view text) {
  std::string out;
  bool first = true;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!first) out.push_back('\n');
    first = false;
    out += EscapeForTerminal(line);
  }
  return out;
}

}  // namespace airlock::broker
