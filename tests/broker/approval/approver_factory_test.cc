#include <fcntl.h>
#include <unistd.h>

#include "broker/approval/approver.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker {
namespace {

using ::airlock::testing::StatusIs;
using ::testing::HasSubstr;

TEST(MakeApproverTest, NoneAlwaysDenies) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Approver> approver, MakeApprover("none"));
  EXPECT_EQ(approver->Describe(), "none");
  const Answer answer = approver->Ask(ApprovalRequest{}, absl::Seconds(1));
  EXPECT_FALSE(answer.approved);
  EXPECT_THAT(answer.reason, HasSubstr("no approver configured"));
}

TEST(MakeApproverTest, DefaultIsTtyWithATerminalElseNone) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Approver> approver, MakeApprover(""));
  EXPECT_EQ(approver->Describe(), HasControllingTerminal() ? "tty" : "none");
  const int fd = ::open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
  EXPECT_EQ(HasControllingTerminal(), fd >= 0);
  if (fd >= 0) ::close(fd);
}

TEST(MakeApproverTest, ExplicitTtyWithoutTerminalFailsAtStart) {
  if (HasControllingTerminal()) GTEST_SKIP() << "this process has a controlling terminal";
  EXPECT_THAT(MakeApprover("tty"), StatusIs(absl::StatusCode::kFailedPrecondition,
                                            HasSubstr("no controlling terminal")));
}

TEST(MakeApproverTest, SocketAndCommandSpecs) {
  airlock::testing::TempDir dir;
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Approver> socket,
                               MakeApprover("socket:" + dir.Child("s/approve.sock")));
  EXPECT_EQ(socket->Describe(), "socket:" + dir.Child("s/approve.sock"));
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Approver> command, MakeApprover("command:/bin/true"));
  EXPECT_EQ(command->Describe(), "command:/bin/true");
  // /bin/true exits 0 but does not print "allow".
  EXPECT_FALSE(command->Ask(ApprovalRequest{}, absl::Seconds(5)).approved);
}

TEST(MakeApproverTest, InvalidSpecsAreRefused) {
  EXPECT_THAT(MakeApprover("yes"), StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr("unknown --approver")));
  EXPECT_THAT(MakeApprover("command:true"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_FALSE(MakeApprover("command:/nonexistent/approver").ok());
  EXPECT_FALSE(MakeApprover("socket:").ok());
}

}  // namespace
}  // namespace airlock::broker
