// The tool gateway on the real backend, as root and unprivileged: declared command tools and a
// real stdio MCP server (tests/mcp_server) started by the broker inside the shell sandbox.
// Tools are listed; an MCP call inside the workspace works; a path argument outside is refused
// before the approver is asked; a live-session grant skips the second prompt for that tool
// only; a disabled server refuses; the server itself cannot write outside the workspace; a
// destructive command tool asks in default mode, runs unasked when listed in --edit-tools
// under accept-edits, and is refused with no approver otherwise.
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/harness.h"
#include "tests/testing/temp_dir.h"

namespace airlock::integration {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

int Count(const std::string& haystack, const std::string& needle) {
  int count = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + needle.size())) {
    ++count;
  }
  return count;
}

class GatewayTest : public ::testing::TestWithParam<RunAs> {
 protected:
  void SetUp() override {
    // The server binary, where the tested user can run it.
    outside_.Write("mcp-server", testing::ReadFileOrMissing(AIRLOCK_TEST_MCP_SERVER));
    ::chmod(outside_.Child("mcp-server").c_str(), 0755);
    // Approvers log every question they get, then answer.
    for (const auto& [name, answer] : {std::pair<const char*, const char*>{"allow.sh", "allow"},
                                       {"session.sh", "allow-session"}}) {
      tools_.Write(name, absl::StrCat("#!/bin/sh\ncat >> ", tools_.Child("asked.log"), "\necho >> ",
                                      tools_.Child("asked.log"), "\necho ", answer, "\n"));
      ::chmod(tools_.Child(name).c_str(), 0755);
    }
    // The server's `escape` tool writes to a fixed path given on its command line, which no
    // argument names: only the sandbox stands in its way.
    tools_.Write("tools.json", absl::StrCat(R"({
  "commandTools": [
    {"name": "stamp", "description": "Write TEXT to PATH", "destructive": true,
     "parameters": {"type": "object",
                    "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
                    "required": ["path", "text"]},
     "argv": ["/bin/sh", "-c", "printf '%s' \"$1\" > \"$0\"", "{path}", "{text}"]},
    {"name": "size", "description": "Count the bytes of FILE",
     "parameters": {"type": "object", "properties": {"file": {"type": "string"}},
                    "required": ["file"]},
     "argv": ["wc", "-c", "{file}"]}
  ],
  "mcpServers": [
    {"name": "fs", "command": ")", outside_.Child("mcp-server"), R"(",
     "args": ["--escape-target=)", escape_target(), R"("]}
  ]
})"));
  }

  // Outside the workspace, writable by the tested user on the host, and visible inside the
  // shell sandbox (its /tmp is private): only the read-only host view stops a write there.
  std::string escape_target() const { return outside_.Child("escaped.txt"); }

