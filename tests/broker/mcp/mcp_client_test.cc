// The MCP client against the test server run on the host (pipes, no sandbox) and against
// scripted answers written into a pipe.
#include "broker/mcp/mcp_client.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "broker/wire_error.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "platform/process/kept_process.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker {
namespace {

using ::airlock::testing::ReadFileOrMissing;
using ::airlock::testing::TempDir;
using ::google::protobuf::Struct;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kServer[] = AIRLOCK_TEST_MCP_SERVER;

Struct Args(const std::string& json) {
  Struct args;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &args).ok()) << json;
  return args;
}

std::vector<std::string> Names(const std::vector<McpTool>& tools) {
  std::vector<std::string> names;
  for (const McpTool& tool : tools) names.push_back(tool.name);
  return names;
}

class McpClientTest : public ::testing::Test {
 protected:
  // Starts the test server on the host with `flags`.
  void StartServer(std::vector<std::string> flags = {}) {
    KeptProcess::Options options;
    options.spawn.argv = {kServer};
    options.spawn.argv.insert(options.spawn.argv.end(), flags.begin(), flags.end());
    auto process = KeptProcess::Start(std::move(options));
    ASSERT_TRUE(process.ok()) << process.status();
    server_ = std::move(*process);
  }

  absl::StatusOr<std::unique_ptr<McpClient>> Connect(McpLimits limits = {}) {
    return McpClient::Connect(server_->stdin_fd(), server_->stdout_fd(), "test", absl::Seconds(10),
                              limits);
  }

  std::unique_ptr<McpClient> ConnectOrDie(std::vector<std::string> flags = {}) {
    StartServer(std::move(flags));
    auto client = Connect();
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? std::move(*client) : nullptr;
  }

  std::unique_ptr<KeptProcess> server_;
};

TEST_F(McpClientTest, HandshakeListAndCall) {
  std::unique_ptr<McpClient> client = ConnectOrDie();
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->protocol_version(), "2025-06-18");
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::vector<McpTool> tools, client->ListTools(absl::Seconds(10)));
  EXPECT_THAT(Names(tools), ElementsAre("echo", "write_file", "read_file", "sleep"));
  EXPECT_EQ(tools[0].description, "Returns its text");
  EXPECT_THAT(tools[1].input_schema_json, HasSubstr("\"content\""));
  EXPECT_THAT(tools[1].input_schema_json, HasSubstr("\"object\""));

  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      McpCallResult echo,
      client->CallTool("echo", Args(R"({"text":"hi\nthere \u00e9"})"), absl::Seconds(10)));
  EXPECT_FALSE(echo.is_error);
  EXPECT_EQ(echo.text, "hi\nthere \xc3\xa9");
  EXPECT_THAT(echo.result_json, HasSubstr("\"content\""));
  EXPECT_FALSE(client->broken());
}

TEST_F(McpClientTest, ToolFailuresAreResultsAndUnknownToolsAreRefused) {
  TempDir dir;
  std::unique_ptr<McpClient> client = ConnectOrDie();
  ASSERT_NE(client, nullptr);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      McpCallResult failed,
      client->CallTool("write_file", Args(R"({"path":")" + dir.Child("no/such/dir") +
                                          R"(","content":"x"})"),
                       absl::Seconds(10)));
  EXPECT_TRUE(failed.is_error);
  EXPECT_THAT(failed.text, HasSubstr("No such file or directory"));

  auto unknown = client->CallTool("nope", Struct(), absl::Seconds(10));
  EXPECT_EQ(WireCodeOf(unknown.status()), v1::INVALID_ARGUMENT);
  EXPECT_THAT(std::string(unknown.status().message()), HasSubstr("Unknown tool: nope"));
  EXPECT_THAT(std::string(unknown.status().message()), HasSubstr("MCP server 'test'"));
  // A JSON-RPC error is an answer: the connection stays usable.
  EXPECT_FALSE(client->broken());
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      McpCallResult wrote,
      client->CallTool("write_file",
                       Args(R"({"path":")" + dir.Child("f") + R"(","content":"abc"})"),
                       absl::Seconds(10)));
  EXPECT_FALSE(wrote.is_error) << wrote.text;
  EXPECT_EQ(ReadFileOrMissing(dir.Child("f")), "abc");
}

