#include "platform/base/json_nesting.h"

#include <string>

#include "gtest/gtest.h"

namespace airlock {
namespace {

TEST(JsonNestingTest, CountsObjectsAndArraysTogether) {
  EXPECT_TRUE(JsonNestingWithin("{}", 1));
  EXPECT_FALSE(JsonNestingWithin("{}", 0));
  EXPECT_TRUE(JsonNestingWithin(R"({"a":[1,{"b":[]}]})", 4));
  EXPECT_FALSE(JsonNestingWithin(R"({"a":[1,{"b":[]}]})", 3));
  // Siblings do not add up.
  EXPECT_TRUE(JsonNestingWithin("[[],[],[[]]]", 3));
}

TEST(JsonNestingTest, BracketsInsideStringsDoNotCount) {
  EXPECT_TRUE(JsonNestingWithin(R"({"a":"[[[[{{{{"})", 1));
  // An escaped quote does not end the string.
  EXPECT_TRUE(JsonNestingWithin(R"({"a":"\"[[[["})", 1));
  // An escaped backslash does.
  EXPECT_FALSE(JsonNestingWithin(R"({"a":"\\",[[[[ "x"]]]]})", 3));
  // A single quote inside a double-quoted string is text, and the other way round.
  EXPECT_TRUE(JsonNestingWithin(R"({"a":"it's [[[["})", 1));
  EXPECT_TRUE(JsonNestingWithin(R"({"a":'say "[[[["'})", 1));
  // A single-quoted string (which protobuf's parser takes) does not hide what follows it.
  EXPECT_FALSE(JsonNestingWithin(R"({"x":'"',"p":[[[[1]]]]})", 3));
}

TEST(JsonNestingTest, DeepInputIsRefusedWithoutParsingIt) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_FALSE(JsonNestingWithin(deep, 64));
  EXPECT_TRUE(JsonNestingWithin(deep, 100000));
  // Unbalanced closing brackets never make the depth negative.
  EXPECT_FALSE(JsonNestingWithin("]]]][[", 1));
}

}  // namespace
}  // namespace airlock
