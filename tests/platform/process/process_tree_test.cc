#include "platform/process/process_tree.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock {
namespace {

using ::airlock::testing::ReadFileOrMissing;
using ::airlock::testing::TempDir;

TreeRunOptions Shell(const std::string& script) {
  TreeRunOptions options;
  options.spawn.argv = {"/bin/sh", "-c", script};
  options.spawn.env = {"PATH=/usr/bin:/bin"};
  return options;
}

TEST(ProcessTreeTest, CapturesBothStreamsAndTheStatus) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(TreeRunResult result,
                               RunProcessTree(Shell("echo out; echo err >&2; exit 3")));
  EXPECT_EQ(result.stdout_data, "out\n");
  EXPECT_EQ(result.stderr_data, "err\n");
  EXPECT_EQ(result.status.ShellCode(), 3);
  EXPECT_FALSE(result.truncated);
  EXPECT_FALSE(result.timed_out);
}

TEST(ProcessTreeTest, TruncatesAndSpillsTheWholeOutput) {
  TempDir dir;
  TreeRunOptions options = Shell("echo first; head -c 3000 /dev/zero | tr '\\0' b; echo; echo e >&2");
  options.stream_limit = 100;
  options.full_output_dir = dir.path();
  AIRLOCK_ASSERT_OK_AND_ASSIGN(TreeRunResult result, RunProcessTree(std::move(options)));
  EXPECT_TRUE(result.truncated);
  EXPECT_EQ(result.stdout_data.size(), 100u);
  EXPECT_EQ(result.stdout_data.substr(0, 6), "first\n");
  ASSERT_FALSE(result.full_output_path.empty());
  const std::string whole = ReadFileOrMissing(result.full_output_path);
  EXPECT_EQ(whole.size(), 6u + 3000 + 1 + 2);
  EXPECT_EQ(whole.substr(0, 6), "first\n");
  struct stat st;
  ASSERT_EQ(::stat(result.full_output_path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // Named after this process, so that a sweep can tell a dead owner's files from ours.
  const std::string prefix = absl::StrCat(dir.path(), "/output-", ::getpid(), "-");
  EXPECT_EQ(result.full_output_path.rfind(prefix, 0), 0u) << result.full_output_path;
}

TEST(ProcessTreeTest, FullOutputFileIsBounded) {
  TempDir dir;
  TreeRunOptions options = Shell("head -c 10000 /dev/zero");
  options.stream_limit = 10;
  options.full_output_dir = dir.path();
  options.full_output_limit = 1000;
  AIRLOCK_ASSERT_OK_AND_ASSIGN(TreeRunResult result, RunProcessTree(std::move(options)));
  ASSERT_TRUE(result.truncated);
  const std::string whole = ReadFileOrMissing(result.full_output_path);
  EXPECT_EQ(whole.substr(0, 1000), std::string(1000, '\0'));
  EXPECT_THAT(whole.substr(1000), ::testing::HasSubstr("output beyond 1000 bytes was dropped"));
}

TEST(ProcessTreeTest, TimeoutKillsTheWholeGroup) {
  TempDir dir;
  const std::string tick = dir.Child("tick");
  TreeRunOptions options = Shell(
      "(while true; do date +%s%N > " + tick + "; sleep 0.05; done) & sleep 30");
  options.timeout = std::chrono::milliseconds(300);
  const auto start = std::chrono::steady_clock::now();
  AIRLOCK_ASSERT_OK_AND_ASSIGN(TreeRunResult result, RunProcessTree(std::move(options)));
  EXPECT_TRUE(result.timed_out);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  const std::string first = ReadFileOrMissing(tick);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(ReadFileOrMissing(tick), first) << "a background job survived the timeout";
}

TEST(ProcessTreeTest, BackgroundJobsDieWithTheMainProcess) {
  TempDir dir;
  const std::string late = dir.Child("late");
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      TreeRunResult result,
      RunProcessTree(Shell("(sleep 1.5; echo x > " + late + ") & echo started")));
  EXPECT_EQ(result.stdout_data, "started\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_NE(::access(late.c_str(), F_OK), 0);
}

TEST(ProcessTreeTest, CancelFromAnotherThread) {
  CancelToken cancel;
  TreeRunOptions options = Shell("sleep 30");
  options.cancel = &cancel;
  std::thread canceller([&cancel] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancel.Cancel();
  });
  const auto start = std::chrono::steady_clock::now();
  AIRLOCK_ASSERT_OK_AND_ASSIGN(TreeRunResult result, RunProcessTree(std::move(options)));
  canceller.join();
  EXPECT_TRUE(result.cancelled);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  // A token already fired starts nothing.
  TreeRunOptions again = Shell("exit 0");
  again.cancel = &cancel;
  AIRLOCK_ASSERT_OK_AND_ASSIGN(TreeRunResult skipped, RunProcessTree(std::move(again)));
  EXPECT_TRUE(skipped.cancelled);
}

TEST(ProcessTreeTest, StatusPipeIsRead) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  TreeRunOptions options = Shell("printf ready >&3; exec 3>&-; echo after");
  options.spawn.descriptors = {{0, 0}, {1, 1}, {2, 2}, {3, fds[1]}};
  options.status_fd = fds[0];
  options.close_after_spawn.emplace_back(fds[1]);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(TreeRunResult result, RunProcessTree(std::move(options)));
  ::close(fds[0]);
  EXPECT_EQ(result.status_bytes, "ready");
  EXPECT_EQ(result.stdout_data, "after\n");
}

}  // namespace
}  // namespace airlock
