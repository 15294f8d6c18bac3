#include "broker/exec/protection_plan.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "platform/base/scoped_fd.h"
#include "profiles/protected_paths.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker {
namespace {

using ::airlock::testing::IsOk;
using ::airlock::testing::StatusIs;
using ::airlock::testing::TempDir;
using ::airlock::testing::UserXattrsWork;
using ::airlock::testing::WriteFileOrDie;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::UnorderedElementsAre;

bool HasMask(const ProtectionPlan& plan, const std::string& path, bool directory) {
  return std::any_of(plan.masks.begin(), plan.masks.end(), [&](const auto& mask) {
    return mask.path == path && mask.directory == directory;
  });
}
bool HasAnyMask(const ProtectionPlan& plan, const std::string& path) {
  return HasMask(plan, path, true) || HasMask(plan, path, false);
}

TEST(ProtectionPlanTest, EmptyWorkspaceMasksEveryTopLevelName) {
  TempDir root;
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ProtectionPlan plan, PlanProtection({root.path()}, {}));
  // .git is missing: the whole .git is masked (a directory), not .git/hooks.
  EXPECT_TRUE(HasMask(plan, root.Child(".git"), true));
  EXPECT_FALSE(HasAnyMask(plan, root.Child(".git/hooks")));
  EXPECT_TRUE(HasMask(plan, root.Child(".vscode"), true));
  // Directories, which `git add -A` in the sandbox ignores (an empty file would be committed).
  EXPECT_TRUE(HasMask(plan, root.Child(".bashrc"), true));
  EXPECT_TRUE(HasMask(plan, root.Child(".mcp.json"), true));
  EXPECT_TRUE(HasMask(plan, root.Child(".gitconfig"), true));
  EXPECT_TRUE(plan.read_only.empty());
  EXPECT_TRUE(plan.self_binds.empty());
  // In the sandbox's HOME, git reads .gitconfig: a file there (a directory breaks git).
  AIRLOCK_ASSERT_OK_AND_ASSIGN(plan, PlanProtection({root.path()}, {}, {}, root.path()));
  EXPECT_TRUE(HasMask(plan, root.Child(".gitconfig"), false));
  EXPECT_TRUE(HasMask(plan, root.Child(".bashrc"), true));
}

TEST(ProtectionPlanTest, ExistingEntriesAreReadOnlyAndTheirParentsSelfBound) {
  TempDir root;
  ASSERT_EQ(::mkdir(root.Child(".git").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(root.Child(".git/hooks").c_str(), 0755), 0);
  WriteFileOrDie(root.Child(".bashrc"), "x");
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ProtectionPlan plan, PlanProtection({root.path()}, {}));
  EXPECT_THAT(plan.read_only, Contains(root.Child(".git/hooks")));
  EXPECT_THAT(plan.read_only, Contains(root.Child(".bashrc")));
  EXPECT_THAT(plan.self_binds, Contains(root.Child(".git")));
  // .git/config is missing inside an existing .git: an empty file masks it.
  EXPECT_TRUE(HasMask(plan, root.Child(".git/config"), false));
  EXPECT_FALSE(HasAnyMask(plan, root.Child(".git")));
}