TEST_F(McpClientTest, PagesAreFollowed) {
  std::unique_ptr<McpClient> client = ConnectOrDie({"--many-tools=6", "--page-size=3"});
  ASSERT_NE(client, nullptr);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::vector<McpTool> tools, client->ListTools(absl::Seconds(10)));
  EXPECT_THAT(Names(tools), ElementsAre("echo", "write_file", "read_file", "sleep", "t0", "t1",
                                        "t2", "t3", "t4", "t5"));
}

TEST_F(McpClientTest, TooManyToolsBreakTheConnection) {
  std::unique_ptr<McpClient> client = ConnectOrDie({"--many-tools=1200", "--page-size=100"});
  ASSERT_NE(client, nullptr);
  auto tools = client->ListTools(absl::Seconds(10));
  EXPECT_EQ(WireCodeOf(tools.status()), v1::INTERNAL);
  EXPECT_THAT(std::string(tools.status().message()), HasSubstr("more than 1000 tools"));
  EXPECT_TRUE(client->broken());
}

// Found by review: 100 pages of tools with 400 KiB descriptions each took 900 MB of the
// broker. All of a server's names, descriptions and schemas together are bounded.
TEST_F(McpClientTest, AListingLargerThanItsBoundBreaksTheConnection) {
  StartServer({"--many-tools=200", "--page-size=20"});
  McpLimits limits;
  limits.max_listing_bytes = 8 * 1024;
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<McpClient> client, Connect(limits));
  auto tools = client->ListTools(absl::Seconds(10));
  EXPECT_EQ(WireCodeOf(tools.status()), v1::TOO_LARGE);
  EXPECT_THAT(std::string(tools.status().message()),
              HasSubstr("lists more than 8192 bytes of tool names, descriptions and schemas"));
  EXPECT_TRUE(client->broken());
  // The default bound takes the same listing.
  StartServer({"--many-tools=200", "--page-size=20"});
  AIRLOCK_ASSERT_OK_AND_ASSIGN(client, Connect());
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::vector<McpTool> all, client->ListTools(absl::Seconds(10)));
  EXPECT_EQ(all.size(), 204u);
}

TEST_F(McpClientTest, TimeoutBreaksTheConnection) {
  std::unique_ptr<McpClient> client = ConnectOrDie();
  ASSERT_NE(client, nullptr);
  const auto start = std::chrono::steady_clock::now();
  auto slow = client->CallTool("sleep", Args(R"({"seconds":5})"), absl::Milliseconds(300));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  EXPECT_EQ(WireCodeOf(slow.status()), v1::TIMEOUT);
  EXPECT_THAT(std::string(slow.status().message()),
              HasSubstr("MCP server 'test' did not answer tools/call within 300ms"));
  EXPECT_TRUE(client->broken());
  // The late answer must never be taken for the next call's.
  auto next = client->CallTool("echo", Args(R"({"text":"x"})"), absl::Seconds(10));
  EXPECT_FALSE(next.ok());
  EXPECT_THAT(std::string(next.status().message()), HasSubstr("the connection is broken"));
}

TEST_F(McpClientTest, CancelAbandonsTheCall) {
  std::unique_ptr<McpClient> client = ConnectOrDie();
  ASSERT_NE(client, nullptr);
  CancelToken cancel;
  std::thread canceller([&cancel] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancel.Cancel();
  });
  const auto start = std::chrono::steady_clock::now();
  auto call = client->CallTool("sleep", Args(R"({"seconds":10})"), absl::Seconds(30), &cancel);
  canceller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(WireCodeOf(call.status()), v1::CANCELLED);
  EXPECT_TRUE(client->broken());
}

TEST_F(McpClientTest, ServerRequestsAreAnsweredMethodNotFound) {
  std::unique_ptr<McpClient> client = ConnectOrDie({"--server-requests"});
  ASSERT_NE(client, nullptr);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      McpCallResult echo, client->CallTool("echo", Args(R"({"text":"a"})"), absl::Seconds(10)));
  EXPECT_EQ(echo.text, "a [client answered roots/list: -32601]");
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      echo, client->CallTool("echo", Args(R"({"text":"b"})"), absl::Seconds(10)));
  EXPECT_EQ(echo.text, "b [client answered roots/list: -32601]");
}

struct Misbehaviour {
  const char* flag;
  v1::ErrorCode code;
  const char* message;
};

