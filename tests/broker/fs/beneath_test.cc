// Descriptor walks never follow a link, with openat2 and with the component walk.
#include "broker/fs/beneath.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "platform/base/errno_status.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker {
namespace {

class BeneathTest : public ::testing::TestWithParam<WalkMode> {
 protected:
  void SetUp() override {
    ASSERT_EQ(::mkdir(tmp_.Child("d").c_str(), 0755), 0);
    testing::WriteFileOrDie(tmp_.Child("d/f"), "f");
    ASSERT_EQ(::symlink("d", tmp_.Child("dl").c_str()), 0);
    ASSERT_EQ(::symlink("f", tmp_.Child("d/fl").c_str()), 0);
    ASSERT_EQ(::symlink("/", tmp_.Child("slash").c_str()), 0);
    root_.reset(::open(tmp_.path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(root_.valid());
  }
  int ErrnoOpening(const std::vector<std::string>& components, int flags) {
    auto fd = OpenBeneath(root_.get(), components, flags, GetParam(), "test");
    return fd.ok() ? 0 : ErrnoOf(fd.status());
  }
  testing::TempDir tmp_;
  ScopedFd root_;
};

TEST_P(BeneathTest, OpensPlainPaths) {
  EXPECT_EQ(ErrnoOpening({"d", "f"}, O_RDONLY), 0);
  EXPECT_EQ(ErrnoOpening({"d"}, O_RDONLY | O_DIRECTORY), 0);
  EXPECT_EQ(ErrnoOpening({}, O_RDONLY | O_DIRECTORY), 0);
}

TEST_P(BeneathTest, RefusesEveryLink) {
  EXPECT_NE(ErrnoOpening({"dl", "f"}, O_RDONLY), 0);        // a link in the middle
  EXPECT_NE(ErrnoOpening({"d", "fl"}, O_RDONLY), 0);        // a link at the end
  EXPECT_NE(ErrnoOpening({"d", "fl"}, O_PATH), 0);          // even for O_PATH
  EXPECT_NE(ErrnoOpening({"dl"}, O_PATH | O_DIRECTORY), 0);
  EXPECT_NE(ErrnoOpening({"slash", "etc"}, O_PATH | O_DIRECTORY), 0);
}

TEST_P(BeneathTest, RefusesComponentsThatAreNotNames) {
  EXPECT_EQ(ErrnoOpening({".."}, O_PATH), EINVAL);
  EXPECT_EQ(ErrnoOpening({"."}, O_PATH), EINVAL);
  EXPECT_EQ(ErrnoOpening({"d/f"}, O_PATH), EINVAL);
  EXPECT_EQ(ErrnoOpening({""}, O_PATH), EINVAL);
}

// While a thread swaps a directory with a link to outside as fast as it can, every open that
// succeeds reached the inside file, never the outside one.
TEST_P(BeneathTest, ASwappedInLinkMakesTheOpenFailNeverLeadOutside) {
  testing::TempDir outside;
  testing::WriteFileOrDie(tmp_.Child("d/x"), "inside");
  testing::WriteFileOrDie(outside.Child("x"), "OUTSIDE");
  ASSERT_EQ(::symlink(outside.path().c_str(), tmp_.Child("alt").c_str()), 0);
  std::atomic<bool> stop{false};
  std::thread swapper([&] {
    const std::string d = tmp_.Child("d");
    const std::string alt = tmp_.Child("alt");
    while (!stop.load(std::memory_order_relaxed)) {
      ::renameat2(AT_FDCWD, d.c_str(), AT_FDCWD, alt.c_str(), RENAME_EXCHANGE);
    }
  });
  int opened = 0;
  int refused = 0;
  for (int i = 0; i < 100000; ++i) {
    auto fd = OpenBeneath(root_.get(), {"d", "x"}, O_RDONLY, GetParam(), "d/x");
    if (!fd.ok()) {
      ++refused;
      continue;
    }
    ++opened;
    char buffer[16] = {};
    const ssize_t n = ::pread(fd->get(), buffer, sizeof(buffer) - 1, 0);
    ASSERT_EQ(std::string(buffer, n > 0 ? static_cast<size_t>(n) : 0), "inside");
  }
  stop = true;
  swapper.join();
  EXPECT_GT(opened, 0);
  EXPECT_GT(refused, 0);
}

INSTANTIATE_TEST_SUITE_P(Walks, BeneathTest,
                         ::testing::Values(WalkMode::kAuto, WalkMode::kComponentWalk));

}  // namespace
}  // namespace airlock::broker
