// `airlock mcp` end to end: an MCP client (this test, over the worker's stdin and stdout)
// inside `airlock run` reads, writes, edits and runs commands through the broker, which
// enforces the preset exactly as for `airlock tool`, and audits every call.
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "integration/harness.h"
#include "tests/testing/temp_dir.h"

namespace airlock::integration {
namespace {

using google::protobuf::Struct;
using ::testing::HasSubstr;
using ::testing::Not;

class McpTest : public ::testing::TestWithParam<RunAs> {
 protected:
  // Runs `airlock mcp` as the agent of `airlock run` with `lines` on its stdin; the answers
  // by id (as JSON text: 1, "x").
  std::map<std::string, Struct> Serve(const std::vector<std::string>& lines,
                                      CommandResult& result) {
    RunOptions options = AirlockOptions(GetParam(), home_);
    options.stdin_data = absl::StrJoin(lines, "\n") + "\n";
    options.timeout_seconds = 90;
    result = RunAirlock({"run", "--workspace", workspace_.path(), "--preset", "workspace-write",
                         "--", AirlockBinary(GetParam()), "mcp"},
                        options);
    std::map<std::string, Struct> answers;
    for (absl::string_view line : absl::StrSplit(result.out, '\n', absl::SkipEmpty())) {
      Struct message;
      EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(std::string(line), &message).ok())
          << "not JSON: " << line;
      std::string id;
      (void)google::protobuf::util::MessageToJsonString(message.fields().at("id"), &id);
      EXPECT_EQ(answers.count(id), 0u) << "answered twice: " << id;
      answers[id] = message;
    }
    return answers;
  }

  // `airlock run` with a shell as the agent: `script` feeds `airlock mcp` as a client would,
  // waiting for what it needs in the workspace (its working directory).
  CommandResult RunClientScript(const std::string& script) {
    RunOptions options = AirlockOptions(GetParam(), home_);
    options.timeout_seconds = 90;
    options.cwd = workspace_.path();
    return RunAirlock({"run", "--workspace", workspace_.path(), "--preset", "workspace-write",
                       "--", "/bin/sh", "-c", script},
                      options);
  }

  static std::string Call(const std::string& id, const std::string& tool,
                          const std::string& arguments) {
    return absl::StrCat(R"({"jsonrpc":"2.0","id":)", id,
                        R"(,"method":"tools/call","params":{"name":")", tool,
                        R"(","arguments":)", arguments, "}}");
  }

  // The text of a tools/call answer, and whether it is a tool error.
  static std::pair<std::string, bool> ToolResult(const std::map<std::string, Struct>& answers,
                                                 const std::string& id) {
    auto it = answers.find(id);
    if (it == answers.end() || it->second.fields().count("result") == 0) {
      ADD_FAILURE() << "no result for " << id;
      return {"", true};
    }
    const Struct& result = it->second.fields().at("result").struct_value();
    return {result.fields().at("content").list_value().values(0).struct_value().fields().at(
                "text").string_value(),
            result.fields().at("isError").bool_value()};
  }

  Scratch workspace_{GetParam()};
  Scratch home_{GetParam()};
};

