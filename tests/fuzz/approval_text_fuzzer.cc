// Fuzzes what an approval prompt shows (agent-controlled paths, diffs, justifications) and what
// the socket approver's client parses: escaped text never carries a control character, C1
// control, bidi override or invalid UTF-8 to the terminal; the diff and the JSON parser never
// crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "broker/approval/line_diff.h"
#include "broker/approval/prompt.h"
#include "broker/approval/terminal_text.h"

namespace {

// Aborts unless `text` is valid UTF-8 with no C0/C1 control, DEL or bidi/separator code point.
void CheckSafeForTerminal(const std::string& text) {
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f) std::abort();
      ++i;
      continue;
    }
    size_t length = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
    if (length == 0 || i + length > text.size()) std::abort();
    uint32_t cp = c & (0x7f >> length);
    for (size_t k = 1; k < length; ++k) {
      const unsigned char b = static_cast<unsigned char>(text[i + k]);
      if ((b & 0xc0) != 0x80) std::abort();
      cp = (cp << 6) | (b & 0x3f);
    }
    if ((cp >= 0x80 && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) ||
        (cp >= 0x2066 && cp <= 0x2069) || cp == 0x200e || cp == 0x200f || cp == 0x061c ||
        cp == 0x2028 || cp == 0x2029 || (cp >= 0xd800 && cp <= 0xdfff)) {
      std::abort();
    }
    i += length;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  CheckSafeForTerminal(airlock::broker::EscapeForTerminal(input));

  // The first line is the old content's share, the rest the new content.
  const size_t split = input.find('\n') == std::string::npos ? input.size() / 2 : input.find('\n');
  airlock::broker::ApprovalRequest request;
  request.tool = "write";
  request.target = input.substr(0, split);
  request.justification = input;
  request.diff = airlock::broker::UnifiedDiff(input.substr(0, split), input.substr(split),
                                              request.target, true);
  const std::string prompt = airlock::broker::RenderPrompt(request);
  for (size_t start = 0; start < prompt.size();) {
    size_t end = prompt.find('\n', start);
    if (end == std::string::npos) end = prompt.size();
    CheckSafeForTerminal(prompt.substr(start, end - start));
    start = end + 1;
  }

  auto parsed = airlock::broker::RequestFromJson(input);
  if (parsed.ok() && parsed->tool.empty()) std::abort();  // a request always names its tool
  return 0;
}
