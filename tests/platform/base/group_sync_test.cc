#include "platform/base/group_sync.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "platform/base/scoped_fd.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock {
namespace {

using ::airlock::testing::IsOk;
using ::testing::HasSubstr;

class GroupSyncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fd_.reset(::open(dir_.Child("file").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
    ASSERT_TRUE(fd_.valid());
  }
  uint64_t Append(size_t bytes) {
    const std::string data(bytes, 'x');
    EXPECT_EQ(::write(fd_.get(), data.data(), data.size()), static_cast<ssize_t>(bytes));
    written_ += bytes;
    return written_;
  }

  testing::TempDir dir_;
  ScopedFd fd_;
  uint64_t written_ = 0;
};

TEST_F(GroupSyncTest, WaitReturnsOnceTheBytesAreSynced) {
  std::atomic<int> calls{0};
  GroupSyncOptions options;
  options.flush_delay = std::chrono::hours(1);  // only a waiter makes it sync
  options.sync_for_testing = [&](int fd) {
    ++calls;
    return ::fdatasync(fd);
  };
  GroupSync sync(fd_.get(), 0, "file", options);
  const uint64_t end = Append(100);
  sync.Written(end);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(calls.load(), 0) << "nobody waited and the delay has not passed";
  EXPECT_EQ(sync.synced(), 0u);
  ASSERT_THAT(sync.WaitThrough(end), IsOk());
  EXPECT_GE(sync.synced(), end);
  EXPECT_EQ(calls.load(), 1);
  // Already durable: no further sync.
  ASSERT_THAT(sync.WaitThrough(end), IsOk());
  EXPECT_EQ(calls.load(), 1);
}

TEST_F(GroupSyncTest, UnwaitedBytesAreFlushedAfterTheDelay) {
  GroupSyncOptions options;
  options.flush_delay = std::chrono::milliseconds(5);
  GroupSync sync(fd_.get(), 0, "file", options);
  const uint64_t end = Append(10);
  sync.Written(end);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (sync.synced() < end && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_GE(sync.synced(), end);
  EXPECT_EQ(sync.syncs(), 1u);
}

TEST_F(GroupSyncTest, TheDestructorSyncsWhatWasWritten) {
  std::atomic<int> calls{0};
  GroupSyncOptions options;
  options.flush_delay = std::chrono::hours(1);
  options.sync_for_testing = [&](int fd) {
    ++calls;
    return ::fdatasync(fd);
  };
  {
    GroupSync sync(fd_.get(), 0, "file", options);
    sync.Written(Append(10));
  }
  EXPECT_EQ(calls.load(), 1);
}

TEST_F(GroupSyncTest, ConcurrentWaitersShareSyncs) {
  // Each sync is slow; 8 waiters arriving while one is in flight are covered by at most one
  // more.
  std::atomic<int> calls{0};
  GroupSyncOptions options;
  options.flush_delay = std::chrono::hours(1);
  options.sync_for_testing = [&](int fd) {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return ::fdatasync(fd);
  };
  GroupSync sync(fd_.get(), 0, "file", options);
  std::atomic<int> ok{0};
  // Written first: however late a thread starts, what it waits for was written before the
  // first sync began or while it ran, so one more sync covers it.
  std::vector<uint64_t> ends;
  for (int i = 0; i < 8; ++i) ends.push_back(Append(10));
  std::vector<std::thread> threads;
  for (const uint64_t end : ends) {
    threads.emplace_back([&, end] {
      if (sync.WaitThrough(end).ok()) ++ok;
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(ok.load(), 8);
  EXPECT_LE(calls.load(), 2);
  EXPECT_GE(sync.synced(), written_);
}

TEST_F(GroupSyncTest, AWaitedForSyncCallsTheOtherFilesPendingBytesIn) {
  // Two files, nobody waits for the first: its bytes are synced alongside the second's
  // waited-for sync, long before its own delay.
  ScopedFd other(::open(dir_.Child("other").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
                        0600));
  ASSERT_TRUE(other.valid());
  GroupSyncOptions lazy;
  lazy.flush_delay = std::chrono::hours(1);
  GroupSync first(fd_.get(), 0, "file", lazy);
  GroupSync second(other.get(), 0, "other", lazy);
  const uint64_t end = Append(10);
  first.Written(end);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(first.synced(), 0u);
  ASSERT_EQ(::write(other.get(), "abc", 3), 3);
  ASSERT_THAT(second.WaitThrough(3), IsOk());
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (first.synced() < end && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_GE(first.synced(), end);
}

TEST_F(GroupSyncTest, AFailedSyncFailsEveryLaterWait) {
  std::atomic<bool> fail{true};
  GroupSyncOptions options;
  options.sync_for_testing = [&](int fd) {
    if (fail.load()) {
      errno = EIO;
      return -1;
    }
    return ::fdatasync(fd);
  };
  GroupSync sync(fd_.get(), 0, "file", options);
  const uint64_t first = Append(10);
  absl::Status status = sync.WaitThrough(first);
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("fdatasync"));
  EXPECT_THAT(status.message(), HasSubstr("file"));
  // Syncs would succeed now, but the pages the failed one lost are not on disk: stay failed.
  fail = false;
  EXPECT_FALSE(sync.WaitThrough(Append(10)).ok());
  EXPECT_FALSE(sync.status().ok());
  EXPECT_LT(sync.synced(), first);
}

}  // namespace
}  // namespace airlock
