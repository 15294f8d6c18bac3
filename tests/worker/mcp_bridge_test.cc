#include "worker/mcp_bridge.h"

#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace airlock::worker {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;
using ::testing::HasSubstr;

// A line the bridge printed, parsed back.
Struct Parsed(const std::string& line) {
  Struct message;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(line, &message).ok()) << line;
  return message;
}

const Value& At(const Struct& object, const std::string& name) {
  static const Value* const missing = new Value;
  auto it = object.fields().find(name);
  EXPECT_TRUE(it != object.fields().end()) << "no field " << name;
  return it == object.fields().end() ? *missing : it->second;
}

// The error code and message of an answer that must be an error.
std::pair<int, std::string> ErrorOf(const McpIncoming& incoming) {
  EXPECT_TRUE(incoming.answer.has_value());
  if (!incoming.answer.has_value()) return {0, ""};
  const Struct error = At(Parsed(*incoming.answer), "error").struct_value();
  return {static_cast<int>(At(error, "code").number_value()), At(error, "message").string_value()};
}

TEST(McpBridgeTest, InitializeAgreesOnAVersionAndOffersTools) {
  McpIncoming incoming = ReadMcpLine(
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05"}})");
  ASSERT_TRUE(incoming.answer.has_value());
  EXPECT_FALSE(incoming.call.has_value());
  const Struct answer = Parsed(*incoming.answer);
  EXPECT_EQ(At(answer, "jsonrpc").string_value(), "2.0");
  EXPECT_EQ(At(answer, "id").number_value(), 1);
  const Struct result = At(answer, "result").struct_value();
  EXPECT_EQ(At(result, "protocolVersion").string_value(), "2024-11-05");
  EXPECT_TRUE(At(At(result, "capabilities").struct_value(), "tools").has_struct_value());
  EXPECT_EQ(At(At(result, "serverInfo").struct_value(), "name").string_value(), "airlock");

  // A version airlock does not know: it answers with its newest.
  incoming = ReadMcpLine(
      R"({"jsonrpc":"2.0","id":"x","method":"initialize","params":{"protocolVersion":"1999-01-01"}})");
  ASSERT_TRUE(incoming.answer.has_value());
  const Struct newest = At(Parsed(*incoming.answer), "result").struct_value();
  EXPECT_EQ(At(newest, "protocolVersion").string_value(), "2025-06-18");
  EXPECT_EQ(At(Parsed(*incoming.answer), "id").string_value(), "x");
}

TEST(McpBridgeTest, ToolsListAndPingAreAnsweredAtOnce) {
  McpIncoming list = ReadMcpLine(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})");
  ASSERT_TRUE(list.answer.has_value());
  const Struct result = At(Parsed(*list.answer), "result").struct_value();
  EXPECT_EQ(At(result, "tools").list_value().values_size(), 8);
  McpIncoming ping = ReadMcpLine(R"({"jsonrpc":"2.0","id":3,"method":"ping"})");
  ASSERT_TRUE(ping.answer.has_value());
  EXPECT_TRUE(At(Parsed(*ping.answer), "result").has_struct_value());
}

TEST(McpBridgeTest, AToolCallIsHandedOutWithItsIdAndRequest) {
  McpIncoming incoming = ReadMcpLine(
      R"({"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"name":"read","arguments":{"path":"a"}}})");
  EXPECT_FALSE(incoming.answer.has_value());
  ASSERT_TRUE(incoming.call.has_value());
  EXPECT_EQ(incoming.call->id.string_value(), "c-1");
  EXPECT_EQ(incoming.call->id_key, "\"c-1\"");
  EXPECT_EQ(incoming.call->request.read().path(), "a");

  // Run: the broker's answer becomes one text item holding what `airlock tool` prints.
  v1::Request seen;
  const std::string answer = RunMcpToolCall(*incoming.call, [&seen](v1::Request request) {
    seen = request;
    v1::Response response;
    response.mutable_read()->set_content("hi");
    return absl::StatusOr<v1::Response>(response);
  });
  EXPECT_EQ(seen.read().path(), "a");
  const Struct message = Parsed(answer);
  EXPECT_EQ(At(message, "id").string_value(), "c-1");
  const Struct result = At(message, "result").struct_value();
  EXPECT_FALSE(At(result, "isError").bool_value());
  const Struct item = At(result, "content").list_value().values(0).struct_value();
  EXPECT_EQ(At(item, "type").string_value(), "text");
  EXPECT_THAT(At(item, "text").string_value(), HasSubstr(R"("ok":true)"));
  EXPECT_THAT(At(item, "text").string_value(), HasSubstr(R"("content":"hi")"));
}

