#include "platform/base/utf8.h"

namespace airlock {

void AppendUtf8(std::string* out, uint32_t code_point) {
  if (code_point < 0x80) {
    out->push_back(static_cast<char>(code_point));
  } else if (code_point < 0x800) {
    out->push_back(static_cast<char>(0xc0 | (code_point >> 6)));
    out->push_back(static_cast<char>(0x80 | (code_point & 0x3f)));
  } else if (code_point < 0x10000) {
    out->push_back(static_cast<char>(0xe0 | (code_point >> 12)));
    out->push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (code_point & 0x3f)));
  } else {
    out->push_back(static_cast<char>(0xf0 | (code_point >> 18)));
    out->push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (code_point & 0x3f)));
  }
}

size_t DecodeUtf8(absl::string_view text, size_t at, uint32_t* code_point) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  size_t length;
  uint32_t value;
  uint32_t minimum;
  if (lead < 0x80) {
    *code_point = lead;
    return 1;
  } else if ((lead & 0xe0) == 0xc0) {
    length = 2, value = lead & 0x1f, minimum = 0x80;
  } else if ((lead & 0xf0) == 0xe0) {
    length = 3, value = lead & 0x0f, minimum = 0x800;
  } else if ((lead & 0xf8) == 0xf0) {
    length = 4, value = lead & 0x07, minimum = 0x10000;
  } else {
    return 0;
  }
  if (at + length > text.size()) return 0;
  for (size_t i = 1; i < length; ++i) {
    if ((byte(at + i) & 0xc0) != 0x80) return 0;
    value = (value << 6) | (byte(at + i) & 0x3f);
  }
  if (value < minimum || value > 0x10ffff || (value >= 0xd800 && value <= 0xdfff)) return 0;
  *code_point = value;
  return length;
}

bool IsValidUtf8(absl::string_view bytes) {
  for (size_t i = 0; i < bytes.size();) {
    uint32_t code_point;
    const size_t length = DecodeUtf8(bytes, i, &code_point);
    if (length == 0) return false;
    i += length;
  }
  return true;
}

std::string EscapeInvalidUtf8(absl::string_view bytes) {
  if (IsValidUtf8(bytes)) return std::string(bytes);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < bytes.size();) {
    uint32_t code_point;
    const size_t length = DecodeUtf8(bytes, i, &code_point);
    if (length == 0) {
      const unsigned char byte = static_cast<unsigned char>(bytes[i]);
      out += "\\x";
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 0xf]);
      ++i;
    } else {
      out.append(bytes.data() + i, length);
      i += length;
    }
  }
  return out;
}

}  // namespace airlock
