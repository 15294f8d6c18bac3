#include "worker/mcp_tools.h"

#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace airlock::worker {
namespace {

using google::protobuf::Struct;
using ::testing::HasSubstr;

Struct Args(const std::string& json) {
  Struct args;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &args).ok()) << json;
  return args;
}

std::string Refusal(const std::string& tool, const std::string& json) {
  auto request = RequestForMcpCall(tool, Args(json));
  EXPECT_FALSE(request.ok()) << tool << " " << json;
  return request.ok() ? std::string() : std::string(request.status().message());
}

TEST(McpToolsTest, EveryToolHasAClosedSchemaNamingItsRequiredArguments) {
  const auto tools = McpToolList();
  std::string names;
  for (const auto& tool : tools.values()) {
    const auto& fields = tool.struct_value().fields();
    names += fields.at("name").string_value() + " ";
    EXPECT_FALSE(fields.at("description").string_value().empty());
    const auto& schema = fields.at("inputSchema").struct_value().fields();
    EXPECT_EQ(schema.at("type").string_value(), "object");
    EXPECT_FALSE(schema.at("additionalProperties").bool_value());
    for (const auto& required : schema.at("required").list_value().values()) {
      EXPECT_TRUE(schema.at("properties").struct_value().fields().count(
          required.string_value()));
    }
  }
  EXPECT_EQ(names, "read write edit ls bash context list_tools call_tool ");
}

TEST(McpToolsTest, CallsBecomeTheRequestsAirlockToolMakes) {
  auto read = RequestForMcpCall("read", Args(R"({"path":"a.txt","offset":3,"limit":10})"));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->read().path(), "a.txt");
  EXPECT_EQ(read->read().offset(), 3u);
  EXPECT_EQ(read->read().limit(), 10u);

  auto write = RequestForMcpCall(
      "write", Args(R"({"path":"b","content":"x\ny","justification":"why"})"));
  ASSERT_TRUE(write.ok()) << write.status();
  EXPECT_EQ(write->write().content(), "x\ny");
  EXPECT_EQ(write->write().justification(), "why");
  EXPECT_EQ(write->write().sandbox_permissions(), v1::SANDBOX_PERMISSIONS_UNSPECIFIED);

  auto edit = RequestForMcpCall("edit", Args(R"({"path":"c","old":"a","new":"b","all":true})"));
  ASSERT_TRUE(edit.ok()) << edit.status();
  EXPECT_EQ(edit->edit().old_string(), "a");
  EXPECT_EQ(edit->edit().new_string(), "b");
  EXPECT_TRUE(edit->edit().replace_all());

  auto bash = RequestForMcpCall("bash", Args(R"({"command":"make","timeout":30})"));
  ASSERT_TRUE(bash.ok()) << bash.status();
  EXPECT_EQ(bash->bash().command(), "make");
  EXPECT_EQ(bash->bash().timeout_seconds(), 30u);
  EXPECT_EQ(bash->bash().sandbox_permissions(), v1::SANDBOX_PERMISSIONS_USE_DEFAULT);
  auto escalated = RequestForMcpCall(
      "bash", Args(R"({"command":"make","escalate":true,"justification":"needs net"})"));
  ASSERT_TRUE(escalated.ok()) << escalated.status();
  EXPECT_EQ(escalated->bash().sandbox_permissions(), v1::SANDBOX_PERMISSIONS_REQUIRE_ESCALATED);
  EXPECT_EQ(escalated->bash().justification(), "needs net");

  auto call = RequestForMcpCall("call_tool", Args(R"({"name":"fmt","arguments":{"p":["x"]}})"));
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->call_tool().name(), "fmt");
  EXPECT_EQ(call->call_tool().arguments_json(), R"({"p":["x"]})");
  auto bare = RequestForMcpCall("call_tool", Args(R"({"name":"fmt"})"));
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->call_tool().arguments_json(), "");

  EXPECT_TRUE(RequestForMcpCall("ls", Args(R"({"path":"."})"))->has_list());
  EXPECT_TRUE(RequestForMcpCall("context", Args("{}"))->has_get_context());
  EXPECT_TRUE(RequestForMcpCall("list_tools", Args("{}"))->has_list_tools());
}

TEST(McpToolsTest, ArgumentsOutsideTheSchemaAreRefusedSayingWhich) {
  EXPECT_THAT(Refusal("rm", "{}"), HasSubstr("no tool named 'rm'"));
  EXPECT_THAT(Refusal("read", "{}"), HasSubstr("tool 'read' needs the argument 'path'"));
  EXPECT_THAT(Refusal("read", R"({"path":"a","mode":"x"})"),
              HasSubstr("tool 'read' takes no argument 'mode'"));
  EXPECT_THAT(Refusal("read", R"({"path":7})"), HasSubstr("'path' must be a string"));
  EXPECT_THAT(Refusal("write", R"({"path":"a"})"), HasSubstr("needs the argument 'content'"));
  EXPECT_THAT(Refusal("edit", R"({"path":"a","old":"x","new":"y","all":"yes"})"),
              HasSubstr("'all' must be a boolean"));
  EXPECT_THAT(Refusal("call_tool", R"({"name":"fmt","arguments":"{}"})"),
              HasSubstr("'arguments' must be an object"));
  EXPECT_THAT(Refusal("context", R"({"x":1})"), HasSubstr("takes no argument 'x'"));
}

TEST(McpToolsTest, NumbersADeclaredToolWouldReceiveChangedAreRefused) {
  EXPECT_THAT(Refusal("call_tool", R"({"name":"t","arguments":{"a":[1,{"n":1152921504606846976}]}})"),
              HasSubstr("within ±2^53"));
  EXPECT_TRUE(RequestForMcpCall("call_tool", Args(R"({"name":"t","arguments":{"n":9007199254740992}})")).ok());
}

TEST(McpToolsTest, ARequestLargerThanAFrameIsRefusedNamingTheBound) {
  Struct args;
  (*args.mutable_fields())["path"].set_string_value("big");
  (*args.mutable_fields())["content"].set_string_value(std::string(21u << 20, 'x'));
  auto request = RequestForMcpCall("write", args);
  ASSERT_FALSE(request.ok());
  EXPECT_THAT(request.status().message(), HasSubstr("the broker takes requests of at most"));
  (*args.mutable_fields())["content"].set_string_value(std::string(16u << 20, 'x'));
  EXPECT_TRUE(RequestForMcpCall("write", args).ok());
}

TEST(McpToolsTest, IntegersMustBeWholeNonNegativeAndInRange) {
  for (const char* bad : {"-1", "1.5", "4294967296", "\"30\"", "1e300"}) {
    EXPECT_THAT(Refusal("bash", std::string(R"({"command":"x","timeout":)") + bad + "}"),
                HasSubstr("'timeout' must be an integer from 0 to 4294967295"))
        << bad;
  }
  EXPECT_THAT(Refusal("read", R"({"path":"a","offset":18014398509481984})"),
              HasSubstr("'offset' must be an integer from 0 to 9007199254740992"));
  auto largest = RequestForMcpCall("bash", Args(R"({"command":"x","timeout":4294967295})"));
  ASSERT_TRUE(largest.ok());
  EXPECT_EQ(largest->bash().timeout_seconds(), 4294967295u);
}

}  // namespace
}  // namespace airlock::worker
