#include "broker/approval/prompt.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace airlock::broker {
namespace {

using ::airlock::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

ApprovalRequest FileRequest() {
  ApprovalRequest r;
  r.request_id = 12;
  r.tool = "write";
  r.target = "/w/a.txt";
  r.justification = "fix";
  r.preset = "read-only";
  r.mode = "on-request";
  r.content_sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  r.diff = "--- /w/a.txt\n+++ /w/a.txt\n@@ -1,1 +1,1 @@\n-a\n+b\n";
  r.rule = "read-only:write-out-of-authority";
  return r;
}

TEST(RenderPromptTest, ShowsEverythingTheSpecLists) {
  const std::string prompt = RenderPrompt(FileRequest());
  EXPECT_THAT(prompt, HasSubstr("tool: write\n"));
  EXPECT_THAT(prompt, HasSubstr("target: /w/a.txt\n"));
  EXPECT_THAT(prompt, HasSubstr("justification: fix\n"));
  EXPECT_THAT(prompt, HasSubstr("preset: read-only\n"));
  EXPECT_THAT(prompt, HasSubstr("mode: on-request\n"));
  EXPECT_THAT(prompt, HasSubstr("content sha256: 0123456789ab...\n"));
  EXPECT_THAT(prompt, Not(HasSubstr("0123456789abc")));  // only 12 digits
  EXPECT_THAT(prompt, HasSubstr("    -a\n    +b\n"));
}

TEST(RenderPromptTest, BashShowsCommandCwdAndEscalation) {
  ApprovalRequest r;
  r.tool = "bash";
  r.command = "make install";
  r.cwd = "/w";
  r.escalated = true;
  const std::string prompt = RenderPrompt(r);
  EXPECT_THAT(prompt, HasSubstr("command: make install\n"));
  EXPECT_THAT(prompt, HasSubstr("cwd: /w\n"));
  EXPECT_THAT(prompt, HasSubstr("sandbox: NONE"));
  EXPECT_THAT(prompt, HasSubstr("justification: (none)"));
}

TEST(RenderPromptTest, HostileFieldsCannotRedrawThePrompt) {
  ApprovalRequest r = FileRequest();
  r.target = "/w/\x1b[2J\x1b[Hok.txt\xe2\x80\xae";
  r.justification = "\x1b]0;owned\x07 \r\nApprove this one call? [y/N] y";
  r.diff = "+\x1b[8mhidden\x1b[0m\n+\xc2\x9b" "1A\n";
  const std::string prompt = RenderPrompt(r);
  EXPECT_EQ(prompt.find('\x1b'), std::string::npos);
  EXPECT_EQ(prompt.find('\r'), std::string::npos);
  EXPECT_EQ(prompt.find("\xe2\x80\xae"), std::string::npos);
  EXPECT_EQ(prompt.find("\xc2\x9b"), std::string::npos);
  EXPECT_THAT(prompt, HasSubstr("target: /w/\\x1b[2J\\x1b[Hok.txt\\u{202e}\n"));
  EXPECT_THAT(prompt, HasSubstr("\\x0d\\x0aApprove this one call"));
  // Every line of the prompt starts with our own text, never the agent's.
  EXPECT_THAT(prompt, HasSubstr("    +\\x1b[8mhidden\\x1b[0m\n"));
}

TEST(IsAffirmativeAnswerTest, OnlyYesApproves) {
  for (const char* yes : {"y", "Y", "yes", "YES", " Yes ", "y\r", "\tyes\t"}) {
    EXPECT_TRUE(IsAffirmativeAnswer(yes)) << yes;
  }
  for (const char* no : {"", "n", "no", "yy", "yes!", "ye", "sure", "y es", "1", "allow"}) {
    EXPECT_FALSE(IsAffirmativeAnswer(no)) << no;
  }
}

TEST(RequestJsonTest, RoundTripsAndCarriesTheSpecFields) {
  ApprovalRequest r = FileRequest();
  r.command = "ls";
  r.cwd = "/w";
  r.escalated = true;
  const std::string json = RequestToJson(r);
  EXPECT_EQ(json.find('\n'), std::string::npos);
  for (const char* field : {"\"tool\"", "\"target\"", "\"content_sha256\"", "\"command\"",
                            "\"cwd\"", "\"justification\"", "\"preset\"", "\"mode\"",
                            "\"diff\""}) {
    EXPECT_THAT(json, HasSubstr(field));
  }
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ApprovalRequest back, RequestFromJson(json));
  EXPECT_EQ(back.request_id, 12u);
  EXPECT_EQ(back.tool, r.tool);
  EXPECT_EQ(back.target, r.target);
  EXPECT_EQ(back.diff, r.diff);
  EXPECT_EQ(back.content_sha256, r.content_sha256);
  EXPECT_TRUE(back.escalated);
}

TEST(RequestJsonTest, InvalidUtf8IsMadeValid) {
  ApprovalRequest r = FileRequest();
  r.target = "/w/\xff.txt";
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ApprovalRequest back, RequestFromJson(RequestToJson(r)));
  EXPECT_EQ(back.target, "/w/\\xff.txt");
}

TEST(RequestJsonTest, RejectsGarbage) {
  EXPECT_THAT(RequestFromJson("not json"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(RequestFromJson("{\"tool\": 5}"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(RequestFromJson("{}"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(RequestFromJson("{\"tool\":\"write\",\"escalated\":\"yes\"}"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(AnswerFromTypedLineTest, SessionAnswersOnlyWhereOffered) {
  ApprovalRequest offered = FileRequest();
  offered.session_grant_offered = true;
  ApprovalRequest plain = FileRequest();
  for (const char* line : {"s", "S", " session ", "SESSION"}) {
    const Answer granted = AnswerFromTypedLine(line, offered, "on the terminal");
    EXPECT_TRUE(granted.approved) << line;
    EXPECT_EQ(granted.scope, Answer::Scope::kSession) << line;
    EXPECT_FALSE(AnswerFromTypedLine(line, plain, "on the terminal").approved) << line;
  }
  const Answer once = AnswerFromTypedLine("y", offered, "on the terminal");
  EXPECT_TRUE(once.approved);
  EXPECT_EQ(once.scope, Answer::Scope::kOnce);
  for (const char* line : {"", "n", "ss", "sessions", "always"}) {
    EXPECT_FALSE(AnswerFromTypedLine(line, offered, "on the terminal").approved) << line;
  }
  EXPECT_EQ(QuestionFor(plain), kApprovalQuestion);
  EXPECT_EQ(QuestionFor(offered), kSessionApprovalQuestion);
  EXPECT_NE(RenderPrompt(offered).find("grant"), std::string::npos);
  EXPECT_EQ(RenderPrompt(plain).find("grant:"), std::string::npos);
}

}  // namespace
}  // namespace airlock::broker
