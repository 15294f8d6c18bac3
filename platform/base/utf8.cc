#include "platform/base/utf8.h"

namespace airlock {
namespace {

// The length of the strict UTF-8 sequence starting at bytes[i], or 0 when none does.
size_t SequenceAt(absl::string_view bytes, size_t i) {
  auto at = [&bytes](size_t k) { return static_cast<unsigned char>(bytes[k]); };
  const unsigned char c = at(i);
  size_t length;
  uint32_t code_point;
  if (c < 0x80) {
    return 1;
  } else if ((c & 0xe0) == 0xc0) {
    length = 2;
    code_point = c & 0x1f;
  } else if ((c & 0xf0) == 0xe0) {
    length = 3;
    code_point = c & 0x0f;
  } else if ((c & 0xf8) == 0xf0) {
    length = 4;
    code_point = c & 0x07;
  } else {
    return 0;
  }
  if (i + length > bytes.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((at(i + k) & 0xc0) != 0x80) return 0;
    code_point = (code_point << 6) | (at(i + k) & 0x3f);
  }
  static constexpr uint32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code_point < kMinimum[length] || code_point > 0x10ffff ||
      (code_point >= 0xd800 && code_point <= 0xdfff)) {
    return 0;
  }
  return length;
}

}  // namespace

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

bool IsValidUtf8(absl::string_view bytes) {
  for (size_t i = 0; i < bytes.size();) {
    const size_t length = SequenceAt(bytes, i);
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
    const size_t length = SequenceAt(bytes, i);
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
