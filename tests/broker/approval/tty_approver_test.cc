// The tty approver for real, on a pseudo-terminal: the approver opens the pty's slave by path
// (as it opens /dev/tty in the broker), the test plays the human on the master side.
#include "broker/approval/tty_approver.h"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "absl/time/clock.h"
#include "broker/approval/prompt.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "platform/base/scoped_fd.h"

namespace airlock::broker {
namespace {

using ::testing::HasSubstr;

class TtyApproverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int master = -1, slave = -1;
    char name[256];
    ASSERT_EQ(::openpty(&master, &slave, name, nullptr, nullptr), 0);
    master_.reset(master);
    slave_.reset(slave);  // held open so the terminal stays up between prompts
    slave_path_ = name;
  }

  // Reads what the approver wrote until `marker` appears (or 10 s pass).
  std::string ReadUntil(const std::string& marker) {
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (output_.find(marker) == std::string::npos && absl::Now() < deadline) {
      pollfd p{master_.get(), POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char buffer[4096];
      const ssize_t n = ::read(master_.get(), buffer, sizeof(buffer));
      if (n <= 0) break;
      output_.append(buffer, static_cast<size_t>(n));
    }
    return output_;
  }

  // Reads until `count` questions are on screen or `wait` passes; returns how many are.
  int WaitForPrompts(int count, absl::Duration wait) {
    const absl::Time deadline = absl::Now() + wait;
    for (;;) {
      int prompts = 0;
      for (size_t at = output_.find("[y/N]"); at != std::string::npos;
           at = output_.find("[y/N]", at + 1)) {
        ++prompts;
      }
      if (prompts >= count || absl::Now() >= deadline) return prompts;
      pollfd p{master_.get(), POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      char buffer[4096];
      const ssize_t n = ::read(master_.get(), buffer, sizeof(buffer));
      if (n <= 0) return prompts;
      output_.append(buffer, static_cast<size_t>(n));
    }
  }

  void Type(absl::string_view keys) {
    ASSERT_EQ(::write(master_.get(), keys.data(), keys.size()),
              static_cast<ssize_t>(keys.size()));
  }

  // Asks in a thread; once the question is on screen, types `keys` (unless empty).
  Answer AskAndType(const ApprovalRequest& request, absl::string_view keys,
                    absl::Duration timeout = absl::Seconds(10)) {
    TtyApprover approver(slave_path_);
    Answer answer;
    std::thread asker([&] { answer = approver.Ask(request, timeout); });
    ReadUntil("[y/N]");
    if (!keys.empty()) Type(keys);
    asker.join();
    ReadUntil("\n");  // the verdict line
    return answer;
  }

  static ApprovalRequest Request() {
    ApprovalRequest r;
    r.tool = "write";
    r.target = "/w/a.txt";
    r.preset = "read-only";
    r.mode = "on-request";
    r.content_sha256 = "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789";
    r.diff = "--- /w/a.txt\n+++ /w/a.txt\n@@ -1,1 +1,1 @@\n-a\n+b\n";
    r.justification = "because";
    return r;
  }

  ScopedFd master_;
  ScopedFd slave_;
  std::string slave_path_;
  std::string output_;
};

TEST_F(TtyApproverTest, YApproves) {
  const Answer answer = AskAndType(Request(), "y\n");
  EXPECT_TRUE(answer.approved) << answer.reason;
  EXPECT_THAT(output_, HasSubstr("target: /w/a.txt"));
  EXPECT_THAT(output_, HasSubstr("abcdef012345..."));
  EXPECT_THAT(output_, HasSubstr("preset: read-only"));
  EXPECT_THAT(output_, HasSubstr("mode: on-request"));
  EXPECT_THAT(output_, HasSubstr("justification: because"));
  EXPECT_THAT(output_, HasSubstr("+b"));
}

TEST_F(TtyApproverTest, YesInAnyCaseApproves) {
  EXPECT_TRUE(AskAndType(Request(), "  YeS \n").approved);
}

TEST_F(TtyApproverTest, NDenies) {
  const Answer answer = AskAndType(Request(), "n\n");
  EXPECT_FALSE(answer.approved);
  EXPECT_EQ(answer.reason, "answered no");
}

TEST_F(TtyApproverTest, AnythingElseDenies) {
  EXPECT_FALSE(AskAndType(Request(), "yes please\n").approved);
}

TEST_F(TtyApproverTest, EmptyLineDenies) {
  const Answer answer = AskAndType(Request(), "\n");
  EXPECT_FALSE(answer.approved);
  EXPECT_EQ(answer.reason, "empty answer");
}

TEST_F(TtyApproverTest, EofDenies) {
  const Answer answer = AskAndType(Request(), "\x04");  // ^D on an empty line: read() = 0
  EXPECT_FALSE(answer.approved);
  EXPECT_THAT(answer.reason, HasSubstr("end of input"));
}

TEST_F(TtyApproverTest, TimeoutDenies) {
  const absl::Time start = absl::Now();
  const Answer answer = AskAndType(Request(), "", absl::Milliseconds(300));
  EXPECT_FALSE(answer.approved);
  EXPECT_THAT(answer.reason, HasSubstr("timeout"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST_F(TtyApproverTest, TypeaheadDoesNotAnswer) {
  Type("y\n");  // typed before the prompt exists
  const Answer answer = AskAndType(Request(), "n\n");
  EXPECT_FALSE(answer.approved);
}

TEST_F(TtyApproverTest, AnsiEscapesInTheFileNameAreShownEscaped) {
  ApprovalRequest request = Request();
  request.target = "/w/\x1b[2J\x1b[1;1Hsafe.txt\x1b]0;title\x07\xe2\x80\xae";
  request.diff = "+\x1b[31mred\n";
  const Answer answer = AskAndType(request, "n\n");
  EXPECT_FALSE(answer.approved);
  EXPECT_EQ(output_.find('\x1b'), std::string::npos) << output_;
  EXPECT_EQ(output_.find('\x07'), std::string::npos);
  EXPECT_EQ(output_.find("\xe2\x80\xae"), std::string::npos);
  EXPECT_THAT(output_, HasSubstr("/w/\\x1b[2J\\x1b[1;1Hsafe.txt\\x1b]0;title\\x07\\u{202e}"));
  EXPECT_THAT(output_, HasSubstr("+\\x1b[31mred"));
}

TEST_F(TtyApproverTest, PromptsAreSerialized) {
  TtyApprover approver(slave_path_);
  Answer first, second;
  std::thread a([&] { first = approver.Ask(Request(), absl::Seconds(20)); });
  WaitForPrompts(1, absl::Seconds(10));
  std::thread b([&] { second = approver.Ask(Request(), absl::Seconds(20)); });
  // The second caller waits for the terminal: no second prompt while the first is open.
  EXPECT_EQ(WaitForPrompts(2, absl::Milliseconds(500)), 1);
  Type("y\n");
  a.join();
  EXPECT_EQ(WaitForPrompts(2, absl::Seconds(10)), 2);
  Type("n\n");
  b.join();
  EXPECT_TRUE(first.approved);
  EXPECT_FALSE(second.approved);
}

TEST_F(TtyApproverTest, NoTerminalDenies) {
  TtyApprover approver("/nonexistent/tty");
  const Answer answer = approver.Ask(Request(), absl::Seconds(1));
  EXPECT_FALSE(answer.approved);
  EXPECT_THAT(answer.reason, HasSubstr("/nonexistent/tty"));
}

}  // namespace
}  // namespace airlock::broker
