#include "broker/approval/line_diff.h"

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace airlock::broker {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(UnifiedDiffTest, OneChangedLineWithContext) {
  const std::string diff = UnifiedDiff("a\nb\nc\nd\ne\nf\ng\nh\n", "a\nb\nc\nd\nE\nf\ng\nh\n",
                                       "/w/x.txt", true);
  EXPECT_EQ(diff,
            "--- /w/x.txt\n+++ /w/x.txt\n@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n");
}

TEST(UnifiedDiffTest, NewFile) {
  EXPECT_EQ(UnifiedDiff("", "one\ntwo\n", "n.txt", false),
            "--- /dev/null\n+++ n.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n");
}

TEST(UnifiedDiffTest, InsertionUsesTheLcs) {
  const std::string diff = UnifiedDiff("x\ny\nz\n", "x\nnew\ny\nz\n", "f", true);
  EXPECT_EQ(diff, "--- f\n+++ f\n@@ -1,3 +1,4 @@\n x\n+new\n y\n z\n");
}

TEST(UnifiedDiffTest, DistantChangesMakeTwoHunks) {
  std::string before, after;
  for (int i = 0; i < 30; ++i) {
    absl::StrAppend(&before, "line ", i, "\n");
    absl::StrAppend(&after, i == 2 || i == 25 ? "changed " : "line ", i, "\n");
  }
  const std::string diff = UnifiedDiff(before, after, "f", true);
  EXPECT_THAT(diff, HasSubstr("@@ -1,6 +1,6 @@\n"));
  EXPECT_THAT(diff, HasSubstr("@@ -23,7 +23,7 @@\n"));
  EXPECT_THAT(diff, HasSubstr("-line 25\n+changed 25\n"));
  EXPECT_THAT(diff, Not(HasSubstr(" line 12\n")));
}

TEST(UnifiedDiffTest, BinaryAndUnchanged) {
  EXPECT_THAT(UnifiedDiff(std::string("a\0b", 3), "ab", "f", true),
              HasSubstr("binary content: 3 bytes -> 2 bytes"));
  EXPECT_THAT(UnifiedDiff("same", "same", "f", true), HasSubstr("(content unchanged)"));
}

TEST(UnifiedDiffTest, FinalNewlineChangeIsShown) {
  EXPECT_THAT(UnifiedDiff("a\n", "a", "f", true), HasSubstr("final newline changed"));
}

TEST(UnifiedDiffTest, OutputIsBoundedAndSaysSo) {
  std::string big;
  for (int i = 0; i < 5000; ++i) absl::StrAppend(&big, "row ", i, "\n");
  const std::string diff = UnifiedDiff("", big, "f", false);
  EXPECT_THAT(diff, HasSubstr("... diff truncated: "));
  EXPECT_LE(diff.size(), size_t{70} << 10);
  DiffLimits small;
  small.max_lines = 5;
  const std::string five = UnifiedDiff("", big, "f", false, small);
  EXPECT_THAT(five, HasSubstr("... diff truncated: 4998 more lines"));
}

TEST(UnifiedDiffTest, HugeMiddleFallsBackToRemovedThenAdded) {
  std::string before, after;
  for (int i = 0; i < 1500; ++i) {
    absl::StrAppend(&before, "old ", i, "\n");
    absl::StrAppend(&after, "new ", i, "\n");
  }
  DiffLimits unbounded;
  unbounded.max_lines = 100000;
  unbounded.max_bytes = 10 << 20;
  const std::string diff = UnifiedDiff(before, after, "f", true, unbounded);
  EXPECT_THAT(diff, HasSubstr("not minimal"));
  EXPECT_THAT(diff, HasSubstr("@@ -1,1500 +1,1500 @@"));
}

}  // namespace
}  // namespace airlock::broker