class McpMisbehaviourTest : public McpClientTest,
                            public ::testing::WithParamInterface<Misbehaviour> {};

TEST_P(McpMisbehaviourTest, BreaksTheConnectionWithAClearError) {
  std::unique_ptr<McpClient> client = ConnectOrDie({GetParam().flag});
  ASSERT_NE(client, nullptr);
  auto tools = client->ListTools(absl::Seconds(10));
  ASSERT_FALSE(tools.ok());
  EXPECT_EQ(WireCodeOf(tools.status()), GetParam().code) << tools.status();
  EXPECT_THAT(std::string(tools.status().message()), HasSubstr("MCP server 'test'"));
  EXPECT_THAT(std::string(tools.status().message()), HasSubstr(GetParam().message));
  EXPECT_TRUE(client->broken());
}

INSTANTIATE_TEST_SUITE_P(
    Flags, McpMisbehaviourTest,
    ::testing::Values(Misbehaviour{"--garbage", v1::INTERNAL, "not a JSON object"},
                      Misbehaviour{"--huge-line", v1::TOO_LARGE, "more than 4194304 bytes"},
                      Misbehaviour{"--deep", v1::INTERNAL, "nested more than 40 levels"},
                      // Gone before tools/list is written ("closed its input") or after
                      // ("closed its output"): which one is a race, both break the connection.
                      Misbehaviour{"--exit-after-init", v1::INTERNAL, "closed its"},
                      Misbehaviour{"--wrong-id", v1::INTERNAL, "wrong id"},
                      // Found by the fuzzer: converting it to an integer was undefined.
                      Misbehaviour{"--huge-error-code", v1::INTERNAL, "no integer code"}));

TEST_F(McpClientTest, UnknownProtocolVersionIsRefused) {
  StartServer({"--bad-version"});
  auto client = Connect();
  EXPECT_EQ(WireCodeOf(client.status()), v1::INTERNAL);
  EXPECT_THAT(std::string(client.status().message()), HasSubstr("1999-01-01"));
}

TEST_F(McpClientTest, SilentServerTimesOutTheHandshake) {
  KeptProcess::Options options;
  options.spawn.argv = {"/bin/sleep", "100"};
  AIRLOCK_ASSERT_OK_AND_ASSIGN(server_, KeptProcess::Start(std::move(options)));
  const auto start = std::chrono::steady_clock::now();
  auto client = McpClient::Connect(server_->stdin_fd(), server_->stdout_fd(), "silent",
                                   absl::Milliseconds(300));
  EXPECT_EQ(WireCodeOf(client.status()), v1::TIMEOUT);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

TEST_F(McpClientTest, DeadServerIsAnErrorNotASignal) {
  KeptProcess::Options options;
  options.spawn.argv = {"/bin/true"};
  AIRLOCK_ASSERT_OK_AND_ASSIGN(server_, KeptProcess::Start(std::move(options)));
  for (int i = 0; i < 500 && !server_->Exited(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(server_->Exited());
  // Writing to its stdin raises EPIPE (and SIGPIPE, which must not kill the test).
  auto client = McpClient::Connect(server_->stdin_fd(), server_->stdout_fd(), "gone",
                                   absl::Seconds(5));
  EXPECT_EQ(WireCodeOf(client.status()), v1::INTERNAL);
  EXPECT_THAT(std::string(client.status().message()), HasSubstr("MCP server 'gone'"));
}

// Answers written into a pipe before the client reads: the initialize answer (id 1), then
// the scripted lines for tools/list (id 2) or tools/call (id 2).
class ScriptedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int in[2], out[2];
    ASSERT_EQ(::pipe2(in, O_CLOEXEC), 0);
    ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
    to_server_read_ = in[0];
    to_server_write_ = in[1];
    from_server_read_ = out[0];
    from_server_write_ = out[1];
  }
  void TearDown() override {
    for (int fd : {to_server_read_, to_server_write_, from_server_read_, from_server_write_}) {
      ::close(fd);
    }
  }

  absl::StatusOr<std::unique_ptr<McpClient>> Connect(const std::string& script,
                                                     McpLimits limits = {}) {
    const std::string all =
        R"({"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2024-11-05","capabilities":{}}})"
        "\n" +
        script;
    EXPECT_EQ(::write(from_server_write_, all.data(), all.size()),
              static_cast<ssize_t>(all.size()));
    return McpClient::Connect(to_server_write_, from_server_read_, "scripted",
                              absl::Milliseconds(500), limits);
  }

  int to_server_read_ = -1, to_server_write_ = -1;
  int from_server_read_ = -1, from_server_write_ = -1;
};

TEST_F(ScriptedTest, OlderProtocolAndWhatTheClientSent) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<McpClient> client,
      Connect(R"({"jsonrpc":"2.0","method":"notifications/progress","params":{}})"
              "\n\r\n"
              R"({"jsonrpc":"2.0","id":2,"result":{"tools":[]}})"
              "\r\n"));
  EXPECT_EQ(client->protocol_version(), "2024-11-05");
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::vector<McpTool> tools, client->ListTools(absl::Seconds(1)));
  EXPECT_TRUE(tools.empty());
  char buffer[4096];
  const ssize_t n = ::read(to_server_read_, buffer, sizeof(buffer));
  ASSERT_GT(n, 0);
  const std::string sent(buffer, static_cast<size_t>(n));
  EXPECT_THAT(sent, HasSubstr(R"("method":"initialize")"));
  EXPECT_THAT(sent, HasSubstr(R"("protocolVersion":"2025-06-18")"));
  EXPECT_THAT(sent, HasSubstr(R"("clientInfo":{)"));
  EXPECT_THAT(sent, HasSubstr(R"("name":"airlock")"));
  EXPECT_THAT(sent, HasSubstr(R"("method":"notifications/initialized")"));
  EXPECT_THAT(sent, HasSubstr(R"("method":"tools/list")"));
}

