#include "platform/base/canonical_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock {
namespace {

using ::airlock::testing::TempDir;

TEST(CanonicalPathTest, ExistingPathsAreResolvedThroughLinksAndDots) {
  TempDir dir;
  ASSERT_EQ(::mkdir(dir.Child("real").c_str(), 0755), 0);
  ASSERT_EQ(::symlink(dir.Child("real").c_str(), dir.Child("link").c_str()), 0);
  char real[4096];
  ASSERT_NE(::realpath(dir.Child("real").c_str(), real), nullptr);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::string canonical,
                               CanonicalMaybeMissing(dir.Child("link/./"), "/unused"));
  EXPECT_EQ(canonical, real);
}

TEST(CanonicalPathTest, TheMissingRestIsAppendedToTheResolvedPrefix) {
  TempDir dir;
  ASSERT_EQ(::mkdir(dir.Child("real").c_str(), 0755), 0);
  ASSERT_EQ(::symlink(dir.Child("real").c_str(), dir.Child("link").c_str()), 0);
  char real[4096];
  ASSERT_NE(::realpath(dir.Child("real").c_str(), real), nullptr);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::string canonical,
                               CanonicalMaybeMissing(dir.Child("link/secrets/api.key"), "/"));
  EXPECT_EQ(canonical, std::string(real) + "/secrets/api.key");
}

TEST(CanonicalPathTest, RelativePathsAreTakenAgainstTheBase) {
  TempDir dir;
  char real[4096];
  ASSERT_NE(::realpath(dir.path().c_str(), real), nullptr);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::string canonical, CanonicalMaybeMissing("secrets", dir.path()));
  EXPECT_EQ(canonical, std::string(real) + "/secrets");
  EXPECT_FALSE(CanonicalMaybeMissing("secrets", "").ok());
  EXPECT_FALSE(CanonicalMaybeMissing("secrets", "relative/base").ok());
}

TEST(CanonicalPathTest, DotsInTheMissingRestAreRefused) {
  TempDir dir;
  EXPECT_FALSE(CanonicalMaybeMissing(dir.Child("missing/../x"), "/").ok());
  EXPECT_FALSE(CanonicalMaybeMissing(dir.Child("missing/./x"), "/").ok());
  EXPECT_FALSE(CanonicalMaybeMissing("", "/").ok());
}

}  // namespace
}  // namespace airlock