TEST(ProtectionPlanTest, NestedRepositoriesAreFoundAndMasked) {
  TempDir root;
  ASSERT_EQ(::mkdir(root.Child("a").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(root.Child("a/b").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(root.Child("a/b/.git").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(root.Child("a/b/.git/hooks").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(root.Child("plain").c_str(), 0755), 0);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ProtectionPlan plan, PlanProtection({root.path()}, {}));
  EXPECT_THAT(plan.read_only, Contains(root.Child("a/b/.git/hooks")));
  EXPECT_THAT(plan.self_binds, Contains(root.Child("a")));
  EXPECT_THAT(plan.self_binds, Contains(root.Child("a/b")));
  EXPECT_THAT(plan.self_binds, Contains(root.Child("a/b/.git")));
  // The nested repository's top gets masks; a plain directory does not.
  EXPECT_TRUE(HasMask(plan, root.Child("a/b/.envrc"), true));
  EXPECT_FALSE(HasAnyMask(plan, root.Child("plain/.envrc")));
}

TEST(ProtectionPlanTest, ExistingEntryDeepInAPlainDirectoryIsReadOnly) {
  TempDir root;
  ASSERT_EQ(::mkdir(root.Child("x").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(root.Child("x/.vscode").c_str(), 0755), 0);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ProtectionPlan plan, PlanProtection({root.path()}, {}));
  EXPECT_THAT(plan.read_only, Contains(root.Child("x/.vscode")));
  EXPECT_THAT(plan.self_binds, Contains(root.Child("x")));
}

TEST(ProtectionPlanTest, SymlinkedEntryCoversItsParent) {
  TempDir root;
  ASSERT_EQ(::mkdir(root.Child(".git").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(root.Child("elsewhere").c_str(), 0755), 0);
  ASSERT_EQ(::symlink("../elsewhere", root.Child(".git/hooks").c_str()), 0);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ProtectionPlan plan, PlanProtection({root.path()}, {}));
  EXPECT_THAT(plan.read_only, Contains(root.Child(".git")));
  // Nothing is planned inside the read-only parent (it could not be created there).
  EXPECT_FALSE(HasAnyMask(plan, root.Child(".git/config")));
  EXPECT_THAT(plan.self_binds, Not(Contains(root.Child(".git"))));
}

TEST(ProtectionPlanTest, GitDirectoriesProtectHooksAndConfig) {
  TempDir root;
  const std::string module = root.Child(".git");
  ASSERT_EQ(::mkdir(module.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((module + "/modules").c_str(), 0755), 0);
  const std::string gitdir = module + "/modules/sub";
  ASSERT_EQ(::mkdir(gitdir.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((gitdir + "/objects").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((gitdir + "/refs").c_str(), 0755), 0);
  WriteFileOrDie(gitdir + "/HEAD", "ref: refs/heads/main\n");
  WriteFileOrDie(gitdir + "/config", "[core]\n");
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ProtectionPlan plan, PlanProtection({root.path()}, {}));
  EXPECT_THAT(plan.read_only, Contains(gitdir + "/config"));
  EXPECT_TRUE(HasMask(plan, gitdir + "/hooks", true));
}

TEST(ProtectionPlanTest, ExplicitProtectedPaths) {
  TempDir root;
  ASSERT_EQ(::mkdir(root.Child("keep").c_str(), 0755), 0);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      ProtectionPlan plan,
      PlanProtection({root.path()}, {root.Child("keep"), root.Child("new/deep"), "/etc/outside"}));
  EXPECT_THAT(plan.read_only, Contains(root.Child("keep")));
  // A missing one is masked at its first missing component.
  EXPECT_TRUE(HasMask(plan, root.Child("new"), true));
  // Outside the writable roots there is nothing to do.
  EXPECT_THAT(plan.read_only, Not(Contains("/etc/outside")));
  // Protecting a path that contains the root makes the root read-only.
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ProtectionPlan whole,
                               PlanProtection({root.path()}, {root.path()}));
  EXPECT_THAT(whole.read_only, Contains(root.path()));
  EXPECT_TRUE(whole.masks.empty());
}

TEST(ProtectionPlanTest, ScanIsBounded) {
  TempDir root;
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(::mkdir(root.Child("d" + std::to_string(i)).c_str(), 0755), 0);
  }
  ProtectionLimits limits;
  limits.max_directories = 3;
  EXPECT_THAT(PlanProtection({root.path()}, {}, limits),
              StatusIs(absl::StatusCode::kUnavailable));
}

// What a killed broker left of a release (an aside directory holding the aside mask
// directories) is removed by the next scan; a mask directory in it that someone filled stays,
// and so does the aside directory holding it.
TEST(ProtectionPlanTest, TheScanSweepsAnAsideDirectoryOfMasksAndKeepsWhatWasWritten) {
  TempDir root;
  const std::string swept = root.Child(std::string(kMaskAsidePrefix) + "0123456789abcdef");
  const std::string kept = root.Child(std::string(kMaskAsidePrefix) + "fedcba9876543210");
  const std::string filled = kept + "/" + kMaskAsidePrefix + "1111111111111111";
  for (const std::string& dir :
       {swept, swept + "/" + kMaskAsidePrefix + "2222222222222222",
        swept + "/" + kMaskAsidePrefix + "3333333333333333", kept, filled,
        kept + "/" + kMaskAsidePrefix + "4444444444444444"}) {
    ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0) << dir;
  }
  WriteFileOrDie(filled + "/work.txt", "kept");
  EXPECT_TRUE(IsLeftAside(swept));
  EXPECT_FALSE(IsLeftAside(kept)) << "holds a directory someone wrote into";
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ProtectionPlan plan, PlanProtection({root.path()}, {}));
  DrainMaskRemovals();
  EXPECT_NE(::access(swept.c_str(), F_OK), 0);
  EXPECT_EQ(testing::ReadFileOrMissing(filled + "/work.txt"), "kept");
}

