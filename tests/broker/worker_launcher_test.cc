// The confined worker's launch refuses, and kills what it started, when the confinement never
// reports (a stuck bwrap or `__confine`). The mount layer is disabled here so that the stand-in
// `__confine` — a script that records its pid and sleeps — is started directly.
#include "broker/worker_launcher.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker {
namespace {

using ::airlock::testing::StatusIs;
using ::testing::HasSubstr;

TEST(WorkerLauncherTest, AConfinementThatNeverReportsIsRefusedAndKilled) {
  testing::TempDir dir;
  const std::string pid_file = dir.Child("confine.pid");
  const std::string fake = dir.Child("fake-airlock");
  testing::WriteFileOrDie(fake, "#!/bin/sh\necho $$ > " + pid_file + "\nexec sleep 60\n");
  ASSERT_EQ(::chmod(fake.c_str(), 0755), 0);
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);

  WorkerLaunchOptions options;
  options.argv = {"/bin/true"};
  options.environment = {"PATH=/usr/bin:/bin", "HOME=" + dir.path()};
  options.connector_fd = pair[1];
  options.session_id = "s";
  options.working_directory = dir.path();
  options.airlock_binary = fake;
  options.confinement.test_disable = {kLayerMount};
  options.status_timeout = std::chrono::milliseconds(1500);

  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<WorkerLaunch> launch = LaunchConfinedWorker(options);
  const auto took = std::chrono::steady_clock::now() - start;
  ::close(pair[0]);
  ::close(pair[1]);

  EXPECT_THAT(launch, StatusIs(absl::StatusCode::kDeadlineExceeded,
                               HasSubstr("no report from the confinement within 1.5s")));
  EXPECT_LT(took, std::chrono::seconds(20));
  // The stand-in was started, and is gone (killed and reaped), not left sleeping.
  std::string text = testing::ReadFileOrMissing(pid_file);
  int pid = 0;
  ASSERT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &pid)) << text;
  EXPECT_NE(::kill(pid, 0), 0) << "pid " << pid << " still exists";
}

}  // namespace
}  // namespace airlock::broker
