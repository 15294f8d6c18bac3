// A small unified diff over lines, for approval prompts. Bounded in time (an LCS table of at
// most kMaxDiffCells cells after the common prefix and suffix are stripped; beyond that the
// changed middle is shown as removed then added, which is correct but not minimal) and in
// output (truncated with a note).
#ifndef BROKER_APPROVAL_LINE_DIFF_H_
#define BROKER_APPROVAL_LINE_DIFF_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace airlock::broker {

inline constexpr size_t kMaxDiffCells = size_t{1} << 20;

struct DiffLimits {
  size_t max_lines = 400;       // lines of output, headers included
  size_t max_bytes = 64 << 10;  // bytes of output
  size_t context = 3;           // unchanged lines around each change
};

// "--- PATH\n+++ PATH\n@@ -l,s +l,s @@\n…" (PATH is the canonical target); `old_exists`
// false shows "--- /dev/null".
// Content with a NUL byte is summarized ("binary content: N bytes -> M bytes"). Not escaped:
// the caller escapes what it shows.
std::string UnifiedDiff(absl::string_view old_content, absl::string_view new_content,
                        absl::string_view path, bool old_exists, DiffLimits limits = {});

}  // namespace airlock::broker

#endif  // BROKER_APPROVAL_LINE_DIFF_H_
