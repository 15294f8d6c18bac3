#include "broker/fs/text_edit.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "broker/wire_error.h"

namespace airlock::broker {

absl::StatusOr<EditOutcome> ApplyExactEdit(absl::string_view content, absl::string_view old_text,
                                           absl::string_view new_text, bool replace_all,
                                           absl::string_view path) {
  if (old_text.empty()) {
    return WireError(v1::INVALID_ARGUMENT,
                     absl::StrCat("edit ", path, " refused: the text to replace is empty"));
  }
  std::vector<size_t> matches;
  for (size_t at = content.find(old_text); at != absl::string_view::npos;
       at = content.find(old_text, at + old_text.size())) {
    matches.push_back(at);
  }
  if (matches.empty()) {
    return WireError(v1::INVALID_ARGUMENT,
                     absl::StrCat("edit ", path,
                                  " refused: the text to replace occurs 0 times (it must occur "
                                  "exactly once)"));
  }
  if (matches.size() > 1 && !replace_all) {
    return WireError(v1::INVALID_ARGUMENT,
                     absl::StrCat("edit ", path, " refused: the text to replace occurs ",
                                  matches.size(),
                                  " times (it must occur exactly once; use --all to replace "
                                  "every occurrence)"));
  }
  EditOutcome outcome;
  outcome.content.reserve(content.size() + matches.size() * new_text.size());
  size_t copied = 0;
  for (size_t at : matches) {
    outcome.content.append(content.data() + copied, at - copied);
    outcome.content.append(new_text.data(), new_text.size());
    copied = at + old_text.size();
  }
  outcome.content.append(content.data() + copied, content.size() - copied);
  outcome.replacements = static_cast<uint32_t>(matches.size());
  return outcome;
}

}  // namespace airlock::broker
