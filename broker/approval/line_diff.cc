#include "broker/approval/line_diff.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"

namespace airlock::broker {
namespace {

std::vector<absl::string_view> SplitLines(absl::string_view text) {
  std::vector<absl::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == absl::string_view::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

enum class Op : uint8_t { kEqual, kDelete, kInsert };

struct Edit {
  Op op;
  size_t old_line;  // index into old (kEqual, kDelete)
  size_t new_line;  // index into new (kEqual, kInsert)
};

// The edit script of a[a0,a1) against b[b0,b1): LCS when the table is small enough, else
// everything removed then everything added. Sets `*exact` false in the second case.
void DiffMiddle(const std::vector<absl::string_view>& a, size_t a0, size_t a1,
                const std::vector<absl::string_view>& b, size_t b0, size_t b1,
                std::vector<Edit>* out, bool* exact) {
  const size_t n = a1 - a0;
  const size_t m = b1 - b0;
  if (n == 0 || m == 0 || (n + 1) > kMaxDiffCells / (m + 1)) {
    if (n != 0 && m != 0) *exact = false;
    for (size_t i = a0; i < a1; ++i) out->push_back({Op::kDelete, i, b0});
    for (size_t j = b0; j < b1; ++j) out->push_back({Op::kInsert, a1, j});
    return;
  }
  // lcs[i][j]: LCS length of a[a0+i, a1) and b[b0+j, b1).
  std::vector<uint32_t> lcs((n + 1) * (m + 1), 0);
  const auto at = [m](size_t i, size_t j) { return i * (m + 1) + j; };
  for (size_t i = n; i-- > 0;) {
    for (size_t j = m; j-- > 0;) {
      lcs[at(i, j)] = a[a0 + i] == b[b0 + j] ? lcs[at(i + 1, j + 1)] + 1
                                             : std::max(lcs[at(i + 1, j)], lcs[at(i, j + 1)]);
    }
  }
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[a0 + i] == b[b0 + j]) {
      out->push_back({Op::kEqual, a0 + i, b0 + j});
      ++i, ++j;
    } else if (i < n && (j == m || lcs[at(i + 1, j)] >= lcs[at(i, j + 1)])) {
      out->push_back({Op::kDelete, a0 + i, b0 + j});  // removals first, as diff(1) shows them
      ++i;
    } else {
      out->push_back({Op::kInsert, a0 + i, b0 + j});
      ++j;
    }
  }
}

// Collects output lines until a limit is reached, then counts what was left out.
class Output {
 public:
  explicit Output(const DiffLimits& limits) : limits_(limits) {}
  void Line(absl::string_view prefix, absl::string_view text) {
    if (lines_ >= limits_.max_lines || out_.size() + prefix.size() + text.size() + 1 >
                                           limits_.max_bytes) {
      ++omitted_;
      return;
    }
    absl::StrAppend(&out_, prefix, text, "\n");
    ++lines_;
  }
  std::string Finish() {
    if (omitted_ > 0) absl::StrAppend(&out_, "... diff truncated: ", omitted_, " more lines\n");
    return std::move(out_);
  }

 private:
  const DiffLimits& limits_;
  std::string out_;
  size_t lines_ = 0;
  size_t omitted_ = 0;
};

}  // namespace

std::string UnifiedDiff(absl::string_view old_content, absl::string_view new_content,
                        absl::string_view path, bool old_exists, DiffLimits limits) {
  Output output(limits);
  output.Line(old_exists ? "--- " : "--- /dev/null", old_exists ? path : "");
  output.Line("+++ ", path);
  if (old_content.find('\0') != absl::string_view::npos ||
      new_content.find('\0') != absl::string_view::npos) {
    output.Line("", absl::StrCat("binary content: ", old_content.size(), " bytes -> ",
                                 new_content.size(), " bytes"));
    return output.Finish();
  }
  if (old_content == new_content) {
    output.Line("", "(content unchanged)");
    return output.Finish();
  }
  const std::vector<absl::string_view> a = SplitLines(old_content);
  const std::vector<absl::string_view> b = SplitLines(new_content);
  size_t prefix = 0;
  while (prefix < a.size() && prefix < b.size() && a[prefix] == b[prefix]) ++prefix;
  size_t suffix = 0;
  while (suffix < a.size() - prefix && suffix < b.size() - prefix &&
         a[a.size() - 1 - suffix] == b[b.size() - 1 - suffix]) {
    ++suffix;
  }
  std::vector<Edit> edits;
  for (size_t i = 0; i < prefix; ++i) edits.push_back({Op::kEqual, i, i});
  bool exact = true;
  DiffMiddle(a, prefix, a.size() - suffix, b, prefix, b.size() - suffix, &edits, &exact);
  for (size_t k = suffix; k > 0; --k) edits.push_back({Op::kEqual, a.size() - k, b.size() - k});
  if (!exact) output.Line("", "(large change: shown as removed then added, not minimal)");
  const bool trailing_newline_changed = !old_content.empty() && !new_content.empty() &&
                                        (old_content.back() == '\n') != (new_content.back() == '\n');

  // Hunks: runs of changes with `context` equal lines around them.
  size_t k = 0;
  while (k < edits.size()) {
    while (k < edits.size() && edits[k].op == Op::kEqual) ++k;
    if (k == edits.size()) break;
    const size_t start = k >= limits.context ? k - limits.context : 0;
    size_t end = k;
    while (end < edits.size()) {
      if (edits[end].op != Op::kEqual) {
        ++end;
        continue;
      }
      size_t run = end;
      while (run < edits.size() && edits[run].op == Op::kEqual) ++run;
      if (run == edits.size() || run - end > 2 * limits.context) {
        end = std::min(edits.size(), end + limits.context);
        break;
      }
      end = run;
    }
    size_t old_count = 0, new_count = 0;
    for (size_t e = start; e < end; ++e) {
      if (edits[e].op != Op::kInsert) ++old_count;
      if (edits[e].op != Op::kDelete) ++new_count;
    }
    const size_t old_start = old_count == 0 ? edits[start].old_line : edits[start].old_line + 1;
    const size_t new_start = new_count == 0 ? edits[start].new_line : edits[start].new_line + 1;
    output.Line("", absl::StrCat("@@ -", old_start, ",", old_count, " +", new_start, ",",
                                 new_count, " @@"));
    for (size_t e = start; e < end; ++e) {
      switch (edits[e].op) {
        case Op::kEqual:
          output.Line(" ", a[edits[e].old_line]);
          break;
        case Op::kDelete:
          output.Line("-", a[edits[e].old_line]);
          break;
        case Op::kInsert:
          output.Line("+", b[edits[e].new_line]);
          break;
      }
    }
    k = end;
  }
  if (trailing_newline_changed) output.Line("", "\\ the final newline changed");
  return output.Finish();
}

}  // namespace airlock::broker