struct BadAnswer {
  const char* name;
  const char* line;  // the answer to tools/list (id 2)
  const char* message;
};

class BadListAnswerTest : public ScriptedTest, public ::testing::WithParamInterface<BadAnswer> {};

TEST_P(BadListAnswerTest, IsAProtocolViolation) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<McpClient> client,
                               Connect(std::string(GetParam().line) + "\n"));
  auto tools = client->ListTools(absl::Milliseconds(500));
  ASSERT_FALSE(tools.ok());
  EXPECT_THAT(std::string(tools.status().message()), HasSubstr(GetParam().message))
      << tools.status();
  EXPECT_THAT(std::string(tools.status().message()), HasSubstr("MCP server 'scripted'"));
  EXPECT_TRUE(client->broken());
}

INSTANTIATE_TEST_SUITE_P(
    Table, BadListAnswerTest,
    ::testing::Values(
        BadAnswer{"Array", R"([{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}])",
                  "not a JSON object"},
        BadAnswer{"NotJsonRpc", R"({"jsonrpc":"1.0","id":2,"result":{"tools":[]}})",
                  "not JSON-RPC 2.0"},
        BadAnswer{"StringId", R"({"jsonrpc":"2.0","id":"2","result":{"tools":[]}})", "wrong id"},
        BadAnswer{"NoId", R"({"jsonrpc":"2.0","result":{"tools":[]}})", "wrong id"},
        BadAnswer{"Both", R"({"jsonrpc":"2.0","id":2,"result":{},"error":{"code":1}})",
                  "exactly one"},
        BadAnswer{"Neither", R"({"jsonrpc":"2.0","id":2})", "exactly one"},
        BadAnswer{"ResultNotObject", R"({"jsonrpc":"2.0","id":2,"result":[]})",
                  "not an object"},
        BadAnswer{"ErrorWithoutCode", R"({"jsonrpc":"2.0","id":2,"error":{"message":"x"}})",
                  "no integer code"},
        BadAnswer{"NoTools", R"({"jsonrpc":"2.0","id":2,"result":{}})", "no tools array"},
        BadAnswer{"ToolNotObject", R"({"jsonrpc":"2.0","id":2,"result":{"tools":[1]}})",
                  "not an object"},
        BadAnswer{"NoName",
                  R"({"jsonrpc":"2.0","id":2,"result":{"tools":[{"inputSchema":{}}]}})",
                  "has no name"},
        BadAnswer{"BadName",
                  R"({"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"a b","inputSchema":{}}]}})",
                  "tool name 'a b'"},
        BadAnswer{"SlashName",
                  R"({"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"a/b","inputSchema":{}}]}})",
                  "tool name 'a/b'"},
        BadAnswer{"Twice",
                  R"({"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"a","inputSchema":{}},{"name":"a","inputSchema":{}}]}})",
                  "listed twice"},
        BadAnswer{"NoSchema", R"({"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"a"}]}})",
                  "no inputSchema"},
        BadAnswer{"BadCursor",
                  R"({"jsonrpc":"2.0","id":2,"result":{"tools":[],"nextCursor":7}})",
                  "nextCursor"},
        BadAnswer{"RequestWithObjectId",
                  R"({"jsonrpc":"2.0","id":{},"method":"ping"})", "neither a string"}),
    [](const ::testing::TestParamInfo<BadAnswer>& info) { return info.param.name; });

