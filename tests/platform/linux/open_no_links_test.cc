#include "platform/linux/open_no_links.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace airlock::linux_sandbox {
namespace {

using testing::TempDir;
using testing::WriteFileOrDie;

// Both ways of walking must hold the same line.
class OpenNoLinksTest : public ::testing::TestWithParam<NoLinksWalk> {
 protected:
  void SetUp() override {
    ASSERT_EQ(::mkdir(dir_.Child("real").c_str(), 0755), 0);
    WriteFileOrDie(dir_.Child("real/file"), "content");
    ASSERT_EQ(::symlink(dir_.Child("real").c_str(), dir_.Child("link").c_str()), 0);
    ASSERT_EQ(::symlink(dir_.Child("real/file").c_str(), dir_.Child("real/file-link").c_str()),
              0);
  }

  // The open's errno, or 0 when it succeeded.
  int OpenError(const std::string& path, int flags) {
    errno = 0;
    ScopedFd fd = OpenNoLinks(path, flags, GetParam());
    return fd ? 0 : errno;
  }

  TempDir dir_;
};

TEST_P(OpenNoLinksTest, OpensPathsWithoutLinks) {
  ScopedFd dir = OpenNoLinks(dir_.Child("real"), O_PATH | O_DIRECTORY, GetParam());
  ASSERT_TRUE(dir);
  struct stat opened, named;
  ASSERT_EQ(::fstat(dir.get(), &opened), 0);
  ASSERT_EQ(::stat(dir_.Child("real").c_str(), &named), 0);
  EXPECT_EQ(opened.st_ino, named.st_ino);
  ScopedFd file = OpenNoLinks(dir_.Child("real/file"), O_RDONLY, GetParam());
  ASSERT_TRUE(file);
  char buffer[16] = {};
  EXPECT_EQ(::read(file.get(), buffer, sizeof(buffer)), 7);
  EXPECT_TRUE(OpenNoLinks("/", O_PATH | O_DIRECTORY, GetParam()));
}

TEST_P(OpenNoLinksTest, RefusesALinkInAnyComponent) {
  EXPECT_NE(OpenError(dir_.Child("link"), O_PATH | O_DIRECTORY), 0) << "the last, a directory";
  EXPECT_NE(OpenError(dir_.Child("link/file"), O_RDONLY), 0) << "a middle one";
  EXPECT_NE(OpenError(dir_.Child("real/file-link"), O_RDONLY), 0) << "the last, a file";
  EXPECT_EQ(OpenError(dir_.Child("real/file-link"), O_PATH), ELOOP)
      << "O_PATH | O_NOFOLLOW alone would open the link itself";
}

TEST_P(OpenNoLinksTest, RefusesRelativePathsAndMissingOnes) {
  EXPECT_NE(OpenError(dir_.Child("missing"), O_PATH), 0);
  if (GetParam() == NoLinksWalk::kComponentWalk) {
    EXPECT_EQ(OpenError("relative/path", O_PATH), EINVAL);
  }
}

INSTANTIATE_TEST_SUITE_P(Walks, OpenNoLinksTest,
                         ::testing::Values(NoLinksWalk::kAuto, NoLinksWalk::kComponentWalk));

}  // namespace
}  // namespace airlock::linux_sandbox