TEST(McpBridgeTest, RefusalsAndFailuresAreToolErrorsNamingTheRule) {
  McpIncoming incoming = ReadMcpLine(
      R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"write","arguments":{"path":".git/config","content":"x"}}})");
  ASSERT_TRUE(incoming.call.has_value());
  const std::string refused = RunMcpToolCall(*incoming.call, [](v1::Request) {
    v1::Response response;
    response.mutable_error()->set_code(v1::PROTECTED_PATH);
    response.mutable_error()->set_message("write refused");
    response.mutable_error()->set_rule("fence:protected:.git/config");
    return absl::StatusOr<v1::Response>(response);
  });
  Struct result = At(Parsed(refused), "result").struct_value();
  EXPECT_TRUE(At(result, "isError").bool_value());
  std::string text = At(At(result, "content").list_value().values(0).struct_value(), "text")
                         .string_value();
  EXPECT_THAT(text, HasSubstr(R"("code":"PROTECTED_PATH")"));
  EXPECT_THAT(text, HasSubstr(R"("rule":"fence:protected:.git/config")"));

  const std::string unreachable = RunMcpToolCall(*incoming.call, [](v1::Request) {
    return absl::StatusOr<v1::Response>(absl::UnavailableError("the broker is gone"));
  });
  result = At(Parsed(unreachable), "result").struct_value();
  EXPECT_TRUE(At(result, "isError").bool_value());
  text = At(At(result, "content").list_value().values(0).struct_value(), "text").string_value();
  EXPECT_THAT(text, HasSubstr("the broker is gone"));
}

TEST(McpBridgeTest, BadToolCallsAreInvalidParamsAndReachNoBroker) {
  auto [code, message] = ErrorOf(ReadMcpLine(
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rm","arguments":{}}})"));
  EXPECT_EQ(code, -32602);
  EXPECT_THAT(message, HasSubstr("no tool named 'rm'"));
  std::tie(code, message) = ErrorOf(ReadMcpLine(
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":[]}})"));
  EXPECT_EQ(code, -32602);
  EXPECT_THAT(message, HasSubstr("arguments must be an object"));
  std::tie(code, message) =
      ErrorOf(ReadMcpLine(R"({"jsonrpc":"2.0","id":1,"method":"tools/call"})"));
  EXPECT_EQ(code, -32602);
  EXPECT_FALSE(ReadMcpLine(R"({"jsonrpc":"2.0","id":1,"method":"tools/call"})").call.has_value());
}