TEST(ProtectionPlanTest, AMaskDirectorySomeoneFilledStaysWhereItIs) {
  TempDir root;
  const std::string dir = root.Child(".claude");
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  WriteFileOrDie(dir + "/settings.json", "{}");
  AcquireMasks({{dir, true}});
  ReleaseMasks({{dir, true}});
  DrainMaskRemovals();
  EXPECT_EQ(testing::SortedNames(root.path()), std::vector<std::string>{".claude"});
  EXPECT_EQ(testing::ReadFileOrMissing(dir + "/settings.json"), "{}");
}

TEST(ProtectionPlanTest, TheScanSweepsEmptyMaskDirectoriesLeftByAKilledBroker) {
  // A broker killed between renaming a mask directory aside and removing it leaves
  // `.airlock-mask-<16 hex>` behind: the next scan removes it if it is empty, anywhere in the
  // root, and leaves alone one someone wrote into or a name that is not ours.
  TempDir root;
  const std::string top = root.Child(std::string(kMaskAsidePrefix) + "0123456789abcdef");
  const std::string nested =
      root.Child(std::string("sub/") + kMaskAsidePrefix + "fedcba9876543210");
  const std::string filled = root.Child(std::string(kMaskAsidePrefix) + "aaaaaaaaaaaaaaaa");
  const std::string not_ours = root.Child(std::string(kMaskAsidePrefix) + "not-hex-digits!!");
  for (const std::string& dir : {top, root.Child("sub"), nested, filled, not_ours}) {
    ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0) << dir;
  }
  WriteFileOrDie(filled + "/work.txt", "kept");
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ProtectionPlan plan, PlanProtection({root.path()}, {}));
  DrainMaskRemovals();
  EXPECT_NE(::access(top.c_str(), F_OK), 0);
  EXPECT_NE(::access(nested.c_str(), F_OK), 0);
  EXPECT_EQ(testing::ReadFileOrMissing(filled + "/work.txt"), "kept");
  EXPECT_EQ(::access(not_ours.c_str(), F_OK), 0);
  // Scanning again (the filled one is tried again, and stays) changes nothing more.
  AIRLOCK_ASSERT_OK_AND_ASSIGN(plan, PlanProtection({root.path()}, {}));
  DrainMaskRemovals();
  EXPECT_EQ(testing::ReadFileOrMissing(filled + "/work.txt"), "kept");
  EXPECT_EQ(::access(not_ours.c_str(), F_OK), 0);
}

TEST(ProtectionPlanTest, TheAsideNameIsNotProtected) {
  EXPECT_EQ(profiles::MatchProtected(std::string(kMaskAsidePrefix) + "0123456789abcdef"), "");
}



std::string ContentOfMask(const ProtectionPlan& plan, const std::string& path) {
  for (const auto& mask : plan.masks) {
    if (mask.path == path) return mask.content;
  }
  return "<no mask>";
}

void MakeGitDir(const std::string& dir) {
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0) << dir;
  ASSERT_EQ(::mkdir((dir + "/objects").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((dir + "/refs").c_str(), 0755), 0);
  WriteFileOrDie(dir + "/HEAD", "ref: refs/heads/main\n");
}

