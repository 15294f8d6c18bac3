#include "platform/base/utf8.h"

#include <string>

#include "gtest/gtest.h"

namespace airlock {
namespace {

TEST(Utf8Test, StrictUtf8IsValidAndNothingElse) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));  // é € 😀
  for (const char* bad : {"\xff", "\xc0\xaf" /* overlong */, "\xed\xa0\x80" /* surrogate */,
                          "\xf4\x90\x80\x80" /* above U+10FFFF */, "\xe2\x82" /* cut short */,
                          "\x80"}) {
    EXPECT_FALSE(IsValidUtf8(bad)) << bad;
  }
}

TEST(Utf8Test, DecodingGivesTheLengthAndTheCodePoint) {
  uint32_t code_point = 0;
  EXPECT_EQ(DecodeUtf8("a", 0, &code_point), 1u);
  EXPECT_EQ(code_point, 0x61u);
  EXPECT_EQ(DecodeUtf8("x\xe2\x82\xac", 1, &code_point), 3u);
  EXPECT_EQ(code_point, 0x20acu);
  EXPECT_EQ(DecodeUtf8("\xf0\x9f\x98\x80", 0, &code_point), 4u);
  EXPECT_EQ(code_point, 0x1f600u);
  EXPECT_EQ(DecodeUtf8("\xe2\x82", 0, &code_point), 0u);  // cut short
  EXPECT_EQ(DecodeUtf8("\xed\xa0\x80", 0, &code_point), 0u);  // a surrogate
}

TEST(Utf8Test, OnlyTheInvalidBytesAreEscaped) {
  EXPECT_EQ(EscapeInvalidUtf8("caf\xc3\xa9.txt"), "caf\xc3\xa9.txt");
  EXPECT_EQ(EscapeInvalidUtf8("a\xff" "b"), "a\\xffb");
  EXPECT_EQ(EscapeInvalidUtf8("\xe2\x82" "x"), "\\xe2\\x82x");
  EXPECT_EQ(EscapeInvalidUtf8(std::string("\0\x80", 2)), std::string("\0\\x80", 5));
  EXPECT_TRUE(IsValidUtf8(EscapeInvalidUtf8("\xed\xa0\x80\xc3\xa9\xfe")));
}

}  // namespace
}  // namespace airlock
