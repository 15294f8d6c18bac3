#include "broker/approval/terminal_text.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace airlock::broker {
namespace {

TEST(EscapeForTerminalTest, Table) {
  const struct {
    std::string in;
    std::string out;
  } cases[] = {
      {"plain/path.txt", "plain/path.txt"},
      {"caf\xc3\xa9 \xe2\x9c\x93", "caf\xc3\xa9 \xe2\x9c\x93"},  // printable UTF-8 stays
      {"\x1b[2Jclear", "\\x1b[2Jclear"},                          // CSI
      {"\x1b]0;title\x07", "\\x1b]0;title\\x07"},                 // OSC + BEL
      {"a\rb\nc\td", "a\\x0db\\x0ac\\x09d"},
      {"del\x7f", "del\\x7f"},
      {std::string("nul\0x", 5), "nul\\x00x"},
      {"back\\slash", "back\\\\slash"},
      {"\xc2\x9b" "31m", "\\u{009b}31m"},               // C1 CSI
      {"\xc2\x9d" "0;x", "\\u{009d}0;x"},               // C1 OSC
      {"abc\xe2\x80\xae" "txt.exe", "abc\\u{202e}txt.exe"},  // RLO
      {"\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xac\xe2\x80\xad",
       "\\u{202a}\\u{202b}\\u{202c}\\u{202d}"},
      {"\xe2\x81\xa6\xe2\x81\xa7\xe2\x81\xa8\xe2\x81\xa9",
       "\\u{2066}\\u{2067}\\u{2068}\\u{2069}"},
      {"\xe2\x80\x8f", "\\u{200f}"},                    // RLM
      {"\xff\xfe", "\\xff\\xfe"},                       // invalid UTF-8
      {"\xc0\xaf", "\\xc0\\xaf"},                       // overlong
      {"\xed\xa0\x80", "\\xed\\xa0\\x80"},              // surrogate
      {"\xe2\x80", "\\xe2\\x80"},                       // truncated
  };
  for (const auto& c : cases) {
    EXPECT_EQ(EscapeForTerminal(c.in), c.out) << c.in;
  }
}

TEST(EscapeForTerminalTest, NothingBelowSpaceSurvives) {
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  const std::string out = EscapeForTerminal(all);
  for (char c : out) {
    const unsigned char u = static_cast<unsigned char>(c);
    EXPECT_TRUE(u >= 0x20 && u < 0x7f) << static_cast<int>(u);
  }
}

TEST(EscapeLinesForTerminalTest, KeepsNewlinesEscapesTheRest) {
  EXPECT_EQ(EscapeLinesForTerminal("a\x1b[1m\nb\r\n"), "a\\x1b[1m\nb\\x0d\n");
}

TEST(ToValidUtf8Test, OnlyInvalidBytesChange) {
  EXPECT_EQ(ToValidUtf8("ok \xc3\xa9 \x1b"), "ok \xc3\xa9 \x1b");
  EXPECT_EQ(ToValidUtf8("bad\xff"), "bad\\xff");
}

}  // namespace
}  // namespace airlock::broker