// git takes hooks and config from the directory `commondir` names: a missing one is masked
// with a file saying "." (the git directory itself, which git reads as no redirection) in
// the repository and in every git directory found; an existing one is read-only.
TEST(ProtectionPlanTest, CommondirIsMaskedWithTheGitDirectoryItself) {
  TempDir root;
  MakeGitDir(root.Child(".git"));
  ASSERT_EQ(::mkdir(root.Child(".git/modules").c_str(), 0755), 0);
  MakeGitDir(root.Child(".git/modules/lib"));
  ASSERT_EQ(::mkdir(root.Child(".git/worktrees").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(root.Child(".git/worktrees/wt").c_str(), 0755), 0);
  WriteFileOrDie(root.Child(".git/worktrees/wt/HEAD"), "ref: refs/heads/wt\n");
  WriteFileOrDie(root.Child(".git/worktrees/wt/commondir"), "../..\n");
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ProtectionPlan plan, PlanProtection({root.path()}, {}));
  EXPECT_EQ(ContentOfMask(plan, root.Child(".git/commondir")), ".\n");
  EXPECT_EQ(ContentOfMask(plan, root.Child(".git/modules/lib/commondir")), ".\n");
  EXPECT_THAT(plan.read_only, Contains(root.Child(".git/worktrees/wt/commondir")));
  // A linked worktree's git directory takes hooks and config from its common directory; its
  // config.worktree (read when the common config enables it) is protected regardless.
  EXPECT_FALSE(HasAnyMask(plan, root.Child(".git/worktrees/wt/hooks")));
  EXPECT_TRUE(HasMask(plan, root.Child(".git/worktrees/wt/config.worktree"), false));
}

TEST(ProtectionPlanTest, ConfigWorktreeIsProtectedWhereTheConfigEnablesIt) {
  TempDir root;
  MakeGitDir(root.Child(".git"));
  WriteFileOrDie(root.Child(".git/config"), "[core]\n\tbare = false\n");
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ProtectionPlan plan, PlanProtection({root.path()}, {}));
  EXPECT_FALSE(HasAnyMask(plan, root.Child(".git/config.worktree")));
  WriteFileOrDie(root.Child(".git/config"), "[extensions]\n\tworktreeConfig = true\n");
  AIRLOCK_ASSERT_OK_AND_ASSIGN(plan, PlanProtection({root.path()}, {}));
  EXPECT_TRUE(HasMask(plan, root.Child(".git/config.worktree"), false));
}

// When the config cannot be told not to enable it, config.worktree is protected: a config
// that includes other files, one too large to read whole. A config that is a link (git
// follows it; the scan does not) makes the whole git directory read-only. A missing config is
// masked empty and enables nothing.
TEST(ProtectionPlanTest, ConfigWorktreeIsProtectedWhenTheConfigCannotBeRuledOut) {
  TempDir root;
  MakeGitDir(root.Child(".git"));
  ::unlink(root.Child(".git/config").c_str());
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ProtectionPlan plan, PlanProtection({root.path()}, {}));
  EXPECT_FALSE(HasAnyMask(plan, root.Child(".git/config.worktree"))) << "no config";
  WriteFileOrDie(root.Child("elsewhere"), "[extensions]\n\tworktreeConfig = true\n");
  ASSERT_EQ(::symlink(root.Child("elsewhere").c_str(), root.Child(".git/config").c_str()), 0);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(plan, PlanProtection({root.path()}, {}));
  EXPECT_THAT(plan.read_only, Contains(root.Child(".git"))) << "a link";
  ::unlink(root.Child(".git/config").c_str());
  WriteFileOrDie(root.Child(".git/config"), "[include]\n\tpath = ../elsewhere\n");
  AIRLOCK_ASSERT_OK_AND_ASSIGN(plan, PlanProtection({root.path()}, {}));
  EXPECT_TRUE(HasMask(plan, root.Child(".git/config.worktree"), false)) << "an include";
  WriteFileOrDie(root.Child(".git/config"), "[core]\n" + std::string(2 << 20, '#') + "\n");
  AIRLOCK_ASSERT_OK_AND_ASSIGN(plan, PlanProtection({root.path()}, {}));
  EXPECT_TRUE(HasMask(plan, root.Child(".git/config.worktree"), false)) << "too large";
}

// The mount point of a content mask is made by AcquireMasks with its content, so that host
// git reading it meanwhile sees "." too, and removed at release only if it still says so.
TEST(ProtectionPlanTest, AContentMaskIsMadeWithItsContentAndRemovedOnlyIfUnchanged) {
  TempDir root;
  const linux_sandbox::CoveredPath mask{root.Child("commondir"), false, ".\n"};
  AcquireMasks({mask});
  EXPECT_EQ(testing::ReadFileOrMissing(mask.path), ".\n");
  ReleaseMasks({mask});
  EXPECT_NE(::access(mask.path.c_str(), F_OK), 0);
  AcquireMasks({mask});
  ::chmod(mask.path.c_str(), 0644);
  WriteFileOrDie(mask.path, "../evil\n");
  ReleaseMasks({mask});
  EXPECT_EQ(testing::ReadFileOrMissing(mask.path), "../evil\n") << "not ours any more: left";
}

