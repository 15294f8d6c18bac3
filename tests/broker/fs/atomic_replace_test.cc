// Atomic replacement: a failure at any step leaves the target untouched and no temp file; the
// identity recheck refuses a target swapped before the rename.
#include "broker/fs/atomic_replace.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "broker/wire_error.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "platform/base/scoped_fd.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker {
namespace {

class AtomicReplaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.reset(::open(tmp_.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(dir_.valid());
    testing::WriteFileOrDie(tmp_.Child("t"), "old");
  }
  ExpectedTarget Current(const std::string& name) {
    struct stat st;
    ExpectedTarget expected;
    if (::lstat(tmp_.Child(name).c_str(), &st) == 0) {
      expected.exists = true;
      expected.device = st.st_dev;
      expected.inode = st.st_ino;
    }
    return expected;
  }

  testing::TempDir tmp_;
  ScopedFd dir_;
};

TEST_F(AtomicReplaceTest, ReplacesAndCreates) {
  ASSERT_THAT(ReplaceAtomically(dir_.get(), "t", "new", Current("t"), {}, "t"), testing::IsOk());
  EXPECT_EQ(testing::ReadFileOrMissing(tmp_.Child("t")), "new");
  ASSERT_THAT(ReplaceAtomically(dir_.get(), "n", "fresh", Current("n"), {}, "n"),
              testing::IsOk());
  EXPECT_EQ(testing::ReadFileOrMissing(tmp_.Child("n")), "fresh");
  EXPECT_THAT(testing::SortedNames(tmp_.path()), ::testing::UnorderedElementsAre("t", "n"));
}

TEST_F(AtomicReplaceTest, AFailureAtAnyStepLeavesTheTargetAndNoTempFile) {
  for (ReplaceStep failing : {ReplaceStep::kWrite, ReplaceStep::kSync, ReplaceStep::kRecheck,
                              ReplaceStep::kRename}) {
    SCOPED_TRACE(static_cast<int>(failing));
    ReplaceOptions options;
    options.fault_for_testing = [failing](ReplaceStep step) {
      return step == failing ? absl::DataLossError("injected EIO") : absl::OkStatus();
    };
    auto status = ReplaceAtomically(dir_.get(), "t", "new", Current("t"), options, "t");
    EXPECT_THAT(status, testing::StatusIs(absl::StatusCode::kDataLoss));
    EXPECT_EQ(testing::ReadFileOrMissing(tmp_.Child("t")), "old");
    EXPECT_THAT(testing::SortedNames(tmp_.path()), ::testing::ElementsAre("t"));
    status = ReplaceAtomically(dir_.get(), "absent", "new", Current("absent"), options, "absent");
    EXPECT_FALSE(status.ok());
    EXPECT_THAT(testing::SortedNames(tmp_.path()), ::testing::ElementsAre("t"));
  }
}

TEST_F(AtomicReplaceTest, TheBarrierRunsAfterTheTempFileIsSyncedAndBeforeTheRename) {
  std::vector<ReplaceStep> steps;
  ReplaceOptions options;
  options.fault_for_testing = [&steps](ReplaceStep step) {
    steps.push_back(step);
    return absl::OkStatus();
  };
  size_t steps_at_barrier = 0;
  std::string target_at_barrier;
  options.before_rename = [&]() {
    steps_at_barrier = steps.size();
    target_at_barrier = testing::ReadFileOrMissing(tmp_.Child("t"));
    return absl::OkStatus();
  };
  ASSERT_THAT(ReplaceAtomically(dir_.get(), "t", "new", Current("t"), options, "t"),
              testing::IsOk());
  // Write and sync came before it; recheck and rename after.
  ASSERT_EQ(steps_at_barrier, 2u);
  EXPECT_EQ(steps[0], ReplaceStep::kWrite);
  EXPECT_EQ(steps[1], ReplaceStep::kSync);
  EXPECT_EQ(target_at_barrier, "old");
  EXPECT_EQ(testing::ReadFileOrMissing(tmp_.Child("t")), "new");
}

TEST_F(AtomicReplaceTest, AFailedBarrierRenamesNothingAndRemovesTheTempFile) {
  ReplaceOptions options;
  options.before_rename = [] { return absl::InternalError("the intent is not durable"); };
  auto status = ReplaceAtomically(dir_.get(), "t", "new", Current("t"), options, "t");
  EXPECT_THAT(status, testing::StatusIs(absl::StatusCode::kInternal));
  EXPECT_EQ(testing::ReadFileOrMissing(tmp_.Child("t")), "old");
  EXPECT_THAT(testing::SortedNames(tmp_.path()), ::testing::ElementsAre("t"));
  status = ReplaceAtomically(dir_.get(), "absent", "new", Current("absent"), options, "absent");
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(testing::SortedNames(tmp_.path()), ::testing::ElementsAre("t"));
}

TEST_F(AtomicReplaceTest, ATargetSwappedBeforeTheRenameIsStale) {
  struct Swap {
    const char* name;
    void (*apply)(const std::string& dir);
  };
  const Swap swaps[] = {
      {"another inode",
       [](const std::string& dir) {
         testing::WriteFileOrDie(dir + "/other", "theirs");
         ::rename((dir + "/other").c_str(), (dir + "/t").c_str());
       }},
      {"a link", [](const std::string& dir) {
         ::unlink((dir + "/t").c_str());
         ::symlink("/etc/passwd", (dir + "/t").c_str());
       }},
      {"a directory", [](const std::string& dir) {
         ::unlink((dir + "/t").c_str());
         ::mkdir((dir + "/t").c_str(), 0700);
       }},
  };
  for (const Swap& swap : swaps) {
    SCOPED_TRACE(swap.name);
    testing::RemoveTree(tmp_.Child("t"));
    testing::WriteFileOrDie(tmp_.Child("t"), "old");
    const ExpectedTarget expected = Current("t");
    ReplaceOptions options;
    const std::string dir = tmp_.path();
    options.fault_for_testing = [&](ReplaceStep step) {
      if (step == ReplaceStep::kRecheck) swap.apply(dir);
      return absl::OkStatus();
    };
    auto status = ReplaceAtomically(dir_.get(), "t", "new", expected, options, "t");
    EXPECT_EQ(WireCodeOf(status), v1::APPROVAL_STALE) << status;
    EXPECT_NE(testing::ReadFileOrMissing(tmp_.Child("t")), "new");
    EXPECT_THAT(testing::SortedNames(tmp_.path()), ::testing::ElementsAre("t"));
  }
}

TEST_F(AtomicReplaceTest, AnEntryAppearingForANewFileIsStale) {
  ReplaceOptions options;
  const std::string dir = tmp_.path();
  options.fault_for_testing = [&](ReplaceStep step) {
    if (step == ReplaceStep::kRename) testing::WriteFileOrDie(dir + "/n", "theirs");
    return absl::OkStatus();
  };
  auto status = ReplaceAtomically(dir_.get(), "n", "mine", Current("n"), options, "n");
  EXPECT_EQ(WireCodeOf(status), v1::APPROVAL_STALE) << status;  // RENAME_NOREPLACE
  EXPECT_EQ(testing::ReadFileOrMissing(tmp_.Child("n")), "theirs");
  EXPECT_THAT(testing::SortedNames(tmp_.path()), ::testing::UnorderedElementsAre("t", "n"));
}

TEST_F(AtomicReplaceTest, ModeBitsAreOrdinaryOnly) {
  ReplaceOptions options;
  options.mode = 04755;
  ASSERT_THAT(ReplaceAtomically(dir_.get(), "t", "x", Current("t"), options, "t"),
              testing::IsOk());
  struct stat st;
  ASSERT_EQ(::stat(tmp_.Child("t").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
}

}  // namespace
}  // namespace airlock::broker
