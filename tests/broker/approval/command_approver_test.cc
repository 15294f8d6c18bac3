// The command approver with real tiny programs (shell scripts in a temp dir).
#include "broker/approval/command_approver.h"

#include <sys/stat.h>

#include "absl/time/clock.h"
#include "broker/approval/prompt.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker {
namespace {

using ::airlock::testing::ReadFileOrMissing;
using ::airlock::testing::StatusIs;
using ::airlock::testing::WriteFileOrDie;
using ::testing::HasSubstr;

class CommandApproverTest : public ::testing::Test {
 protected:
  std::string Script(const std::string& name, const std::string& body) {
    const std::string path = dir_.Child(name);
    WriteFileOrDie(path, "#!/bin/sh\n" + body);
    EXPECT_EQ(::chmod(path.c_str(), 0700), 0);
    return path;
  }

  Answer Ask(const std::string& body, absl::Duration timeout = absl::Seconds(10)) {
    absl::StatusOr<std::unique_ptr<CommandApprover>> approver =
        CommandApprover::Create(Script("approver", body));
    EXPECT_TRUE(approver.ok()) << approver.status();
    if (!approver.ok()) return Answer::No("setup");
    return (*approver)->Ask(Request(), timeout);
  }

  static ApprovalRequest Request() {
    ApprovalRequest r;
    r.request_id = 3;
    r.tool = "write";
    r.target = "/w/a.txt";
    r.preset = "read-only";
    r.mode = "on-request";
    r.content_sha256 = "ab12";
    r.diff = "-a\n+b\n";
    r.justification = "why not";
    return r;
  }

  airlock::testing::TempDir dir_;
};

TEST_F(CommandApproverTest, AllowApprovesAndReceivesTheRequestAsJson) {
  const std::string input = dir_.Child("input.json");
  const Answer answer = Ask("cat > '" + input + "'\necho allow\n");
  EXPECT_TRUE(answer.approved) << answer.reason;
  const std::string json = ReadFileOrMissing(input);
  absl::StatusOr<ApprovalRequest> parsed = RequestFromJson(json.substr(0, json.find('\n')));
  ASSERT_TRUE(parsed.ok()) << parsed.status() << json;
  EXPECT_EQ(parsed->tool, "write");
  EXPECT_EQ(parsed->target, "/w/a.txt");
  EXPECT_EQ(parsed->content_sha256, "ab12");
  EXPECT_EQ(parsed->preset, "read-only");
  EXPECT_EQ(parsed->mode, "on-request");
  EXPECT_EQ(parsed->diff, "-a\n+b\n");
  EXPECT_EQ(parsed->justification, "why not");
  EXPECT_THAT(json, HasSubstr("\"command\""));
  EXPECT_THAT(json, HasSubstr("\"cwd\""));
}

TEST_F(CommandApproverTest, AllowWithSurroundingWhitespaceApproves) {
  EXPECT_TRUE(Ask("printf '  allow \\n\\n'\n").approved);
}

TEST_F(CommandApproverTest, CrashingApproverDenies) {
  const Answer answer = Ask("echo allow\nkill -SEGV $$\n");
  EXPECT_FALSE(answer.approved);
  EXPECT_THAT(answer.reason, HasSubstr("signal 11"));
}

TEST_F(CommandApproverTest, HangingApproverIsKilledAndDenies) {
  const absl::Time start = absl::Now();
  const Answer answer = Ask("echo allow\nsleep 1000\n", absl::Milliseconds(300));
  EXPECT_FALSE(answer.approved);
  EXPECT_THAT(answer.reason, HasSubstr("timeout"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST_F(CommandApproverTest, GarbagePrintingApproverDenies) {
  EXPECT_FALSE(Ask("printf '\\033[2Jallow\\n'\n").approved);
  EXPECT_FALSE(Ask("echo allowed\n").approved);
  EXPECT_FALSE(Ask("echo allow; echo allow\n").approved);
  EXPECT_FALSE(Ask("head -c 64 /dev/urandom\n").approved);
}

TEST_F(CommandApproverTest, ExitZeroWithoutAllowDenies) {
  const Answer answer = Ask("echo yes\nexit 0\n");
  EXPECT_FALSE(answer.approved);
  EXPECT_THAT(answer.reason, HasSubstr("without printing exactly 'allow'"));
  EXPECT_FALSE(Ask("exit 0\n").approved);
}

TEST_F(CommandApproverTest, AllowWithNonzeroExitDenies) {
  const Answer answer = Ask("echo allow\nexit 1\n");
  EXPECT_FALSE(answer.approved);
  EXPECT_THAT(answer.reason, HasSubstr("status 1"));
}

TEST_F(CommandApproverTest, TooMuchOutputDenies) {
  const Answer answer = Ask("yes allow | head -c 100000\n");
  EXPECT_FALSE(answer.approved);
  EXPECT_THAT(answer.reason, HasSubstr("more than"));
}

TEST_F(CommandApproverTest, ApproverThatNeverReadsStdinStillDecides) {
  // A request larger than a pipe buffer must not wedge the broker.
  absl::StatusOr<std::unique_ptr<CommandApprover>> approver =
      CommandApprover::Create(Script("approver", "echo allow\n"));
  ASSERT_TRUE(approver.ok());
  ApprovalRequest big = Request();
  big.diff.assign(200000, 'x');
  EXPECT_TRUE((*approver)->Ask(big, absl::Seconds(10)).approved);
}

TEST_F(CommandApproverTest, BackgroundChildrenDoNotKeepTheBrokerWaiting) {
  const absl::Time start = absl::Now();
  const Answer answer = Ask("sleep 1000 &\necho allow\n", absl::Seconds(20));
  EXPECT_TRUE(answer.approved) << answer.reason;
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
}

TEST_F(CommandApproverTest, CreateRefusesNonPaths) {
  EXPECT_THAT(CommandApprover::Create("approve-bot"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be a path")));
  EXPECT_FALSE(CommandApprover::Create(dir_.Child("missing")).ok());
}

TEST_F(CommandApproverTest, AllowSessionGrantsOnlyWhereOffered) {
  // Offered (an MCP tool): allow-session is a session answer, allow a one-call answer.
  ApprovalRequest mcp = Request();
  mcp.tool = "docs.search";
  mcp.session_grant_offered = true;
  for (const auto& [body, scope] :
       std::initializer_list<std::pair<const char*, Answer::Scope>>{
           {"echo allow-session\n", Answer::Scope::kSession},
           {"echo allow\n", Answer::Scope::kOnce}}) {
    absl::StatusOr<std::unique_ptr<CommandApprover>> approver =
        CommandApprover::Create(Script("approver", body));
    ASSERT_TRUE(approver.ok()) << approver.status();
    const Answer answer = (*approver)->Ask(mcp, absl::Seconds(10));
    EXPECT_TRUE(answer.approved) << body << answer.reason;
    EXPECT_EQ(answer.scope, scope) << body;
  }
  // Not offered (a file write): allow-session approves nothing.
  const Answer answer = Ask("echo allow-session\n");
  EXPECT_FALSE(answer.approved);
}

}  // namespace
}  // namespace airlock::broker
