#include "broker/fs/temp_sweep.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"
#include "platform/base/scoped_fd.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker {
namespace {

TEST(TempSweepTest, RemovesOnlyTempFilesAndFollowsNoLink) {
  testing::TempDir ws;
  testing::TempDir outside;
  ASSERT_EQ(::mkdir(ws.Child("a").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(ws.Child("a/b").c_str(), 0755), 0);
  testing::WriteFileOrDie(ws.Child(".airlock-tmp-0123456789abcdef"), "debris");
  testing::WriteFileOrDie(ws.Child("a/b/.airlock-tmp-feedfacefeedface"), "debris");
  testing::WriteFileOrDie(ws.Child("a/keep.txt"), "keep");
  testing::WriteFileOrDie(ws.Child("a/airlock-tmp-not-ours"), "keep");
  ASSERT_EQ(::mkdir(ws.Child("a/.airlock-tmp-dir").c_str(), 0755), 0);  // not a file: kept
  testing::WriteFileOrDie(outside.Child(".airlock-tmp-0000000000000000"), "not ours");
  ASSERT_EQ(::symlink(outside.path().c_str(), ws.Child("out").c_str()), 0);

  ScopedFd root(::open(ws.path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  AIRLOCK_ASSERT_OK_AND_ASSIGN(SweepReport report, SweepTemporaryFiles(root.get()));
  EXPECT_EQ(report.removed, 2u);
  EXPECT_FALSE(report.truncated);
  EXPECT_EQ(testing::ReadFileOrMissing(ws.Child(".airlock-tmp-0123456789abcdef")), "<missing>");
  EXPECT_EQ(testing::ReadFileOrMissing(ws.Child("a/b/.airlock-tmp-feedfacefeedface")),
            "<missing>");
  EXPECT_EQ(testing::ReadFileOrMissing(ws.Child("a/keep.txt")), "keep");
  EXPECT_EQ(testing::ReadFileOrMissing(ws.Child("a/airlock-tmp-not-ours")), "keep");
  EXPECT_EQ(testing::ReadFileOrMissing(outside.Child(".airlock-tmp-0000000000000000")),
            "not ours");
}

TEST(TempSweepTest, StopsAtTheDepthBound) {
  testing::TempDir ws;
  std::string path = ws.path();
  for (int depth = 0; depth <= kSweepMaxDepth + 1; ++depth) {
    path += "/d";
    ASSERT_EQ(::mkdir(path.c_str(), 0755), 0);
  }
  testing::WriteFileOrDie(path + "/.airlock-tmp-aaaaaaaaaaaaaaaa", "too deep");
  ScopedFd root(::open(ws.path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  AIRLOCK_ASSERT_OK_AND_ASSIGN(SweepReport report, SweepTemporaryFiles(root.get()));
  EXPECT_TRUE(report.truncated);
  EXPECT_EQ(report.removed, 0u);
}

}  // namespace
}  // namespace airlock::broker
