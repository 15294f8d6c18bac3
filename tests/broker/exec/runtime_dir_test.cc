#include "broker/exec/runtime_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker {
namespace {

using ::airlock::testing::TempDir;
using ::testing::HasSubstr;

constexpr uid_t kOtherUid = 65534;

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

mode_t ModeOf(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return 0;
  return st.st_mode & 07777;
}

// The default candidates inside a scratch directory: a sticky "shm", a plain "tmp" and an
// "xdg" of ours, so that no test touches the real /dev/shm or /tmp.
class RuntimeDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"shm", "tmp", "xdg"}) {
      ASSERT_EQ(::mkdir(scratch_.Child(name).c_str(), 0700), 0);
    }
    ASSERT_EQ(::chmod(scratch_.Child("shm").c_str(), 01777), 0);
    defaults_.shm = scratch_.Child("shm");
    defaults_.tmp = scratch_.Child("tmp");
    defaults_.xdg_runtime_dir = scratch_.Child("xdg");
  }

  std::string InShm() const { return absl::StrCat(defaults_.shm, "/airlock-", ::geteuid()); }
  std::string InTmp() const { return absl::StrCat(defaults_.tmp, "/airlock-", ::geteuid()); }

  TempDir scratch_;
  RuntimeDirDefaults defaults_;
};

TEST_F(RuntimeDirTest, OwnPrivateXdgRuntimeDirIsUsed) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::string dir, EnsureRuntimeDir("", defaults_));
  EXPECT_EQ(dir, scratch_.Child("xdg/airlock"));
  EXPECT_EQ(ModeOf(dir), 0700u);
}

TEST_F(RuntimeDirTest, XdgRuntimeDirReadableByOthersIsUsed) {
  // Only writes by others matter: a 0755 directory of ours is as good as a 0700 one.
  ASSERT_EQ(::chmod(defaults_.xdg_runtime_dir.c_str(), 0755), 0);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::string dir, EnsureRuntimeDir("", defaults_));
  EXPECT_EQ(dir, scratch_.Child("xdg/airlock"));
}

TEST_F(RuntimeDirTest, XdgRuntimeDirThroughALinkIsResolved) {
  ASSERT_EQ(::symlink(scratch_.Child("xdg").c_str(), scratch_.Child("link").c_str()), 0);
  defaults_.xdg_runtime_dir = scratch_.Child("link");
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::string dir, EnsureRuntimeDir("", defaults_));
  EXPECT_EQ(dir, scratch_.Child("xdg/airlock"));
}

TEST_F(RuntimeDirTest, UnusableXdgRuntimeDirFallsBackToShm) {
  ASSERT_EQ(::mkdir(scratch_.Child("open").c_str(), 0700), 0);
  ASSERT_EQ(::chmod(scratch_.Child("open").c_str(), 0770), 0);
  ASSERT_EQ(::mkdir(scratch_.Child("world").c_str(), 0700), 0);
  ASSERT_EQ(::chmod(scratch_.Child("world").c_str(), 01777), 0);
  testing::WriteFileOrDie(scratch_.Child("file"), "x");
  const struct {
    const char* name;
    std::string xdg;
  } cases[] = {
      {"unset", ""},
      {"relative", "relative/dir"},
      {"missing", scratch_.Child("missing")},
      {"below a missing directory", scratch_.Child("missing/deeper")},
      {"a file", scratch_.Child("file")},
      {"group-writable", scratch_.Child("open")},
      {"world-writable and sticky", scratch_.Child("world")},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    defaults_.xdg_runtime_dir = c.xdg;
    AIRLOCK_ASSERT_OK_AND_ASSIGN(std::string dir, EnsureRuntimeDir("", defaults_));
    EXPECT_EQ(dir, InShm());
    EXPECT_EQ(ModeOf(dir), 0700u);
  }
  EXPECT_FALSE(Exists(scratch_.Child("open/airlock")));
  EXPECT_FALSE(Exists(scratch_.Child("world/airlock")));
  EXPECT_FALSE(Exists(scratch_.Child("missing")));
}

// What `su` leaves: XDG_RUNTIME_DIR naming the other user's 0700 directory. Root could create
// `airlock` in it, but the sandbox would then fail to use it; nothing may be created there.
TEST_F(RuntimeDirTest, AnotherUsersXdgRuntimeDirIsNeitherUsedNorWrittenTo) {
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(defaults_.xdg_runtime_dir.c_str(), kOtherUid, kOtherUid), 0);
  } else {
    // Without root, a directory of another user that exists everywhere.
    struct stat root;
    ASSERT_EQ(::stat("/", &root), 0);
    if (root.st_uid == ::geteuid()) GTEST_SKIP() << "/ is ours: no other user's directory";
    defaults_.xdg_runtime_dir = "/";
  }
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::string dir, EnsureRuntimeDir("", defaults_));
  EXPECT_EQ(dir, InShm());
  EXPECT_FALSE(Exists(scratch_.Child("xdg/airlock")));
}