TEST_F(ScriptedTest, RepeatedCursorStops) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<McpClient> client,
      Connect(R"({"jsonrpc":"2.0","id":2,"result":{"tools":[],"nextCursor":"c"}})"
              "\n"
              R"({"jsonrpc":"2.0","id":3,"result":{"tools":[],"nextCursor":"c"}})"
              "\n"));
  auto tools = client->ListTools(absl::Milliseconds(500));
  EXPECT_THAT(std::string(tools.status().message()), HasSubstr("repeats"));
}

TEST_F(ScriptedTest, NotificationFloodIsBounded) {
  std::string script;
  for (int i = 0; i < 20; ++i) script += R"({"jsonrpc":"2.0","method":"notifications/x"})" "\n";
  script += R"({"jsonrpc":"2.0","id":2,"result":{"tools":[]}})" "\n";
  McpLimits limits;
  limits.max_skipped_messages = 10;
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<McpClient> client, Connect(script, limits));
  auto tools = client->ListTools(absl::Milliseconds(500));
  EXPECT_THAT(std::string(tools.status().message()), HasSubstr("more than 10 other messages"));
}

TEST_F(ScriptedTest, LineLimitIsConfigurable) {
  McpLimits limits;
  limits.max_line_bytes = 200;
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<McpClient> client,
      Connect(R"({"jsonrpc":"2.0","id":2,"result":{"tools":[],"pad":")" + std::string(300, 'p') +
                  "\"}}\n",
              limits));
  auto tools = client->ListTools(absl::Milliseconds(500));
  EXPECT_EQ(WireCodeOf(tools.status()), v1::TOO_LARGE);
}

TEST_F(ScriptedTest, NestingIsCountedOutsideStrings) {
  // 70 brackets inside a string are text; 10 real levels are fine.
  const std::string nested = std::string(10, '[') + std::string(10, ']');
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<McpClient> client,
      Connect(R"({"jsonrpc":"2.0","id":2,"result":{"tools":[],"s":"\"[)" + std::string(70, '[') +
              R"(","n":)" + nested + "}}\n"));
  EXPECT_TRUE(client->ListTools(absl::Milliseconds(500)).ok());
}

TEST_F(ScriptedTest, DeepestAllowedNestingIsAccepted) {
  // The client's bound (40 levels: 3 of the envelope, 37 below) stays under protobuf's own
  // recursion limit, so what the client lets through also parses.
  std::string items;
  const std::string item = std::string(37, '[') + std::string(37, ']');
  while (items.size() < 32 * 1024) items += item + ",";
  items.pop_back();
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<McpClient> client,
      Connect(R"({"jsonrpc":"2.0","id":2,"result":{"tools":[],"x":[)" + items + "]}}\n"));
  auto tools = client->ListTools(absl::Seconds(10));
  EXPECT_TRUE(tools.ok()) << tools.status();
}

TEST_F(ScriptedTest, CallResultShapes) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<McpClient> client,
      Connect(R"({"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"a"},)"
              R"({"type":"image","data":"AA==","mimeType":"image/png"},{"type":"text","text":"b"}],)"
              R"("isError":true}})"
              "\n"
              R"({"jsonrpc":"2.0","id":3,"result":{"content":[],"isError":"yes"}})"
              "\n"));
  AIRLOCK_ASSERT_OK_AND_ASSIGN(McpCallResult result,
                               client->CallTool("x", Struct(), absl::Milliseconds(500)));
  EXPECT_TRUE(result.is_error);
  EXPECT_EQ(result.text, "a\nb");
  EXPECT_THAT(result.result_json, HasSubstr("image/png"));
  auto bad = client->CallTool("x", Struct(), absl::Milliseconds(500));
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("isError is not a boolean"));
}

}  // namespace
}  // namespace airlock::broker
