// Table-driven cases for the canonicalization of untrusted paths.
#include "broker/fs/path_resolver.h"

#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "broker/wire_error.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker {
namespace {

using ::testing::HasSubstr;

class PathResolverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ws_ = base_.Child("ws");
    out_ = base_.Child("out");
    ASSERT_EQ(::mkdir(ws_.c_str(), 0755), 0);
    ASSERT_EQ(::mkdir(out_.c_str(), 0755), 0);
    ASSERT_EQ(::mkdir((ws_ + "/dir").c_str(), 0755), 0);
    testing::WriteFileOrDie(ws_ + "/a.txt", "a");
    testing::WriteFileOrDie(ws_ + "/dir/b.txt", "b");
    testing::WriteFileOrDie(out_ + "/o.txt", "o");
    Link("dir/b.txt", ws_ + "/link_in");
    Link(out_ + "/o.txt", ws_ + "/link_out");
    Link("new_in.txt", ws_ + "/dangling_in");
    Link("../out/new_out.txt", ws_ + "/dangling_out");
    Link("chain2", ws_ + "/chain1");
    Link("chain3", ws_ + "/chain2");
    Link("dir", ws_ + "/chain3");
    Link("loop2", ws_ + "/loop1");
    Link("loop1", ws_ + "/loop2");
    Link("self", ws_ + "/self");
    Link(ws_, base_.Child("wslink"));
    Link("missing_dir/../a.txt", ws_ + "/dotdot_link");
  }
  static void Link(const std::string& target, const std::string& path) {
    ASSERT_EQ(::symlink(target.c_str(), path.c_str()), 0) << path;
  }

  testing::TempDir base_;
  std::string ws_;
  std::string out_;
};

struct Case {
  std::string requested;     // "$B" is replaced by the temp base directory
  std::string canonical;     // expected, "$B"-relative; empty when an error is expected
  bool exists = true;
  bool trailing_slash = false;
};

std::string Expand(std::string text, const std::string& base) {
  for (size_t at = text.find("$B"); at != std::string::npos; at = text.find("$B")) {
    text.replace(at, 2, base);
  }
  return text;
}

TEST_F(PathResolverTest, ResolvesEveryKindOfPath) {
  const Case cases[] = {
      {"a.txt", "$B/ws/a.txt"},
      {"$B/ws/a.txt", "$B/ws/a.txt"},
      {"./a.txt", "$B/ws/a.txt"},
      {"dir/../a.txt", "$B/ws/a.txt"},
      {"dir//b.txt", "$B/ws/dir/b.txt"},
      {"$B//ws///dir/./b.txt", "$B/ws/dir/b.txt"},
      {"dir/", "$B/ws/dir", true, true},
      {"../out/o.txt", "$B/out/o.txt"},
      {"../../../../../../../../..", "/"},
      {"link_in", "$B/ws/dir/b.txt"},
      {"link_out", "$B/out/o.txt"},
      {"dangling_in", "$B/ws/new_in.txt", false},
      {"dangling_out", "$B/out/new_out.txt", false},
      {"chain1/b.txt", "$B/ws/dir/b.txt"},
      {"$B/wslink/a.txt", "$B/ws/a.txt"},
      {"$B/wslink/../out/o.txt", "$B/out/o.txt"},  // ".." applies to the link's target
      {"new/deep/file", "$B/ws/new/deep/file", false},
      {"new/../a.txt", "$B/ws/a.txt"},              // lexical after a missing component
      {"dotdot_link", "$B/ws/a.txt"},
      {"~/x", "$B/ws/~/x", false},                  // `~` is an ordinary name
      {"~", "$B/ws/~", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.requested);
    auto resolved = ResolvePath(Expand(c.requested, base_.path()), ws_, {ws_});
    ASSERT_THAT(resolved, testing::IsOk());
    EXPECT_EQ(resolved->canonical, Expand(c.canonical, base_.path()));
    EXPECT_EQ(resolved->exists(), c.exists);
    EXPECT_EQ(resolved->trailing_slash, c.trailing_slash);
  }
}

TEST_F(PathResolverTest, CountsTheExistingPrefix) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ResolvedPath resolved, ResolvePath("dir/x/y/z", ws_));
  const size_t ws_depth = resolved.components.size() - 4;
  EXPECT_EQ(resolved.existing_components, ws_depth + 1);  // .../ws/dir exists
}

TEST_F(PathResolverTest, RefusesMalformedAndHostilePaths) {
  struct Bad {
    std::string requested;
    std::string message;
  };
  const Bad cases[] = {
      {"", "empty path"},
      {std::string("a\0b", 3), "NUL byte"},
      {"dir\\b.txt", "backslash"},
      {std::string(300, 'x'), "component of 300 bytes"},
      {"a/" + std::string(300, 'y') + "/b", "component of 300 bytes"},
      {std::string(5000, '/'), "path of 5000 bytes"},
      {"loop1", "symbolic links (a loop)"},
      {"loop1/x", "symbolic links (a loop)"},
      {"self", "symbolic links (a loop)"},
      {"a.txt/x", "is not a directory"},
      {"a.txt/.", "is not a directory"},
      {"a.txt/..", "is not a directory"},
  };
  for (const Bad& c : cases) {
    SCOPED_TRACE(c.message);
    auto resolved = ResolvePath(c.requested, ws_, {ws_});
    ASSERT_FALSE(resolved.ok()) << resolved->canonical;
    EXPECT_EQ(WireCodeOf(resolved.status()), v1::INVALID_ARGUMENT);
    EXPECT_THAT(std::string(resolved.status().message()), HasSubstr(c.message));
  }
}

TEST_F(PathResolverTest, ALoopIsNamedWhereItWasFound) {
  auto resolved = ResolvePath("loop1", ws_);
  ASSERT_FALSE(resolved.ok());
  EXPECT_THAT(std::string(resolved.status().message()), HasSubstr(ws_ + "/loop"));
}

TEST_F(PathResolverTest, FortyHopsAreAllowedFortyOneAreNot) {
  // c0 -> c1 -> ... -> c40 -> a.txt: 41 links.
  for (int i = 0; i < 41; ++i) {
    const std::string target = i == 40 ? "a.txt" : "c" + std::to_string(i + 1);
    Link(target, ws_ + "/c" + std::to_string(i));
  }
  EXPECT_THAT(ResolvePath("c1", ws_), testing::IsOk());
  auto too_many = ResolvePath("c0", ws_);
  EXPECT_EQ(WireCodeOf(too_many.status()), v1::INVALID_ARGUMENT);
}

TEST(PathIsWithinTest, ComparesWholeComponents) {
  EXPECT_TRUE(PathIsWithin("/a/b", "/a"));
  EXPECT_TRUE(PathIsWithin("/a", "/a"));
  EXPECT_FALSE(PathIsWithin("/ab", "/a"));
  EXPECT_TRUE(PathIsWithin("/x", "/"));
  EXPECT_FALSE(PathIsWithin("/a", "/a/b"));
}

}  // namespace
}  // namespace airlock::broker