  RunOptions Options() const {
    RunOptions options = AirlockOptions(GetParam(), home_);
    options.timeout_seconds = 120;
    return options;
  }
  std::vector<std::string> RunArgv(std::vector<std::string> args) const {
    std::vector<std::string> argv = {"run", "--workspace", workspace_.path(), "--tools",
                                     tools_.Child("tools.json")};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  CommandResult Run(std::vector<std::string> args, const std::string& script) {
    std::vector<std::string> argv = RunArgv(std::move(args));
    argv.insert(argv.end(), {"--", "/bin/sh", "-c", script});
    return RunAirlock(argv, Options());
  }
  std::string Asked() const { return testing::ReadFileOrMissing(tools_.Child("asked.log")); }
  CommandResult VerifyAudit() { return VerifyAuditLogs(GetParam(), home_); }

  Scratch workspace_{GetParam()};
  Scratch home_{GetParam()};
  Scratch tools_{GetParam()};
  Scratch outside_{GetParam(), "/var/tmp"};
};

TEST_P(GatewayTest, ListsCommandToolsAndTheToolsOfTheSandboxedMcpServer) {
  CommandResult result = Run({"--approver", "none"}, "airlock tool list; echo \"status=$?\"");
  EXPECT_THAT(result.out, HasSubstr("status=0")) << result;
  for (const char* name : {"\"stamp\"", "\"size\"", "\"fs.echo\"", "\"fs.write_file\""}) {
    EXPECT_THAT(result.out, HasSubstr(name)) << result;
  }
  EXPECT_THAT(result.out, HasSubstr("TOOL_ORIGIN_MCP"));
  EXPECT_THAT(result.out, HasSubstr("\"unavailable\":[]"));
}

TEST_P(GatewayTest, AGrantSkipsTheSecondPromptForThatToolOnly) {
  CommandResult result = Run(
      {"--preset", "workspace-write", "--approver", "command:" + tools_.Child("session.sh")},
      "for i in 1 2 3; do airlock tool call fs.write_file --args "
      "\"{\\\"path\\\":\\\"note$i.txt\\\",\\\"content\\\":\\\"n$i\\\"}\"; echo \"write$i=$?\"; "
      "done; airlock tool call fs.echo --args '{\"text\":\"hello\"}'; echo \"echo=$?\"");
  EXPECT_THAT(result.out, HasSubstr("write1=0")) << result;
  EXPECT_THAT(result.out, HasSubstr("write3=0"));
  EXPECT_THAT(result.out, HasSubstr("echo=0"));
  EXPECT_THAT(result.out, HasSubstr("hello"));
  EXPECT_EQ(testing::ReadFileOrMissing(workspace_.Child("note3.txt")), "n3");
  // One question for write_file (answered for the session), one for echo.
  EXPECT_EQ(Count(Asked(), "\"tool\":\"fs.write_file\""), 1) << Asked();
  EXPECT_EQ(Count(Asked(), "\"tool\":\"fs.echo\""), 1) << Asked();
  EXPECT_THAT(Asked(), HasSubstr("\"session_grant_offered\":true"));
  CommandResult verified = VerifyAudit();
  EXPECT_EQ(verified.exit_code, 0) << verified;
}

TEST_P(GatewayTest, APathArgumentOutsideIsRefusedBeforeTheApproverIsAsked) {
  const std::string outside = home_.Child("outside.txt");
  CommandResult result = Run(
      {"--preset", "workspace-write", "--approver", "command:" + tools_.Child("allow.sh")},
      absl::StrCat("airlock tool call fs.write_file --args '{\"path\":\"", outside,
                   "\",\"content\":\"x\"}'; echo \"status=$?\"; "
                   "airlock tool call size --args '{\"file\":\"../../etc/passwd\"}'; "
                   "echo \"size=$?\""));
  EXPECT_THAT(result.out, HasSubstr("\"code\":\"OUTSIDE_SANDBOX\"")) << result;
  EXPECT_THAT(result.out, HasSubstr("status=3"));
  EXPECT_THAT(result.out, HasSubstr("size=3"));
  EXPECT_EQ(testing::ReadFileOrMissing(outside), "<missing>");
  EXPECT_EQ(Asked(), "<missing>");  // nobody was asked
}

TEST_P(GatewayTest, TheServerItselfCannotWriteOutsideTheWorkspace) {
  CommandResult result = Run(
      {"--preset", "workspace-write", "--approver", "command:" + tools_.Child("allow.sh")},
      "airlock tool call fs.escape --args '{}'; echo \"status=$?\"");
  EXPECT_THAT(result.out, HasSubstr("status=0")) << result;  // the call ran …
  EXPECT_THAT(result.out, HasSubstr("\"is_error\":true"));   // … and the write failed
  EXPECT_THAT(result.out, HasSubstr("Read-only file system"));
  EXPECT_EQ(testing::ReadFileOrMissing(escape_target()), "<missing>");
}

TEST_P(GatewayTest, ADisabledServerRefusesEveryLaterCall) {
  const std::string socket = home_.Child("ctl/broker.sock");
  const std::string out = tools_.Child("run.out");
  const std::string binary = AirlockBinary(GetParam());
  const std::string worker =
      "airlock tool call fs.echo --args \"{\\\"text\\\":\\\"before\\\"}\"; echo first-call-done; "
      "i=0; while [ $i -lt 100 ]; do airlock tool call fs.echo --args \"{}\" | "
      "grep -q mcp:server-disabled && { echo saw-disabled; exit 0; }; sleep 0.1; i=$((i+1)); "
      "done; exit 7";
  std::string run;
  for (const std::string& arg :
       RunArgv({"--preset", "workspace-write", "--approver", "command:" + tools_.Child("session.sh"),
                "--control-socket", socket})) {
    absl::StrAppend(&run, " ", arg);
  }
  const std::string script = absl::StrCat(
      binary, run, " -- /bin/sh -c '", worker, "' > ", out, " 2>&1 & broker=$!; ",
      "i=0; while ! grep -q first-call-done ", out, " 2>/dev/null && [ $i -lt 600 ]; do ",
      "sleep 0.1; i=$((i+1)); done; ", binary, " ctl --socket ", socket,
      " mcp disable fs; echo \"ctl=$?\"; ", binary, " ctl --socket ", socket,
      " mcp disable nosuch; echo \"nosuch=$?\"; wait $broker; echo \"broker=$?\"; cat ", out);
  CommandResult result = RunCommand({"/bin/sh", "-c", script}, Options());
  EXPECT_THAT(result.out, HasSubstr("before")) << result;
  EXPECT_THAT(result.out, HasSubstr("ctl=0"));
  EXPECT_THAT(result.out, Not(HasSubstr("nosuch=0")));
  EXPECT_THAT(result.out, HasSubstr("saw-disabled"));
  EXPECT_THAT(result.out, HasSubstr("broker=0"));
}

// A preset change stops the MCP servers started under the old one at once (found by review: a
// server started under danger-full-access kept its host authority until its next use).
TEST_P(GatewayTest, APresetChangeStopsTheServersStartedBeforeIt) {
  const std::string socket = home_.Child("ctl/broker.sock");
  const std::string out = tools_.Child("run.out");
  const std::string binary = AirlockBinary(GetParam());
  const std::string worker = absl::StrCat(
      "airlock tool call fs.echo --args \"{\\\"text\\\":\\\"before\\\"}\"; echo first-call-done; ",
      "i=0; while [ ! -e ", workspace_.Child("stop"), " ] && [ $i -lt 600 ]; do sleep 0.1; ",
      "i=$((i+1)); done");
  std::string run;
  for (const std::string& arg :
       RunArgv({"--preset", "workspace-write", "--approver", "command:" + tools_.Child("session.sh"),
                "--control-socket", socket})) {
    absl::StrAppend(&run, " ", arg);
  }
  // The server's processes, found by the argument only this test's server has (the bracket
  // keeps the pattern from matching the shell and grep that carry it).
  const std::string server_runs = absl::StrCat(
      "grep -qas -- '--escape-targe[t]=", escape_target(), "' /proc/[0-9]*/cmdline");
  const std::string script = absl::StrCat(
      binary, run, " -- /bin/sh -c '", worker, "' > ", out, " 2>&1 & broker=$!; ",
      "i=0; while ! grep -q first-call-done ", out, " 2>/dev/null && [ $i -lt 600 ]; do ",
      "sleep 0.1; i=$((i+1)); done; ", server_runs, " && echo running-before; ", binary,
      " ctl --socket ", socket, " preset read-only; echo \"ctl=$?\"; ",
      "i=0; while ", server_runs, " && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; ",
      server_runs, " || echo stopped-after; touch ", workspace_.Child("stop"),
      "; wait $broker; echo \"broker=$?\"; cat ", out);
  CommandResult result = RunCommand({"/bin/sh", "-c", script}, Options());
  EXPECT_THAT(result.out, HasSubstr("before")) << result;
  EXPECT_THAT(result.out, HasSubstr("running-before"));
  EXPECT_THAT(result.out, HasSubstr("ctl=0"));
  EXPECT_THAT(result.out, HasSubstr("stopped-after"));
  EXPECT_THAT(result.out, HasSubstr("broker=0"));
}

// Each server's listing is bounded (2 MiB); all of them together must fit one answer: the
// servers past 12 MiB are listed as unavailable, and the others are listed.
TEST_P(GatewayTest, ServersWhoseToolsWouldOverfillTheListingAreUnavailable) {
  std::string servers;
  for (int i = 0; i < 7; ++i) {
    absl::StrAppend(&servers, i ? ", " : "", R"({"name": "s)", i, R"(", "command": ")",
                    outside_.Child("mcp-server"),
                    R"(", "args": ["--many-tools=20", "--description-bytes=100000"]})");
  }
  tools_.Write("big-tools.json", absl::StrCat(R"({"mcpServers": [)", servers, "]}"));
  CommandResult result = RunAirlock(
      {"run", "--workspace", workspace_.path(), "--tools", tools_.Child("big-tools.json"),
       "--preset", "workspace-write", "--", "/bin/sh", "-c",
       "airlock tool list | tr ',' '\\n' | grep -E '\"name\":\"s[0-9].t19\"|larger than' "
       "| cut -c1-120"},
      Options());
  ASSERT_EQ(result.exit_code, 0) << result;
  EXPECT_EQ(Count(result.out, ".t19\""), 6) << result.out;
  EXPECT_THAT(result.out, HasSubstr("s6: its tools would make this listing larger than 12582912"));
}

