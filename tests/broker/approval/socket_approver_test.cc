#include "broker/approval/socket_approver.h"

#include <sys/socket.h>
#include <sys/time.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "absl/time/clock.h"
#include "broker/approval/prompt.h"
#include "broker/approval/tty_approver.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "platform/base/fd_io.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker {
namespace {

using ::airlock::testing::StatusIs;
using ::testing::HasSubstr;

ApprovalRequest Request() {
  ApprovalRequest r;
  r.request_id = 5;
  r.tool = "bash";
  r.command = "make install";
  r.cwd = "/w";
  r.escalated = true;
  r.justification = "install";
  r.preset = "workspace-write";
  r.mode = "on-request";
  return r;
}

// A client that answers one request with `reply` and records what it was shown.
std::thread Peer(const std::string& path, std::string reply, std::string* seen) {
  return std::thread([path, reply, seen] {
    absl::StatusOr<ScopedFd> fd = ConnectToApprovalSocket(path);
    ASSERT_TRUE(fd.ok()) << fd.status();
    absl::StatusOr<std::string> line =
        ReadLineUntil(fd->get(), absl::Now() + absl::Seconds(10), kMaxApprovalLineBytes);
    ASSERT_TRUE(line.ok()) << line.status();
    *seen = *line;
    ASSERT_TRUE(WriteFully(fd->get(), reply, "socket").ok());
  });
}

class SocketApproverTest : public ::testing::Test {
 protected:
  std::string SocketPath() const { return dir_.Child("approvals/approve.sock"); }
  airlock::testing::TempDir dir_;
};

TEST_F(SocketApproverTest, PeerAnsweringYesApproves) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(auto approver, SocketApprover::Listen(SocketPath()));
  struct stat st {};
  ASSERT_EQ(::stat(dir_.Child("approvals").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  std::string seen;
  std::thread peer = Peer(SocketPath(), "{\"approved\": true}\n", &seen);
  const Answer answer = approver->Ask(Request(), absl::Seconds(10));
  peer.join();
  EXPECT_TRUE(answer.approved) << answer.reason;
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ApprovalRequest shown, RequestFromJson(seen));
  EXPECT_EQ(shown.command, "make install");
  EXPECT_EQ(shown.cwd, "/w");
  EXPECT_TRUE(shown.escalated);
}

TEST_F(SocketApproverTest, PeerAnsweringNoDenies) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(auto approver, SocketApprover::Listen(SocketPath()));
  std::string seen;
  std::thread peer = Peer(SocketPath(), "{\"approved\": false, \"reason\": \"nope\"}\n", &seen);
  const Answer answer = approver->Ask(Request(), absl::Seconds(10));
  peer.join();
  EXPECT_FALSE(answer.approved);
  EXPECT_EQ(answer.reason, "nope");
}

TEST_F(SocketApproverTest, GarbageAnswersDeny) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(auto approver, SocketApprover::Listen(SocketPath()));
  for (const char* reply : {"yes\n", "{\"approved\": \"true\"}\n", "{\"approved\": 1}\n",
                            "{}\n", "\n"}) {
    std::string seen;
    std::thread peer = Peer(SocketPath(), reply, &seen);
    EXPECT_FALSE(approver->Ask(Request(), absl::Seconds(10)).approved) << reply;
    peer.join();
  }
}

TEST_F(SocketApproverTest, PeerHangingUpDenies) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(auto approver, SocketApprover::Listen(SocketPath()));
  std::string seen;
  std::thread peer = Peer(SocketPath(), "{\"approv", &seen);  // no newline, then close
  const Answer answer = approver->Ask(Request(), absl::Seconds(10));
  peer.join();
  EXPECT_FALSE(answer.approved);
  EXPECT_THAT(answer.reason, HasSubstr("hung up"));
}

TEST_F(SocketApproverTest, NoPeerTimesOutAndDenies) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(auto approver, SocketApprover::Listen(SocketPath()));
  const absl::Time start = absl::Now();
  const Answer answer = approver->Ask(Request(), absl::Milliseconds(300));
  EXPECT_FALSE(answer.approved);
  EXPECT_THAT(answer.reason, HasSubstr("timeout"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST_F(SocketApproverTest, SilentPeerTimesOutAndDenies) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(auto approver, SocketApprover::Listen(SocketPath()));
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ScopedFd silent, ConnectToApprovalSocket(SocketPath()));
  const Answer answer = approver->Ask(Request(), absl::Milliseconds(300));
  EXPECT_FALSE(answer.approved);
  EXPECT_THAT(answer.reason, HasSubstr("timeout"));
}

