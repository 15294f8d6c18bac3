#include "profiles/protected_paths.h"

#include "gtest/gtest.h"

namespace airlock::profiles {
namespace {

TEST(ProtectedPathsTest, MatchesEveryEntryAtAnyDepth) {
  for (const std::string& entry : ProtectedRelativePaths()) {
    EXPECT_EQ(MatchProtected(entry), "protected:" + entry);
    EXPECT_EQ(MatchProtected("sub/repo/" + entry), "protected:" + entry);
    EXPECT_EQ(MatchProtected(entry + "/inner/file"), "protected:" + entry);
  }
}

TEST(ProtectedPathsTest, LeavesOrdinaryPathsAlone) {
  for (const char* path : {"src/main.cc", ".git", ".git/objects/ab", ".gitignore", "bashrc",
                           "x.bashrc", ".git/hooksX", "hooks", ".vscodeX/settings.json", ""}) {
    EXPECT_EQ(MatchProtected(path), "") << path;
  }
}

TEST(ProtectedPathsTest, MatchesWholeComponentsOnly) {
  EXPECT_EQ(MatchProtected("a/.git/hooks/pre-commit"), "protected:.git/hooks");
  EXPECT_EQ(MatchProtected("a.git/hooks"), "");
}

}  // namespace
}  // namespace airlock::profiles