TEST_P(GatewayTest, ADestructiveCommandToolAsksInDefaultMode) {
  CommandResult result = Run(
      {"--preset", "workspace-write", "--mode", "default", "--approver",
       "command:" + tools_.Child("allow.sh")},
      "airlock tool call stamp --args '{\"path\":\"stamp.txt\",\"text\":\"stamped\"}'; "
      "echo \"status=$?\"; airlock tool call size --args '{\"file\":\"stamp.txt\"}'; "
      "echo \"size=$?\"");
  EXPECT_THAT(result.out, HasSubstr("status=0")) << result;
  EXPECT_EQ(testing::ReadFileOrMissing(workspace_.Child("stamp.txt")), "stamped");
  EXPECT_EQ(Count(Asked(), "\"tool\":\"stamp\""), 1) << Asked();
  EXPECT_THAT(result.out, HasSubstr("size=0"));
  EXPECT_THAT(result.out, HasSubstr("7 stamp.txt"));
  EXPECT_EQ(Count(Asked(), "\"tool\":\"size\""), 0) << Asked();  // not destructive
}

// What was approved is what runs: a link on a path argument's way re-pointed while the
// approver decides makes the approval stale, and nothing runs (found by review).
TEST_P(GatewayTest, APathArgumentRedirectedWhileAskingMakesTheApprovalStale) {
  workspace_.MakeDir("a");
  workspace_.MakeDir("b");
  ASSERT_EQ(::symlink("a", workspace_.Child("link").c_str()), 0);
  if (GetParam() == RunAs::kUnprivileged) {
    ASSERT_EQ(::lchown(workspace_.Child("link").c_str(), kUnprivilegedUid, kUnprivilegedGid), 0);
  }
  tools_.Write("swap.sh", absl::StrCat("#!/bin/sh\ncat > /dev/null\nln -sfn b ",
                                       workspace_.Child("link"), "\necho allow\n"));
  ::chmod(tools_.Child("swap.sh").c_str(), 0755);
  CommandResult result = Run(
      {"--preset", "workspace-write", "--mode", "default", "--approver",
       "command:" + tools_.Child("swap.sh")},
      "airlock tool call stamp --args '{\"path\":\"link/out.txt\",\"text\":\"x\"}'; "
      "echo \"status=$?\"");
  EXPECT_THAT(result.out, HasSubstr("APPROVAL_STALE")) << result;
  EXPECT_THAT(result.out, HasSubstr("status=3"));
  EXPECT_EQ(testing::ReadFileOrMissing(workspace_.Child("a/out.txt")), "<missing>");
  EXPECT_EQ(testing::ReadFileOrMissing(workspace_.Child("b/out.txt")), "<missing>");
}