TEST_P(McpTest, AnAgentWorksThroughTheBrokerAndThePresetHolds) {
  workspace_.Write("b.txt", "hello from b\n");
  workspace_.Write("c.txt", "a + b\n");
  workspace_.MakeDir(".git");
  workspace_.Write(".git/config", "[core]\n");
  CommandResult run;
  const auto answers = Serve(
      {R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}})",
       R"({"jsonrpc":"2.0","method":"notifications/initialized"})",
       R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})",
       Call("3", "write", R"({"path":"new/a.txt","content":"written over MCP\n"})"),
       Call("4", "edit", R"({"path":"c.txt","old":"a + b","new":"a - b"})"),
       Call("5", "read", R"({"path":"b.txt"})"),
       Call("6", "bash", R"({"command":"cat b.txt && echo ran > by-bash.txt"})"),
       Call("7", "write", R"({"path":".git/config","content":"[core]\n\tfsmonitor = evil\n"})"),
       Call("8", "bash", R"({"command":"echo evil >> .git/config"})"),
       Call("9", "write", R"({"path":"/etc/airlock-mcp-probe","content":"x"})"),
       Call("10", "rm", "{}"),
       "this is not JSON"},
      run);
  ASSERT_EQ(run.exit_code, 0) << run;
  ASSERT_FALSE(run.timed_out) << run;

  EXPECT_TRUE(answers.count("1")) << run;
  EXPECT_EQ(answers.at("2").fields().at("result").struct_value().fields().at("tools")
                .list_value().values_size(), 8);

  EXPECT_FALSE(ToolResult(answers, "3").second) << ToolResult(answers, "3").first;
  EXPECT_EQ(testing::ReadFileOrMissing(workspace_.Child("new/a.txt")), "written over MCP\n");
  EXPECT_FALSE(ToolResult(answers, "4").second) << ToolResult(answers, "4").first;
  EXPECT_EQ(testing::ReadFileOrMissing(workspace_.Child("c.txt")), "a - b\n");
  EXPECT_THAT(ToolResult(answers, "5").first, HasSubstr(R"("content":"hello from b\n")"));
  EXPECT_THAT(ToolResult(answers, "6").first, HasSubstr(R"("stdout":"hello from b\n")"));
  EXPECT_EQ(testing::ReadFileOrMissing(workspace_.Child("by-bash.txt")), "ran\n");

  // The preset holds: protected storage and outside paths are refused, by rule.
  const auto [protected_text, protected_error] = ToolResult(answers, "7");
  EXPECT_TRUE(protected_error);
  EXPECT_THAT(protected_text, HasSubstr(R"("code":"PROTECTED_PATH")"));
  EXPECT_THAT(protected_text, HasSubstr("fence:protected:.git/config"));
  EXPECT_THAT(ToolResult(answers, "8").first, HasSubstr("Read-only file system"));
  EXPECT_EQ(testing::ReadFileOrMissing(workspace_.Child(".git/config")), "[core]\n");
  const auto [outside_text, outside_error] = ToolResult(answers, "9");
  EXPECT_TRUE(outside_error);
  EXPECT_THAT(outside_text, HasSubstr(R"("code":"OUTSIDE_SANDBOX")"));

  // Bad calls and lines are JSON-RPC errors; nothing else is lost.
  EXPECT_EQ(answers.at("10").fields().at("error").struct_value().fields().at("code")
                .number_value(), -32602);
  EXPECT_EQ(answers.at("null").fields().at("error").struct_value().fields().at("code")
                .number_value(), -32700);
  EXPECT_EQ(answers.size(), 11u) << run;

  CommandResult verified = VerifyAuditLogs(GetParam(), home_);
  EXPECT_EQ(verified.exit_code, 0) << verified;
}

// A cancelled call is not answered and ends: the broker cancels the command when the call's
// channel hangs up (it would otherwise sleep for two minutes, past the run's deadline); later
// calls are answered. The client (a shell in the worker) cancels only once the command runs.
TEST_P(McpTest, ACancelledRunningCallEndsUnanswered) {
  const std::string slow = Call("\"slow\"", "bash", R"({"command":"touch started; sleep 120"})");
  const std::string cancel =
      R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow"}})";
  const std::string after = Call("\"after\"", "bash", R"({"command":"echo after"})");
  const std::string script = absl::StrCat(
      "{ echo '", slow, "'; while [ ! -e started ]; do sleep 0.05; done; echo '", cancel,
      "'; echo '", after, "'; } | ", AirlockBinary(GetParam()), " mcp");
  CommandResult run = RunClientScript(script);
  ASSERT_FALSE(run.timed_out) << run;
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_THAT(run.out, Not(HasSubstr(R"("id":"slow")"))) << run;
  EXPECT_THAT(run.out, HasSubstr(R"(\"stdout\":\"after\\n\")")) << run;
  EXPECT_EQ(testing::ReadFileOrMissing(workspace_.Child("started")), "");
}

// Past 32 calls in flight, one more is refused at once rather than read later: a cancel and a
// ping sent after it still get through (the 32 commands would run for two minutes, past the
// run's deadline, if their cancels were not read).
TEST_P(McpTest, TheThirtyThirdCallIsRefusedAndCancelsStillGetThrough) {
  std::string calls, cancels;
  for (int i = 0; i < 32; ++i) {
    absl::StrAppend(&calls, "echo '",
                    Call(absl::StrCat(i), "bash",
                         absl::StrCat(R"({"command":"touch started-)", i, R"(; sleep 120"})")),
                    "'; ");
    absl::StrAppend(&cancels, "echo '",
                    R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":)",
                    i, "}}'; ");
  }
  const std::string script = absl::StrCat(
      "{ ", calls, "while [ $(ls | grep -c '^started-') -lt 32 ]; do sleep 0.05; done; echo '",
      Call("\"extra\"", "context", "{}"), "'; ", cancels, "echo '",
      R"({"jsonrpc":"2.0","id":"ping","method":"ping"})", "'; } | ", AirlockBinary(GetParam()),
      " mcp");
  CommandResult run = RunClientScript(script);
  ASSERT_FALSE(run.timed_out) << run;
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_THAT(run.out, HasSubstr(R"("id":"extra")"));
  EXPECT_THAT(run.out, HasSubstr("runs at most 32 calls at once"));
  EXPECT_THAT(run.out, HasSubstr(R"("id":"ping")"));
  for (int i = 0; i < 32; ++i) {
    for (const char* end : {",", "}"}) {
      EXPECT_THAT(run.out, Not(HasSubstr(absl::StrCat("\"id\":", i, end))))
          << "cancelled call " << i << " was answered";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Identities, McpTest, ::testing::ValuesIn(IdentitiesToTest()),
                         RunAsName);

}  // namespace
}  // namespace airlock::integration