TEST(McpBridgeTest, MalformedLinesGetJsonRpcErrors) {
  EXPECT_EQ(ErrorOf(ReadMcpLine("not json")).first, -32700);
  EXPECT_EQ(ErrorOf(ReadMcpLine(std::string(200, '[') + std::string(200, ']'))).first, -32700);
  EXPECT_EQ(ErrorOf(ReadMcpLine(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])")).first, -32600);
  EXPECT_EQ(ErrorOf(ReadMcpLine(R"({"id":1,"method":"ping"})")).first, -32600);
  EXPECT_EQ(ErrorOf(ReadMcpLine(R"({"jsonrpc":"2.0","id":{},"method":"ping"})")).first, -32600);
  EXPECT_EQ(ErrorOf(ReadMcpLine(R"({"jsonrpc":"2.0","id":1,"method":5})")).first, -32600);
  auto [code, message] = ErrorOf(ReadMcpLine(R"({"jsonrpc":"2.0","id":1,"method":"sampling"})"));
  EXPECT_EQ(code, -32601);
  EXPECT_THAT(message, HasSubstr("sampling"));
  // The id of an answer to a request whose id is unusable is null.
  const McpIncoming bad_id = ReadMcpLine(R"({"jsonrpc":"2.0","id":[1],"method":"ping"})");
  ASSERT_TRUE(bad_id.answer.has_value());
  EXPECT_EQ(At(Parsed(*bad_id.answer), "id").kind_case(), Value::kNullValue);
  EXPECT_EQ(At(Parsed(McpLineTooLong()), "error").struct_value().fields().at("code").number_value(),
            -32600);
}

TEST(McpBridgeTest, TextThatIsNotUnicodeIsRefusedWithTheRequestsId) {
  // A raw byte that is not UTF-8, and an unpaired surrogate escape (JavaScript's JSON.stringify
  // writes one for a broken pair): no text field can carry them.
  for (const std::string& bad : {std::string("\xff\xfe"), std::string("\\ud800")}) {
    const std::string line =
        R"({"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"name":"write","arguments":{"path":"a","content":")" +
        bad + R"("}}})";
    const McpIncoming incoming = ReadMcpLine(line);
    ASSERT_FALSE(incoming.call.has_value()) << line;
    ASSERT_TRUE(incoming.answer.has_value());
    const Struct answer = Parsed(*incoming.answer);
    EXPECT_EQ(At(answer, "id").string_value(), "w") << *incoming.answer;
    const Struct error = At(answer, "error").struct_value();
    EXPECT_EQ(At(error, "code").number_value(), -32602);
    EXPECT_THAT(At(error, "message").string_value(), HasSubstr("not Unicode"));
  }
  // Wherever such text is, the answer is text (found by the fuzzer: the parser's complaint
  // quoted the bytes, and the answer came out as "{}").
  for (const std::string& line :
       {std::string(R"({"jsonrpc":"2.0","id":1,"method":"x)") + "\xff" + R"("})",
        std::string(R"({"jsonrpc":"2.0","id":")") + "\xff" + R"(","method":"ping"})",
        std::string("{\"a\xff\":"),
        // The fuzzer's: the parser's complaint quotes the bytes where it stopped.
        std::string("{\"jsonrpc\":\"2.0\",\"id\"\x00\x00" "a\x10\x00\xc1\x8d\x04od\":1}", 35)}) {
    const McpIncoming incoming = ReadMcpLine(line);
    ASSERT_TRUE(incoming.answer.has_value()) << line;
    const Struct answer = Parsed(*incoming.answer);
    EXPECT_TRUE(answer.fields().count("error")) << *incoming.answer;
  }
  // A line that is no JSON at all: no id to answer with; the parser's reason is given.
  const auto [code, message] = ErrorOf(ReadMcpLine(R"({"jsonrpc":"2.0","id":1,)"));
  EXPECT_EQ(code, -32700);
  EXPECT_THAT(message, HasSubstr("nothing was done"));
  EXPECT_GT(message.size(), std::string("Parse error: ; nothing was done").size());
}

TEST(McpBridgeTest, AnIdTheAnswerCannotRepeatExactlyIsRefused) {
  const McpIncoming huge =
      ReadMcpLine(R"({"jsonrpc":"2.0","id":12345678901234567890,"method":"ping"})");
  ASSERT_TRUE(huge.answer.has_value());
  EXPECT_EQ(At(Parsed(*huge.answer), "id").kind_case(), Value::kNullValue);
  EXPECT_EQ(ErrorOf(huge).first, -32600);
  const McpIncoming exact = ReadMcpLine(R"({"jsonrpc":"2.0","id":9007199254740992,"method":"ping"})");
  ASSERT_TRUE(exact.answer.has_value());
  EXPECT_TRUE(At(Parsed(*exact.answer), "result").has_struct_value());
}

TEST(McpBridgeTest, ADeclaredToolThatFailedOrTimedOutIsAToolError) {
  McpIncoming incoming = ReadMcpLine(
      R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"srv.t"}}})");
  ASSERT_TRUE(incoming.call.has_value());
  for (const bool timed_out : {false, true}) {
    const std::string answer = RunMcpToolCall(*incoming.call, [timed_out](v1::Request) {
      v1::Response response;
      response.mutable_call_tool()->set_is_error(!timed_out);
      response.mutable_call_tool()->set_timed_out(timed_out);
      return absl::StatusOr<v1::Response>(response);
    });
    EXPECT_TRUE(At(At(Parsed(answer), "result").struct_value(), "isError").bool_value())
        << answer;
  }
  // A command's nonzero exit status is its result, not a failure of the tool.
  McpIncoming bash = ReadMcpLine(
      R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"bash","arguments":{"command":"false"}}})");
  ASSERT_TRUE(bash.call.has_value());
  const std::string answer = RunMcpToolCall(*bash.call, [](v1::Request) {
    v1::Response response;
    response.mutable_bash()->set_exit_code(1);
    return absl::StatusOr<v1::Response>(response);
  });
  EXPECT_FALSE(At(At(Parsed(answer), "result").struct_value(), "isError").bool_value());
  // A call that was not started says so, with its id.
  const Struct refused = Parsed(McpCallNotStarted(*bash.call, "too many"));
  EXPECT_EQ(At(refused, "id").number_value(), 5);
  EXPECT_EQ(At(At(refused, "error").struct_value(), "code").number_value(), -32000);
  EXPECT_THAT(At(At(refused, "error").struct_value(), "message").string_value(),
              HasSubstr("too many; the call was not started"));
}

TEST(McpBridgeTest, NotificationsAndTheClientsAnswersAreNeverAnswered) {
  for (const char* line : {R"({"jsonrpc":"2.0","method":"notifications/initialized"})",
                           R"({"jsonrpc":"2.0","method":"tools/call","params":{"name":"read"}})",
                           R"({"jsonrpc":"2.0","id":5,"result":{}})"}) {
    const McpIncoming incoming = ReadMcpLine(line);
    EXPECT_FALSE(incoming.answer.has_value()) << line;
    EXPECT_FALSE(incoming.call.has_value()) << line;
    EXPECT_FALSE(incoming.cancelled.has_value()) << line;
  }
  const McpIncoming cancel = ReadMcpLine(
      R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c-1"}})");
  ASSERT_TRUE(cancel.cancelled.has_value());
  EXPECT_EQ(*cancel.cancelled, "\"c-1\"");
  EXPECT_FALSE(cancel.answer.has_value());
  // The same key as the call's, for numbers too.
  const McpIncoming numbered = ReadMcpLine(
      R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}})");
  const McpIncoming call = ReadMcpLine(
      R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"context"}})");
  ASSERT_TRUE(numbered.cancelled.has_value() && call.call.has_value());
  EXPECT_EQ(*numbered.cancelled, call.call->id_key);
}

}  // namespace
}  // namespace airlock::worker
