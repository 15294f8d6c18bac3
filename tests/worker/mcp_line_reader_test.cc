#include "worker/mcp_line_reader.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace airlock::worker {
namespace {

using ::testing::ElementsAre;

struct Collected {
  std::vector<std::string> lines;
  int overlong = 0;
};

McpLineReader ReaderInto(Collected& out, size_t bound) {
  return McpLineReader(bound, {[&out](absl::string_view line) { out.lines.emplace_back(line); },
                               [&out] { ++out.overlong; }});
}

TEST(McpLineReaderTest, LinesEndAtNewlinesWhateverThePieces) {
  Collected out;
  McpLineReader reader = ReaderInto(out, 100);
  const std::string stream = "{\"a\":1}\r\n\n   \n{\"b\":2}\n{\"c\"";
  for (char c : stream) reader.Feed(std::string(1, c));
  EXPECT_THAT(out.lines, ElementsAre("{\"a\":1}", "{\"b\":2}"));
  reader.Feed(":3}");
  reader.Finish();  // the last line needs no newline
  EXPECT_THAT(out.lines, ElementsAre("{\"a\":1}", "{\"b\":2}", "{\"c\":3}"));
  EXPECT_EQ(out.overlong, 0);
}

TEST(McpLineReaderTest, AnOverlongLineIsSkippedWholeAndReportedOnce) {
  Collected out;
  McpLineReader reader = ReaderInto(out, 8);
  reader.Feed("12345678\n");  // exactly the bound: a line
  reader.Feed("123456789");   // past it: skipped from here ...
  reader.Feed(std::string(1000, 'x'));
  reader.Feed("still the same line\nnext\n");  // ... to its newline
  reader.Feed("tail-too-long");
  reader.Finish();
  EXPECT_THAT(out.lines, ElementsAre("12345678", "next"));
  EXPECT_EQ(out.overlong, 2);
}

}  // namespace
}  // namespace airlock::worker
