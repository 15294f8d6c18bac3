// Text that is safe to show on a terminal. Paths, diffs, commands and justifications come from
// the agent; shown raw, an ESC/CSI/OSC sequence or a bidi override could redraw the prompt
// ("Allow? y" over a different path). Everything not plainly printable is shown as an escape.
#ifndef BROKER_APPROVAL_TERMINAL_TEXT_H_
#define BROKER_APPROVAL_TERMINAL_TEXT_H_

#include <string>

#include "absl/strings/string_view.h"

namespace airlock::broker {

// One line of text: C0 controls (newline and tab included), DEL and invalid UTF-8 bytes become
// \xNN; C1 controls (U+0080–U+009F), bidi controls (U+061C, U+200E, U+200F, U+202A–U+202E,
// U+2066–U+2069) and line/paragraph separators (U+2028, U+2029) become \u{NNNN}; a backslash
// becomes \\ so an escape in the input cannot pose as one of ours.
std::string EscapeForTerminal(absl::string_view text);

// The same, but newlines are kept as line breaks (each line escaped on its own).
std::string EscapeLinesForTerminal(absl::string_view text);

// Valid UTF-8 for JSON: bytes that are not part of a valid UTF-8 sequence become the text
// \xNN; everything else is kept (JSON escaping and terminal escaping happen later).
std::string ToValidUtf8(absl::string_view text);

}  // namespace airlock::broker

#endif  // BROKER_APPROVAL_TERMINAL_TEXT_H_