// An unwritten protected entry that carries no mark — another airlock process's mask mount
// point made a moment ago (mkdir, then the mark), or any of them on a file system without
// user extended attributes — is re-bound read-only and held for the call: its maker's
// exclusive lock is refused, so it does not remove it (the read-only mount would move with
// it and the name become creatable in this sandbox). The user's written files are not held.
TEST(ProtectionPlanTest, UnmarkedUnwrittenEntriesAreHeldSoTheirMakerLeavesThem) {
  TempDir root;
  ASSERT_EQ(::mkdir(root.Child(".envrc").c_str(), 0755), 0);  // unmarked, empty
  WriteFileOrDie(root.Child(".profile"), "");                   // unmarked, empty
  WriteFileOrDie(root.Child(".bashrc"), "export PS1=x\n");      // the user's, written
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ProtectionPlan plan, PlanProtection({root.path()}, {}));
  EXPECT_THAT(plan.read_only, Contains(root.Child(".envrc")));
  EXPECT_THAT(plan.held_read_only,
              UnorderedElementsAre(root.Child(".envrc"), root.Child(".profile")));
  // The maker's release: an exclusive lock without waiting, on its own open file.
  ScopedFd maker(::open(root.Child(".envrc").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(maker);
  {
    AIRLOCK_ASSERT_OK_AND_ASSIGN(ReadOnlyHolds one_call, ReadOnlyHolds::Take(plan.held_read_only));
    EXPECT_NE(::flock(maker.get(), LOCK_EX | LOCK_NB), 0) << "the maker would remove it";
    {
      AIRLOCK_ASSERT_OK_AND_ASSIGN(ReadOnlyHolds other_call,
                                   ReadOnlyHolds::Take(plan.held_read_only));
      EXPECT_THAT(other_call.StillInPlace(), IsOk());
    }
    EXPECT_NE(::flock(maker.get(), LOCK_EX | LOCK_NB), 0) << "still held by the first call";
  }
  EXPECT_EQ(::flock(maker.get(), LOCK_EX | LOCK_NB), 0) << "released";
  EXPECT_EQ(::access(root.Child(".envrc").c_str(), F_OK), 0) << "never removed here";
  EXPECT_EQ(::access(root.Child(".profile").c_str(), F_OK), 0);
  // Held exclusively (its maker removing it right now): the call is refused, not run with a
  // read-only bind nobody holds.
  EXPECT_THAT(ReadOnlyHolds::Take(plan.held_read_only),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr(".envrc")));
  ASSERT_EQ(::flock(maker.get(), LOCK_UN), 0);
  // Replaced after it was held (what bwrap bound would not be what is held): refused too.
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ReadOnlyHolds holds, ReadOnlyHolds::Take(plan.held_read_only));
  ASSERT_EQ(::rename(root.Child(".envrc").c_str(), root.Child("moved").c_str()), 0);
  ASSERT_EQ(::mkdir(root.Child(".envrc").c_str(), 0755), 0);
  EXPECT_THAT(holds.StillInPlace(), StatusIs(absl::StatusCode::kUnavailable, HasSubstr(".envrc")));
  // Gone: refused.
  ASSERT_EQ(::rmdir(root.Child(".envrc").c_str()), 0);
  EXPECT_THAT(ReadOnlyHolds::Take(plan.held_read_only),
              StatusIs(absl::StatusCode::kUnavailable));
}

// A directory with a mask's aside name that someone filled is an ordinary directory: it is
// scanned like any other, nested repositories in it included.
TEST(ProtectionPlanTest, AFilledAsideDirectoryIsScanned) {
  TempDir root;
  const std::string aside = root.Child(std::string(kMaskAsidePrefix) + "0123456789abcdef");
  ASSERT_EQ(::mkdir(aside.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((aside + "/r").c_str(), 0755), 0);
  MakeGitDir(aside + "/r/.git");
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ProtectionPlan plan, PlanProtection({root.path()}, {}));
  EXPECT_TRUE(HasMask(plan, aside + "/r/.git/hooks", true));
  EXPECT_TRUE(HasMask(plan, aside + "/r/.envrc", true));
}