TEST_P(GatewayTest, AcceptEditsRunsADestructiveToolOnlyWhenListedInEditTools) {
  CommandResult listed = Run(
      {"--preset", "workspace-write", "--mode", "accept-edits", "--edit-tools",
       "write,edit,stamp", "--approver", "none"},
      "airlock tool call stamp --args '{\"path\":\"a.txt\",\"text\":\"a\"}'; echo \"status=$?\"");
  EXPECT_THAT(listed.out, HasSubstr("status=0")) << listed;
  EXPECT_EQ(testing::ReadFileOrMissing(workspace_.Child("a.txt")), "a");

  CommandResult unlisted = Run(
      {"--preset", "workspace-write", "--mode", "accept-edits", "--approver", "none"},
      "airlock tool call stamp --args '{\"path\":\"b.txt\",\"text\":\"b\"}'; echo \"status=$?\"");
  EXPECT_THAT(unlisted.out, HasSubstr("\"code\":\"NOT_APPROVED\"")) << unlisted;
  EXPECT_THAT(unlisted.out, HasSubstr("status=3"));
  EXPECT_EQ(testing::ReadFileOrMissing(workspace_.Child("b.txt")), "<missing>");
}

TEST_P(GatewayTest, CallsAndResultsAreInTheSessionFile) {
  CommandResult result = Run(
      {"--preset", "workspace-write", "--approver", "command:" + tools_.Child("allow.sh")},
      "airlock tool call fs.echo --args '{\"text\":\"recorded\"}'; echo \"status=$?\"");
  EXPECT_THAT(result.out, HasSubstr("status=0")) << result;
  CommandResult sessions = RunCommand(
      {"/bin/sh", "-c", absl::StrCat("cat ", home_.Child("airlock/sessions"), "/*.jsonl")},
      Options());
  EXPECT_THAT(sessions.out, HasSubstr("\"toolName\":\"fs.echo\"")) << sessions;
  EXPECT_THAT(sessions.out, HasSubstr("recorded"));
  EXPECT_THAT(sessions.out, Not(HasSubstr("approved")));  // approvals are never stored
}

INSTANTIATE_TEST_SUITE_P(Identities, GatewayTest, ::testing::ValuesIn(IdentitiesToTest()),
                         RunAsName);

}  // namespace
}  // namespace airlock::integration
