// `airlock approve --socket PATH` for real: the real binary, started in a new session (no
// controlling terminal, so it reads its answers from stdin), against a SocketApprover.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <csignal>
#include <string>

#include "absl/time/clock.h"
#include "broker/approval/socket_approver.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "platform/base/fd_io.h"
#include "platform/process/spawn.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker {
namespace {

using ::testing::HasSubstr;

class ApproveCommandTest : public ::testing::Test {
 protected:
  void Start(const std::string& socket_path) {
    int in[2], out[2];
    ASSERT_EQ(::pipe2(in, O_CLOEXEC), 0);
    ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
    SpawnOptions options;
    options.argv = {AIRLOCK_BINARY, "approve", "--socket", socket_path};
    options.env = {"PATH=/usr/bin:/bin"};
    options.descriptors = {{0, in[0]}, {1, out[1]}, {2, out[1]}};
    options.new_session = true;  // no controlling terminal: answers come from stdin
    options.parent_death_signal = SIGKILL;
    absl::StatusOr<pid_t> pid = Spawn(options);
    ::close(in[0]);
    ::close(out[1]);
    ASSERT_TRUE(pid.ok()) << pid.status();
    pid_ = *pid;
    stdin_.reset(in[1]);
    stdout_.reset(out[0]);
  }

  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      (void)WaitForExit(pid_);
    }
  }

  ApprovalRequest Request() {
    ApprovalRequest r;
    r.request_id = 1;
    r.tool = "write";
    r.target = "/w/\x1b[31mred.txt";
    r.preset = "read-only";
    r.mode = "on-request";
    r.content_sha256 = "feedfacefeedfacefeedface00000000";
    return r;
  }

  airlock::testing::TempDir dir_;
  pid_t pid_ = -1;
  ScopedFd stdin_;
  ScopedFd stdout_;
};

TEST_F(ApproveCommandTest, AnswersYesThenNoAndShowsRequestsEscaped) {
  const std::string path = dir_.Child("sock/approve.sock");
  AIRLOCK_ASSERT_OK_AND_ASSIGN(auto approver, SocketApprover::Listen(path));
  Start(path);
  ASSERT_TRUE(WriteFully(stdin_.get(), "y\n", "stdin").ok());
  const Answer first = approver->Ask(Request(), absl::Seconds(20));
  EXPECT_TRUE(first.approved) << first.reason;
  ASSERT_TRUE(WriteFully(stdin_.get(), "n\n", "stdin").ok());
  const Answer second = approver->Ask(Request(), absl::Seconds(20));
  EXPECT_FALSE(second.approved);
  approver.reset();  // the broker goes away: the client ends
  stdin_.reset();
  absl::StatusOr<std::string> output = ReadToEnd(stdout_.get(), 1 << 20, "stdout");
  ASSERT_TRUE(output.ok());
  absl::StatusOr<ExitStatus> status = WaitForExit(pid_);
  pid_ = -1;
  ASSERT_TRUE(status.ok());
  EXPECT_TRUE(status->exited && status->code == 0) << *output;
  EXPECT_THAT(*output, HasSubstr("target: /w/\\x1b[31mred.txt"));
  EXPECT_THAT(*output, HasSubstr("content sha256: feedfacefeed..."));
  EXPECT_THAT(*output, HasSubstr("approved\n"));
  EXPECT_THAT(*output, HasSubstr("denied\n"));
  EXPECT_EQ(output->find('\x1b'), std::string::npos);
}

TEST_F(ApproveCommandTest, NoBrokerExitsTwo) {
  Start(dir_.Child("nothing/here.sock"));
  stdin_.reset();
  absl::StatusOr<ExitStatus> status = WaitForExit(pid_);
  pid_ = -1;
  ASSERT_TRUE(status.ok());
  EXPECT_TRUE(status->exited);
  EXPECT_EQ(status->code, 2);
}

}  // namespace
}  // namespace airlock::broker