TEST_F(SocketApproverTest, RefusesAWideOrForeignDirectory) {
  const std::string wide = dir_.Child("wide");
  ASSERT_EQ(::mkdir(wide.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(wide.c_str(), 0755), 0);
  EXPECT_THAT(SocketApprover::Listen(wide + "/s.sock"),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("must be 0700")));
  const std::string link = dir_.Child("link");
  ASSERT_EQ(::symlink(dir_.path().c_str(), link.c_str()), 0);
  EXPECT_THAT(SocketApprover::Listen(link + "/s.sock"),
              StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_FALSE(SocketApprover::Listen(dir_.Child("no/such/parent/s.sock")).ok());
}

TEST_F(SocketApproverTest, RefusesToReplaceSomethingThatIsNotItsSocket) {
  ASSERT_EQ(::mkdir(dir_.Child("approvals").c_str(), 0700), 0);
  airlock::testing::WriteFileOrDie(SocketPath(), "precious");
  EXPECT_THAT(SocketApprover::Listen(SocketPath()),
              StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_EQ(airlock::testing::ReadFileOrMissing(SocketPath()), "precious");
}

TEST_F(SocketApproverTest, CleansUpItsSocketAndDirectory) {
  {
    AIRLOCK_ASSERT_OK_AND_ASSIGN(auto approver, SocketApprover::Listen(SocketPath()));
  }
  struct stat st {};
  EXPECT_NE(::lstat(SocketPath().c_str(), &st), 0);
  EXPECT_NE(::lstat(dir_.Child("approvals").c_str(), &st), 0);
}

TEST_F(SocketApproverTest, ForeignUidClientIsNotServed) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a client as another uid";
  AIRLOCK_ASSERT_OK_AND_ASSIGN(auto approver, SocketApprover::Listen(SocketPath()));
  // Open the directory to everyone for this test, so only the SO_PEERCRED check stands.
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(dir_.Child("approvals").c_str(), 0777), 0);
  ASSERT_EQ(::chmod(SocketPath().c_str(), 0777), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) _exit(3);
    ScopedFd fd(::socket(AF_UNIX, SOCK_STREAM, 0));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string path = SocketPath();
    std::memcpy(address.sun_path, path.data(), path.size());
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) _exit(4);
    const char reply[] = "{\"approved\": true}\n";
    (void)!::write(fd.get(), reply, sizeof(reply) - 1);
    // Until the broker closes us — or, when this client came after the question's deadline
    // and nobody accepted it, at most 10 s.
    const timeval bound{10, 0};
    (void)::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof(bound));
    char buffer[16];
    (void)!::read(fd.get(), buffer, sizeof(buffer));
    _exit(0);
  }
  const Answer answer = approver->Ask(Request(), absl::Milliseconds(500));
  approver.reset();  // a connection still queued is reset with the listener
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_FALSE(answer.approved);
  EXPECT_THAT(answer.reason, HasSubstr("timeout"));
}

TEST_F(SocketApproverTest, SessionScopeIsHonouredOnlyWhereOffered) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(auto approver, SocketApprover::Listen(SocketPath()));
  ApprovalRequest mcp = Request();
  mcp.tool = "docs.search";
  mcp.session_grant_offered = true;
  std::string seen;
  std::thread peer = Peer(SocketPath(), "{\"approved\": true, \"scope\": \"session\"}\n", &seen);
  const Answer granted = approver->Ask(mcp, absl::Seconds(10));
  peer.join();
  EXPECT_TRUE(granted.approved) << granted.reason;
  EXPECT_EQ(granted.scope, Answer::Scope::kSession);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ApprovalRequest shown, RequestFromJson(seen));
  EXPECT_TRUE(shown.session_grant_offered);

  // Not offered (a bash call): a session answer is a denial, not a one-call yes.
  peer = Peer(SocketPath(), "{\"approved\": true, \"scope\": \"session\"}\n", &seen);
  const Answer refused = approver->Ask(Request(), absl::Seconds(10));
  peer.join();
  EXPECT_FALSE(refused.approved);
  EXPECT_THAT(refused.reason, HasSubstr("not offered"));

  peer = Peer(SocketPath(), "{\"approved\": true, \"scope\": \"forever\"}\n", &seen);
  EXPECT_FALSE(approver->Ask(mcp, absl::Seconds(10)).approved);
  peer.join();
  peer = Peer(SocketPath(), "{\"approved\": true, \"scope\": \"once\"}\n", &seen);
  const Answer once = approver->Ask(mcp, absl::Seconds(10));
  peer.join();
  EXPECT_TRUE(once.approved);
  EXPECT_EQ(once.scope, Answer::Scope::kOnce);
}

}  // namespace
}  // namespace airlock::broker
