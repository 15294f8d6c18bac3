#include "broker/session/strict_json.h"

#include <string>

#include "airlock/v1/tools.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace airlock::broker {
namespace {

using ::airlock::testing::IsOk;
using ::airlock::testing::StatusIs;
using ::testing::HasSubstr;

absl::Status Parse(const std::string& json) {
  v1::ToolsConfig config;
  return ParseStrictJson(json, &config, "tools.json");
}

TEST(StrictJsonTest, AcceptsPlainJsonWithAwkwardStrings) {
  // Quotes, brackets, commas and escapes inside strings are not structure; equal values
  // under different keys, and equal keys in different objects, are fine.
  EXPECT_THAT(Parse(R"({"commandTools": [
      {"name": "a", "description": "x\", }] {'\\", "argv": ["echo", "a,}", "'q'"]},
      {"name": "b", "description": "x\", }] {'\\", "destructive": true}],
    "mcpServers": [{"name": "s", "command": "c", "args": []}]})"),
              IsOk());
  EXPECT_THAT(Parse("{}"), IsOk());
  EXPECT_THAT(Parse(R"({"commandTools": []})"), IsOk());
}

struct Refused {
  std::string json;
  std::string message;
};

class StrictJsonRefusalTest : public ::testing::TestWithParam<Refused> {};

TEST_P(StrictJsonRefusalTest, IsRefusedNamingTheProblem) {
  EXPECT_THAT(Parse(GetParam().json),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(GetParam().message)))
      << GetParam().json;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, StrictJsonRefusalTest,
    ::testing::Values(
        // Protobuf keeps the last of two equal keys, or joins two arrays.
        Refused{R"({"commandTools": [{"name": "a", "destructive": true, "destructive": false}]})",
                "key \"destructive\" appears twice"},
        Refused{R"({"mcpServers": [{"name": "x", "command": "c"}], "mcpServers": []})",
                "key \"mcpServers\" appears twice"},
        Refused{R"({"commandTools": [{"name": "a", "n\u0061me": "b"}]})",
                "key \"name\" appears twice"},
        // Strings for booleans, at any depth.
        Refused{R"({"commandTools": [{"name": "a"}, {"name": "b", "destructive": "false"}]})",
                "commandTools[1].destructive: must be true or false"},
        Refused{R"({"commandTools": [{"name": "a", "destructive": 1}]})",
                "destructive"},  // refused by protobuf itself
        // A single value for a list, at the top and inside list elements.
        Refused{R"({"commandTools": {"name": "a"}})", "commandTools: must be a JSON array"},
        Refused{R"({"commandTools": [{"name": "a", "argv": "rm"}]})",
                "commandTools[0].argv: must be a JSON array"},
        // What protobuf 3.21 parses but JSON is not.
        Refused{R"({'commandTools': []})", "double-quoted"},
        Refused{R"({"commandTools": [{"name": 'a'}]})", "double quotes"},
        Refused{R"({commandTools: []})", "keys must be double-quoted"},
        Refused{R"({"commandTools": [{"name": "a",}]})", "comma before a closing bracket"},
        Refused{R"({"commandTools": [{"name": "a"},]})", "comma before a closing bracket"},
        // What protobuf itself refuses stays refused.
        Refused{R"({"commandTools": [], "unknown": 1})", "unknown"},
        Refused{R"({"commandTools": [})", "tools.json"}));

}  // namespace
}  // namespace airlock::broker
