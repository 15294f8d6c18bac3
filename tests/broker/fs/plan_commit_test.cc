// The file tools' plan/commit binding on a real tree: a plan describes the target and its
// parent, a commit crosses a fence only with permission, and anything bound that changes
// between plan and commit makes the commit stale. Every case runs with openat2 and with the
// O_NOFOLLOW component walk.
#include "broker/fs/file_tools.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <set>
#include <string>

#include "absl/strings/escaping.h"
#include "broker/fs/beneath.h"
#include "broker/fs/digest.h"
#include "broker/wire_error.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/broker/fs/file_tools_fixture.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker {
namespace {

using ::testing::HasSubstr;

class PlanCommitTest : public FileToolsTest {
 protected:
  MutationPlan PlanWriteOrDie(const std::string& path, const std::string& content) {
    v1::WriteRequest request;
    request.set_path(path);
    request.set_content(content);
    auto plan = files_->PlanWrite(request);
    EXPECT_THAT(plan, testing::IsOk());
    return plan.ok() ? *plan : MutationPlan();
  }
};

TEST_P(PlanCommitTest, APlanDescribesTheTargetAndItsParent) {
  MutationPlan plan = PlanWriteOrDie("link_in", "new");
  EXPECT_EQ(plan.tool, "write");
  EXPECT_EQ(plan.canonical_path, ws_ + "/dir/b.txt");
  EXPECT_EQ(plan.target_class, TargetClass::kInsideRoots);
  EXPECT_TRUE(plan.target.exists);
  EXPECT_EQ(plan.target.content_sha256, Sha256Hex("beta"));
  EXPECT_EQ(plan.old_content, "beta");
  EXPECT_EQ(plan.new_content_sha256, Sha256Hex("new"));
  struct stat st;
  ASSERT_EQ(::stat((ws_ + "/dir").c_str(), &st), 0);
  EXPECT_EQ(plan.parent.inode, static_cast<uint64_t>(st.st_ino));

  MutationPlan fresh = PlanWriteOrDie("x/y/z.txt", "new");
  EXPECT_FALSE(fresh.target.exists);
  EXPECT_EQ(fresh.directories_to_create,
            (std::vector<std::string>{ws_ + "/x", ws_ + "/x/y"}));
  ASSERT_EQ(::stat(ws_.c_str(), &st), 0);
  EXPECT_EQ(fresh.parent.inode, static_cast<uint64_t>(st.st_ino));

  MutationPlan outside = PlanWriteOrDie("link_out", "new");
  EXPECT_EQ(outside.target_class, TargetClass::kOutsideRoots);
  MutationPlan hook = PlanWriteOrDie("hook_link", "new");
  EXPECT_EQ(hook.target_class, TargetClass::kProtected);
  EXPECT_EQ(hook.rule, "protected:.git/hooks");
}

TEST_P(PlanCommitTest, CommitCrossesAFenceOnlyWithPermission) {
  MutationPlan outside = PlanWriteOrDie("link_out", "approved");
  EXPECT_EQ(WireCodeOf(files_->Commit(outside, {}).status()), v1::OUTSIDE_SANDBOX);
  ASSERT_THAT(files_->Commit(outside, {.allow_outside = true}), testing::IsOk());
  EXPECT_EQ(testing::ReadFileOrMissing(out_ + "/o.txt"), "approved");

  MutationPlan fresh_outside = PlanWriteOrDie(out_ + "/new/dir/f", "approved");
  ASSERT_THAT(files_->Commit(fresh_outside, {.allow_outside = true}), testing::IsOk());
  EXPECT_EQ(testing::ReadFileOrMissing(out_ + "/new/dir/f"), "approved");

  MutationPlan hook = PlanWriteOrDie("hook_link", "approved");
  EXPECT_EQ(WireCodeOf(files_->Commit(hook, {.allow_outside = true}).status()),
            v1::PROTECTED_PATH);
  ASSERT_THAT(files_->Commit(hook, {.allow_protected = true}), testing::IsOk());
  EXPECT_EQ(testing::ReadFileOrMissing(ws_ + "/.git/hooks/pre-commit"), "approved");
  ExpectNoTempFiles();
}

TEST_P(PlanCommitTest, AnythingBoundThatChangesMakesTheCommitStale) {
  struct Change {
    const char* name;
    std::function<void()> apply;
  };
  const std::string target = ws_ + "/dir/b.txt";
  const Change changes[] = {
      {"content rewritten in place",
       [&] { testing::WriteFileOrDie(target, "BETA"); }},
      {"same content, another inode",
       [&] {
         testing::WriteFileOrDie(ws_ + "/dir/other", "beta");
         ASSERT_EQ(::rename((ws_ + "/dir/other").c_str(), target.c_str()), 0);
       }},
      {"parent directory replaced by a copy",
       [&] {
         ASSERT_EQ(::rename((ws_ + "/dir").c_str(), (ws_ + "/dir_old").c_str()), 0);
         ASSERT_EQ(::mkdir((ws_ + "/dir").c_str(), 0755), 0);
         testing::WriteFileOrDie(target, "beta");
       }},
      {"parent directory replaced by a link",
       [&] {
         ASSERT_EQ(::rename((ws_ + "/dir").c_str(), (ws_ + "/dir_old").c_str()), 0);
         Link("dir_old", ws_ + "/dir");
       }},
      {"target replaced by a link to the same file",
       [&] {
         ASSERT_EQ(::rename(target.c_str(), (ws_ + "/dir/real").c_str()), 0);
         Link("real", target);
       }},
      {"target removed", [&] { ASSERT_EQ(::unlink(target.c_str()), 0); }},
  };
  for (const Change& change : changes) {
    SCOPED_TRACE(change.name);
    MutationPlan plan = PlanWriteOrDie("dir/b.txt", "planned");
    change.apply();
    const std::set<std::string> before = TreeOf(ws_);
    auto result = files_->Commit(plan, {});
    EXPECT_EQ(WireCodeOf(result.status()), v1::APPROVAL_STALE) << result.status();
    EXPECT_THAT(std::string(result.status().message()), HasSubstr("nothing was written"));
    EXPECT_EQ(TreeOf(ws_), before);
    for (const std::string& entry : TreeOf(ws_)) {
      EXPECT_NE(testing::ReadFileOrMissing(ws_ + "/" + entry), "planned") << entry;
    }
    // Restore the fixture for the next change.
    testing::RemoveTree(ws_ + "/dir");
    testing::RemoveTree(ws_ + "/dir_old");
    ASSERT_EQ(::mkdir((ws_ + "/dir").c_str(), 0755), 0);
    testing::WriteFileOrDie(target, "beta");
  }
  ExpectNoTempFiles();
}

TEST_P(PlanCommitTest, AnEntryAppearingWhereThePlanSawNoneIsStale) {
  MutationPlan plan = PlanWriteOrDie("brand_new", "planned");
  testing::WriteFileOrDie(ws_ + "/brand_new", "theirs");
  EXPECT_EQ(WireCodeOf(files_->Commit(plan, {}).status()), v1::APPROVAL_STALE);
  EXPECT_EQ(testing::ReadFileOrMissing(ws_ + "/brand_new"), "theirs");

  MutationPlan deep = PlanWriteOrDie("p/q/r", "planned");
  ASSERT_EQ(::mkdir((ws_ + "/p").c_str(), 0755), 0);
  EXPECT_EQ(WireCodeOf(files_->Commit(deep, {}).status()), v1::APPROVAL_STALE);
  EXPECT_EQ(testing::ReadFileOrMissing(ws_ + "/p/q/r"), "<missing>");

  // A plan binds the canonical target: re-pointing the link it came through afterwards does
  // not redirect the write.
  MutationPlan dangling = PlanWriteOrDie("dangling_in", "planned");
  ASSERT_EQ(::unlink((ws_ + "/dangling_in").c_str()), 0);
  Link("../out/new_out.txt", ws_ + "/dangling_in");  // now points outside
  auto result = files_->Commit(dangling, {.allow_outside = true});
  ASSERT_THAT(result, testing::IsOk());
  EXPECT_EQ(result->canonical_path(), ws_ + "/new_in.txt");
  EXPECT_EQ(testing::ReadFileOrMissing(ws_ + "/new_in.txt"), "planned");
  ExpectOutsideAndHomeUntouched();
}

TEST_P(PlanCommitTest, AnAlteredPlanIsNotCommitted) {
  MutationPlan plan = PlanWriteOrDie("a.txt", "planned");
  plan.new_content = "something else";
  EXPECT_EQ(WireCodeOf(files_->Commit(plan, {}).status()), v1::APPROVAL_STALE);
  EXPECT_EQ(testing::ReadFileOrMissing(ws_ + "/a.txt"), "alpha");
}

INSTANTIATE_TEST_SUITE_P(Walks, PlanCommitTest,
                         ::testing::Values(WalkMode::kAuto, WalkMode::kComponentWalk), WalkName);

}  // namespace
}  // namespace airlock::broker
