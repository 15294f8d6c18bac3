// The `edit` tool's text replacement (SPEC §5): an exact string that must occur exactly once,
// or every occurrence when asked. Pure: no file system.
#ifndef BROKER_FS_TEXT_EDIT_H_
#define BROKER_FS_TEXT_EDIT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace airlock::broker {

struct EditOutcome {
  std::string content;
  uint32_t replacements = 0;
};

// Replaces `old_text` by `new_text` in `content`. Occurrences are counted without overlap,
// left to right. An empty `old_text`, zero occurrences, or several without `replace_all` are
// INVALID_ARGUMENT naming the count; `path` names the file in those messages.
[[nodiscard]] absl::StatusOr<EditOutcome> ApplyExactEdit(absl::string_view content,
                                                         absl::string_view old_text,
                                                         absl::string_view new_text,
                                                         bool replace_all,
                                                         absl::string_view path);

}  // namespace airlock::broker

#endif  // BROKER_FS_TEXT_EDIT_H_
