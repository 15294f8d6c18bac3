#include "broker/fs/text_edit.h"

#include "broker/wire_error.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace airlock::broker {
namespace {

using ::testing::HasSubstr;

TEST(TextEditTest, ReplacesTheSingleOccurrence) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(EditOutcome outcome,
                               ApplyExactEdit("say hi there", "hi", "ho", false, "f"));
  EXPECT_EQ(outcome.content, "say ho there");
  EXPECT_EQ(outcome.replacements, 1u);
}

TEST(TextEditTest, ReplacesEveryOccurrenceWhenAsked) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(EditOutcome outcome, ApplyExactEdit("aaaa", "aa", "b", true, "f"));
  EXPECT_EQ(outcome.content, "bb");  // non-overlapping, left to right
  EXPECT_EQ(outcome.replacements, 2u);
}

TEST(TextEditTest, ZeroSeveralAndEmptyAreErrorsThatSayHowMany) {
  struct Case {
    const char* content;
    const char* old_text;
    const char* message;
  };
  const Case cases[] = {
      {"abc", "x", "occurs 0 times"},
      {"x x x", "x", "occurs 3 times"},
      {"abc", "", "is empty"},
  };
  for (const Case& c : cases) {
    auto outcome = ApplyExactEdit(c.content, c.old_text, "y", false, "/w/f");
    ASSERT_FALSE(outcome.ok());
    EXPECT_EQ(WireCodeOf(outcome.status()), v1::INVALID_ARGUMENT);
    EXPECT_THAT(std::string(outcome.status().message()), HasSubstr(c.message));
    EXPECT_THAT(std::string(outcome.status().message()), HasSubstr("/w/f"));
  }
}

TEST(TextEditTest, HandlesBinaryContent) {
  const std::string content("a\0b\0a", 5);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(EditOutcome outcome,
                               ApplyExactEdit(content, std::string("\0b", 2), "X", false, "f"));
  EXPECT_EQ(outcome.content, std::string("aX\0a", 4));
}

}  // namespace
}  // namespace airlock::broker