// A workspace inside a protected name is protected whole, as the file tools have it.
TEST(ProtectionPlanTest, ARootInsideAProtectedNameIsReadOnlyWhole) {
  TempDir base;
  const std::string root = base.Child(".vscode/extensions/mine");
  ASSERT_EQ(::mkdir(base.Child(".vscode").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(base.Child(".vscode/extensions").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(root.c_str(), 0755), 0);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ProtectionPlan plan, PlanProtection({root}, {}));
  EXPECT_THAT(plan.read_only, Contains(root));
  EXPECT_TRUE(plan.masks.empty());
  AIRLOCK_ASSERT_OK_AND_ASSIGN(plan, PlanProtection({base.Child(".vscode")}, {}));
  EXPECT_THAT(plan.read_only, Contains(base.Child(".vscode")));
}

// Two processes masking the same names: a mount point the other one still uses is masked
// again by the scan (not taken for an existing file, which would only be re-bound onto
// itself) and stays until its last user anywhere is done. A user's own empty file is not a
// mask: re-bound read-only, never removed.
TEST(ProtectionPlanTest, MasksSharedWithAnotherProcessLastUntilItsLastUser) {
  TempDir root;
  if (!UserXattrsWork(root.path())) GTEST_SKIP() << "no user extended attributes here";
  WriteFileOrDie(root.Child(".profile"), "");  // the user's own, empty
  const std::vector<linux_sandbox::CoveredPath> masks = {{root.Child(".envrc"), true},
                                                         {root.Child(".vscode"), true}};
  int go[2], held[2];
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::pipe(held), 0);
  const pid_t other = ::fork();
  ASSERT_GE(other, 0);
  if (other == 0) {  // the other airlock process: holds the masks until told to release them
    AcquireMasks(masks);
    char byte = 'h';
    if (::write(held[1], &byte, 1) != 1 || ::read(go[0], &byte, 1) != 1) ::_exit(1);
    ReleaseMasks(masks);  // refused its exclusive lock: nothing queued for the reaper
    ::_exit(0);
  }
  char byte;
  ASSERT_EQ(::read(held[0], &byte, 1), 1);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ProtectionPlan plan, PlanProtection({root.path()}, {}));
  EXPECT_TRUE(HasMask(plan, root.Child(".envrc"), true)) << "the other process's mask";
  EXPECT_TRUE(HasMask(plan, root.Child(".vscode"), true));
  EXPECT_THAT(plan.read_only, Not(Contains(root.Child(".envrc"))));
  EXPECT_THAT(plan.read_only, Contains(root.Child(".profile")));
  AcquireMasks(plan.masks);
  ReleaseMasks(plan.masks);
  EXPECT_EQ(::access(root.Child(".envrc").c_str(), F_OK), 0) << "the other process uses it";
  EXPECT_EQ(::access(root.Child(".vscode").c_str(), F_OK), 0);
  // Now the other way round: the other process is done while this one holds them.
  AcquireMasks(plan.masks);
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(other, &status, 0), other);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(::access(root.Child(".envrc").c_str(), F_OK), 0) << "this process still uses it";
  ReleaseMasks(plan.masks);
  DrainMaskRemovals();
  EXPECT_EQ(testing::SortedNames(root.path()), std::vector<std::string>{".profile"});
  for (int fd : {go[0], go[1], held[0], held[1]}) ::close(fd);
}

// A mount point a killed broker left (marked, still empty) is masked again and then removed.
TEST(ProtectionPlanTest, AMountPointAKilledBrokerLeftIsMaskedAndRemoved) {
  TempDir root;
  if (!UserXattrsWork(root.path())) GTEST_SKIP() << "no user extended attributes here";
  const pid_t killed = ::fork();
  ASSERT_GE(killed, 0);
  if (killed == 0) {
    AcquireMasks({{root.Child(".idea"), true}});
    ::_exit(0);  // no release: as if killed
  }
  int status = 0;
  ASSERT_EQ(::waitpid(killed, &status, 0), killed);
  ASSERT_EQ(::access(root.Child(".idea").c_str(), F_OK), 0);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ProtectionPlan plan, PlanProtection({root.path()}, {}));
  EXPECT_TRUE(HasMask(plan, root.Child(".idea"), true));
  AcquireMasks(plan.masks);
  ReleaseMasks(plan.masks);
  DrainMaskRemovals();
  EXPECT_EQ(testing::SortedNames(root.path()), std::vector<std::string>{});
}

}  // namespace
}  // namespace airlock::broker
