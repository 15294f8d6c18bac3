// The mount points of shell masks (mask_mount_points.h): made, held, shared between
// processes, released, and removed in the background — never through a link.
#include "broker/exec/mask_mount_points.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "platform/base/scoped_fd.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker {
namespace {

using ::airlock::testing::TempDir;
using ::airlock::testing::UserXattrsWork;
using ::airlock::testing::WriteFileOrDie;

TEST(MaskMountPointsTest, ReleaseRemovesOnlyWhatTheLastUserLeft) {
  TempDir root;
  const std::string dir = root.Child(".vscode");
  const std::string file = root.Child(".envrc");
  const std::vector<linux_sandbox::CoveredPath> masks = {{dir, true}, {file, false}};
  AcquireMasks(masks);
  EXPECT_EQ(::access(dir.c_str(), F_OK), 0) << "the mount points are made before bwrap runs";
  EXPECT_EQ(::access(file.c_str(), F_OK), 0);
  AcquireMasks(masks);
  ReleaseMasks(masks);
  EXPECT_EQ(::access(dir.c_str(), F_OK), 0) << "still used by the other call";
  EXPECT_EQ(::access(file.c_str(), F_OK), 0);
  ReleaseMasks(masks);
  EXPECT_NE(::access(dir.c_str(), F_OK), 0);
  EXPECT_NE(::access(file.c_str(), F_OK), 0);
  // A file someone filled in is not ours to delete.
  WriteFileOrDie(file, "user content");
  AcquireMasks({{file, false}});
  ReleaseMasks({{file, false}});
  EXPECT_EQ(::access(file.c_str(), F_OK), 0);
}

TEST(MaskMountPointsTest, ReleasedMaskDirectoriesLeaveAtOnceAndAreRemovedInTheBackground) {
  TempDir root;
  WriteFileOrDie(root.Child("keep"), "k");
  const std::vector<linux_sandbox::CoveredPath> masks = {
      {root.Child(".vscode"), true}, {root.Child(".git"), true}, {root.Child(".envrc"), false}};
  AcquireMasks(masks);
  ReleaseMasks(masks);
  // The protected names are gone when ReleaseMasks returns ...
  EXPECT_NE(::access(root.Child(".vscode").c_str(), F_OK), 0);
  EXPECT_NE(::access(root.Child(".git").c_str(), F_OK), 0);
  EXPECT_NE(::access(root.Child(".envrc").c_str(), F_OK), 0);
  // ... and, once the background removals are done, so is everything else.
  DrainMaskRemovals();
  EXPECT_EQ(testing::SortedNames(root.path()), std::vector<std::string>{"keep"});
}

// The directories of one release leave through one aside directory beside them, so that the
// parent sees one removal (and its lock held for one discard) instead of one per mask.
TEST(MaskMountPointsTest, TheDirectoriesOfOneReleaseLeaveTogetherThroughOneAsideDirectory) {
  TempDir root;
  const std::vector<linux_sandbox::CoveredPath> masks = {{root.Child(".claude"), true},
                                                         {root.Child(".git"), true},
                                                         {root.Child(".vscode"), true}};
  AcquireMasks(masks);
  SetMaskRemovalHoldOffForTesting(std::chrono::seconds(60));
  MaskSetupScope setup;  // holds the background rmdirs off while we look
  ReleaseMasks(masks);
  const std::vector<std::string> left = testing::SortedNames(root.path());
  ASSERT_EQ(left.size(), 1u);
  EXPECT_TRUE(IsMaskAsideName(left[0])) << left[0];
  const std::string together = root.Child(left[0]);
  const std::vector<std::string> inside = testing::SortedNames(together);
  EXPECT_EQ(inside.size(), 3u);
  for (const std::string& name : inside) EXPECT_TRUE(IsMaskAsideName(name)) << name;
  EXPECT_TRUE(IsLeftAside(together));
  setup.End();
  DrainMaskRemovals();
  SetMaskRemovalHoldOffForTesting(std::chrono::milliseconds(200));
  EXPECT_TRUE(testing::SortedNames(root.path()).empty());
}

// While a call of this process lays out its sandbox, background removals wait (an rmdir
// waiting for a discard would hold the workspace's lock the layout needs); they go on when it
// is done.
TEST(MaskMountPointsTest, RemovalsWaitWhileACallLaysOutItsSandbox) {
  TempDir root;
  const std::vector<linux_sandbox::CoveredPath> masks = {{root.Child(".claude"), true},
                                                         {root.Child(".idea"), true}};
  AcquireMasks(masks);
  SetMaskRemovalHoldOffForTesting(std::chrono::seconds(60));
  MaskSetupScope setup;
  ReleaseMasks(masks);
  ::usleep(50 * 1000);  // far longer than two rmdirs; far shorter than the hold-off bound
  EXPECT_EQ(testing::SortedNames(root.path()).size(), 1u) << "removed during the layout";
  setup.End();
  DrainMaskRemovals();
  SetMaskRemovalHoldOffForTesting(std::chrono::milliseconds(200));
  EXPECT_TRUE(testing::SortedNames(root.path()).empty());
}

// A sandbox can plant an empty entry carrying the mark and hold it exclusively: joining it must
// not wait (under the registry every call needs), or one sandbox would stall the broker. The
// join is given up; the entry is not ours, and nothing removes it.
TEST(MaskMountPointsTest, JoiningAMarkedEntryHeldExclusivelyDoesNotWait) {
  TempDir root;
  if (!UserXattrsWork(root.path())) GTEST_SKIP() << "no user extended attributes here";
  const std::string planted = root.Child(".vscode");
  ASSERT_EQ(::mkdir(planted.c_str(), 0755), 0);
  ASSERT_EQ(::setxattr(planted.c_str(), "user.airlock.mask", "1", 1, 0), 0);
  ScopedFd locker(::open(planted.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(locker);
  ASSERT_EQ(::flock(locker.get(), LOCK_EX), 0);
  const std::vector<linux_sandbox::CoveredPath> masks = {{planted, true}};
  std::promise<void> done;
  std::future<void> finished = done.get_future();
  std::thread([&masks, &done] {
    AcquireMasks(masks);
    done.set_value();
  }).detach();
  ASSERT_EQ(finished.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "AcquireMasks waited for the planted lock";
  ReleaseMasks(masks);
  DrainMaskRemovals();
  EXPECT_EQ(::access(planted.c_str(), F_OK), 0) << "not ours: left where it is";
}

// A sandbox can swap a directory of its workspace for a link to anywhere while the broker
// makes or removes a mask's mount point: nothing outside may be made, renamed or removed.
TEST(MaskMountPointsTest, MountPointsAreNeverMadeOrRemovedThroughALink) {
  TempDir root;
  TempDir victim;
  ASSERT_EQ(::mkdir(victim.Child(".airlock").c_str(), 0700), 0);
  WriteFileOrDie(victim.Child(".airlock/audit.key"), "key");
  ASSERT_EQ(::mkdir(root.Child("real").c_str(), 0755), 0);
  ASSERT_EQ(::symlink(victim.path().c_str(), root.Child("sub").c_str()), 0);
  // Made through a link: refused (no hold), nothing made outside.
  const std::vector<linux_sandbox::CoveredPath> through_link = {
      {root.Child("sub/.envrc"), true}, {root.Child("sub/.airlock"), true}};
  AcquireMasks(through_link);
  ReleaseMasks(through_link);
  DrainMaskRemovals();
  EXPECT_EQ(testing::SortedNames(victim.path()), std::vector<std::string>{".airlock"});
  // Made for real, then the directory is swapped for the link before the release: the
  // release does not follow it (and leaves the real mount point, which the sandbox moved).
  ASSERT_EQ(::unlink(root.Child("sub").c_str()), 0);
  ASSERT_EQ(::rename(root.Child("real").c_str(), root.Child("sub").c_str()), 0);
  const std::vector<linux_sandbox::CoveredPath> masks = {{root.Child("sub/.airlock"), true}};
  AcquireMasks(masks);
  ASSERT_EQ(::access(root.Child("sub/.airlock").c_str(), F_OK), 0);
  ASSERT_EQ(::rename(root.Child("sub").c_str(), root.Child("moved").c_str()), 0);
  ASSERT_EQ(::symlink(victim.path().c_str(), root.Child("sub").c_str()), 0);
  ReleaseMasks(masks);
  DrainMaskRemovals();
  EXPECT_EQ(testing::SortedNames(victim.path()), std::vector<std::string>{".airlock"});
  EXPECT_EQ(testing::ReadFileOrMissing(victim.Child(".airlock/audit.key")), "key");
}

}  // namespace
}  // namespace airlock::broker