TEST_F(RuntimeDirTest, NonStickyShmFallsBackToTmp) {
  defaults_.xdg_runtime_dir.clear();
  ASSERT_EQ(::chmod(defaults_.shm.c_str(), 0777), 0);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::string dir, EnsureRuntimeDir("", defaults_));
  EXPECT_EQ(dir, InTmp());
  EXPECT_FALSE(Exists(InShm()));
  defaults_.shm = scratch_.Child("no-shm");
  AIRLOCK_ASSERT_OK_AND_ASSIGN(dir, EnsureRuntimeDir("", defaults_));
  EXPECT_EQ(dir, InTmp());
}

TEST_F(RuntimeDirTest, SquattedCandidateIsSkipped) {
  defaults_.xdg_runtime_dir.clear();
  // Someone left /dev/shm/airlock-<uid> open (or as a link): it is not used.
  ASSERT_EQ(::mkdir(InShm().c_str(), 0700), 0);
  ASSERT_EQ(::chmod(InShm().c_str(), 0755), 0);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::string dir, EnsureRuntimeDir("", defaults_));
  EXPECT_EQ(dir, InTmp());
  EXPECT_EQ(ModeOf(InShm()), 0755u) << "a squatted directory is left alone";
  ASSERT_EQ(::rmdir(InShm().c_str()), 0);
  ASSERT_EQ(::symlink(scratch_.Child("xdg").c_str(), InShm().c_str()), 0);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(dir, EnsureRuntimeDir("", defaults_));
  EXPECT_EQ(dir, InTmp());
}

TEST_F(RuntimeDirTest, NoUsableCandidateIsAnErrorNamingEach) {
  defaults_.xdg_runtime_dir = "relative";
  defaults_.shm = scratch_.Child("no-shm");
  defaults_.tmp = scratch_.Child("no-tmp");
  absl::StatusOr<std::string> dir = EnsureRuntimeDir("", defaults_);
  ASSERT_FALSE(dir.ok());
  EXPECT_THAT(dir.status().message(), HasSubstr("XDG_RUNTIME_DIR=relative"));
  EXPECT_THAT(dir.status().message(), HasSubstr("no-shm"));
  EXPECT_THAT(dir.status().message(), HasSubstr("no-tmp"));
}

// An explicitly requested directory is never replaced by a fallback.
TEST_F(RuntimeDirTest, RequestedDirectoryIsStrict) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::string dir,
                               EnsureRuntimeDir(scratch_.Child("mine"), defaults_));
  EXPECT_EQ(dir, scratch_.Child("mine"));
  EXPECT_EQ(ModeOf(dir), 0700u);

  ASSERT_EQ(::mkdir(scratch_.Child("open").c_str(), 0700), 0);
  ASSERT_EQ(::chmod(scratch_.Child("open").c_str(), 0750), 0);
  ASSERT_EQ(::symlink(scratch_.Child("mine").c_str(), scratch_.Child("link").c_str()), 0);
  for (const std::string& requested :
       {scratch_.Child("missing/deeper"), scratch_.Child("open"), scratch_.Child("link"),
        std::string("relative")}) {
    SCOPED_TRACE(requested);
    EXPECT_FALSE(EnsureRuntimeDir(requested, defaults_).ok());
  }
  EXPECT_FALSE(Exists(InShm()));
  EXPECT_FALSE(Exists(scratch_.Child("xdg/airlock")));
}

TEST_F(RuntimeDirTest, OutputDirectoryIsBesideTheRuntimeDirectoryAndStrict) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::string runtime, EnsureRuntimeDir("", defaults_));
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::string output, EnsureOutputDir(runtime));
  EXPECT_EQ(output, scratch_.Child("xdg/airlock-output"));
  EXPECT_EQ(ModeOf(output), 0700u);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(output, EnsureOutputDir(runtime));  // again: the same one

  ASSERT_EQ(::mkdir(scratch_.Child("open-output").c_str(), 0700), 0);
  ASSERT_EQ(::chmod(scratch_.Child("open-output").c_str(), 0755), 0);
  EXPECT_FALSE(EnsureOutputDir(scratch_.Child("open")).ok());
  ASSERT_EQ(::symlink(scratch_.Child("xdg").c_str(), scratch_.Child("link-output").c_str()), 0);
  EXPECT_FALSE(EnsureOutputDir(scratch_.Child("link")).ok());
}

}  // namespace
}  // namespace airlock::broker
