#include "platform/linux/landlock.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/platform/linux/child_runner.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock::linux_sandbox {
namespace {

using ::airlock::testing::ExpectErrno;
using ::airlock::testing::ExpectSuccess;
using ::airlock::testing::IsOk;
using ::airlock::testing::RunInChild;
using ::airlock::testing::StatusIs;
using ::testing::HasSubstr;

TEST(LandlockAbiTest, RightsGrowWithTheAbi) {
  EXPECT_EQ(LandlockFsRightsForAbi(0), 0u);
  EXPECT_EQ(LandlockFsRightsForAbi(1), 0x1FFFu);  // EXECUTE .. MAKE_SYM
  EXPECT_EQ(LandlockFsRightsForAbi(2), 0x1FFFu | kLandlockRefer);
  EXPECT_EQ(LandlockFsRightsForAbi(3), 0x1FFFu | kLandlockRefer | kLandlockTruncate);
  EXPECT_EQ(LandlockFsRightsForAbi(4), LandlockFsRightsForAbi(3));  // ABI 4 added network only
  EXPECT_EQ(LandlockFsRightsForAbi(5), LandlockFsRightsForAbi(3) | kLandlockIoctlDev);
  EXPECT_EQ(LandlockFsRightsForAbi(7), LandlockFsRightsForAbi(5));
}

TEST(LandlockAbiTest, ScopesStartAtAbi6) {
  EXPECT_EQ(LandlockScopesForAbi(5), 0u);
  EXPECT_EQ(LandlockScopesForAbi(6), kLandlockScopeSignal | kLandlockScopeAbstractUnixSocket);
  EXPECT_EQ(LandlockScopesForAbi(7), LandlockScopesForAbi(6));
}

TEST(LandlockAbiTest, ClampDropsWhatTheKernelLacksFromRulesetAndRules) {
  LandlockPolicy policy = WorkerLandlockPolicy("/scratch", true);
  LandlockPolicy abi1 = ClampToAbi(policy, 1);
  EXPECT_EQ(abi1.handled_fs, 0x1FFFu);
  EXPECT_EQ(abi1.scoped, 0u);
  for (const LandlockPathRule& rule : abi1.rules) {
    EXPECT_EQ(rule.access & ~abi1.handled_fs, 0u) << rule.path;
  }
  LandlockPolicy abi3 = ClampToAbi(policy, 3);
  EXPECT_NE(abi3.handled_fs & kLandlockTruncate, 0u);
  EXPECT_EQ(abi3.handled_fs & kLandlockIoctlDev, 0u);
  LandlockPolicy abi6 = ClampToAbi(policy, 6);
  EXPECT_EQ(abi6.scoped, kLandlockScopeSignal | kLandlockScopeAbstractUnixSocket);
}

TEST(LandlockPolicyTest, WorkerPolicyGrantsWritesOnlyToScratchAndSinks) {
  LandlockPolicy policy = WorkerLandlockPolicy("/dev/shm", false);
  EXPECT_EQ(policy.handled_fs, LandlockFsRightsForAbi(kLandlockNewestKnownAbi));
  bool saw_root = false, saw_scratch = false;
  for (const LandlockPathRule& rule : policy.rules) {
    if (rule.path == "/") {
      saw_root = true;
      EXPECT_EQ(rule.access, kLandlockReadRights);
    } else if (rule.path == "/dev/shm") {
      saw_scratch = true;
      EXPECT_EQ(rule.access, policy.handled_fs);
    } else {
      EXPECT_THAT(rule.path, ::testing::AnyOf("/dev/null", "/dev/zero", "/dev/full"));
      EXPECT_EQ(rule.access & ~kLandlockFileRights, 0u) << rule.path;
      EXPECT_TRUE(rule.optional);
    }
  }
  EXPECT_TRUE(saw_root);
  EXPECT_TRUE(saw_scratch);
}

TEST(LandlockPolicyTest, TerminalsOnlyWithAPrivateDev) {
  auto has = [](const LandlockPolicy& policy, const std::string& path) {
    for (const LandlockPathRule& rule : policy.rules) {
      if (rule.path == path) return true;
    }
    return false;
  };
  EXPECT_FALSE(has(WorkerLandlockPolicy("/s", false), "/dev/pts"));
  EXPECT_TRUE(has(WorkerLandlockPolicy("/s", true), "/dev/pts"));
  EXPECT_TRUE(has(WorkerLandlockPolicy("/s", true), "/dev/ptmx"));
}

class LandlockKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<int> abi = ProbeLandlockAbi();
    if (!abi.ok()) GTEST_SKIP() << "this kernel has no usable Landlock: " << abi.status();
    abi_ = *abi;
  }
  int abi_ = 0;
};

TEST_F(LandlockKernelTest, ProbeReportsAnAbi) { EXPECT_GE(abi_, 1); }

TEST_F(LandlockKernelTest, MissingRequiredPathIsAnErrorNamingIt) {
  LandlockPolicy policy;
  policy.handled_fs = LandlockFsRightsForAbi(1);
  policy.rules.push_back({"/nonexistent/airlock-landlock-test", kLandlockReadFile, false});
  EXPECT_THAT(BuildLandlockRuleset(policy),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent/airlock-landlock-test")));
}

TEST_F(LandlockKernelTest, MissingOptionalPathIsSkipped) {
  LandlockPolicy policy;
  policy.handled_fs = LandlockFsRightsForAbi(1);
  policy.rules.push_back({"/nonexistent/airlock-landlock-test", kLandlockReadFile, true});
  policy.rules.push_back({"/", kLandlockReadFile | kLandlockReadDir, false});
  EXPECT_THAT(BuildLandlockRuleset(policy), IsOk());
}

TEST_F(LandlockKernelTest, FileRulesKeepOnlyFileRights) {
  // A directory right on a file rule would be EINVAL from the kernel; the builder strips it.
  LandlockPolicy policy;
  policy.handled_fs = LandlockFsRightsForAbi(abi_);
  policy.rules.push_back({"/dev/null", policy.handled_fs, false});
  EXPECT_THAT(BuildLandlockRuleset(ClampToAbi(policy, abi_)), IsOk());
}

TEST_F(LandlockKernelTest, RestrictSelfNeedsNoNewPrivs) {
  const std::string failure = RunInChild([]() -> std::string {
    LandlockPolicy policy;
    policy.handled_fs = LandlockFsRightsForAbi(1);
    absl::StatusOr<ScopedFd> ruleset = BuildLandlockRuleset(policy);
    if (!ruleset.ok()) return std::string(ruleset.status().message());
    if (::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1) return "";  // inherited; cannot test
    absl::Status status = RestrictSelf(ruleset->get());
    if (status.code() != absl::StatusCode::kFailedPrecondition) {
      return "RestrictSelf without no_new_privs did not fail as expected";
    }
    return "";
  });
  EXPECT_EQ(failure, "");
}

TEST_F(LandlockKernelTest, WorkerPolicyBlocksWritesOutsideScratchOnly) {
  airlock::testing::TempDir dir;
  const std::string scratch = dir.Child("scratch");
  const std::string outside = dir.Child("outside");
  ASSERT_EQ(::mkdir(scratch.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir(outside.c_str(), 0700), 0);
  airlock::testing::WriteFileOrDie(outside + "/existing", "original");
  const int abi = abi_;

  const std::string failure = RunInChild([&]() -> std::string {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return "no_new_privs";
    absl::StatusOr<int> applied = ApplyLandlock(WorkerLandlockPolicy(scratch, false));
    if (!applied.ok()) return std::string(applied.status().message());
    std::string out;
    const std::string existing = outside + "/existing";
    out += ExpectErrno("create outside", ::open((outside + "/new").c_str(), O_WRONLY | O_CREAT, 0600), EACCES);
    out += ExpectErrno("open existing for write", ::open(existing.c_str(), O_WRONLY), EACCES);
    out += ExpectErrno("unlink outside", ::unlink(existing.c_str()), EACCES);
    out += ExpectErrno("rename outside", ::rename(existing.c_str(), (outside + "/moved").c_str()), EACCES);
    out += ExpectErrno("mkdir outside", ::mkdir((outside + "/d").c_str(), 0700), EACCES);
    out += ExpectErrno("symlink outside", ::symlink("x", (outside + "/l").c_str()), EACCES);
    out += ExpectErrno("link outside", ::link(existing.c_str(), (outside + "/h").c_str()), EACCES);
    // Reparenting into the scratch directory is refused too (EXDEV: the source lacks REFER).
    if (::link(existing.c_str(), (scratch + "/h").c_str()) == 0 ||
        (errno != EXDEV && errno != EACCES)) {
      out += "link from outside into scratch was not refused\n";
    }
    if (abi >= 3) out += ExpectErrno("truncate outside", ::truncate(existing.c_str(), 0), EACCES);
    // Reads work everywhere; writes work in the scratch directory and to the sinks.
    out += ExpectSuccess("read outside", ::open(existing.c_str(), O_RDONLY | O_CLOEXEC));
    const int fd = ::open((scratch + "/file").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    out += ExpectSuccess("create in scratch", fd);
    if (fd >= 0) out += ExpectSuccess("write in scratch", ::write(fd, "x", 1));
    out += ExpectSuccess("mkdir in scratch", ::mkdir((scratch + "/d").c_str(), 0700));
    out += ExpectSuccess("rename in scratch",
                         ::rename((scratch + "/file").c_str(), (scratch + "/d/file").c_str()));
    out += ExpectSuccess("unlink in scratch", ::unlink((scratch + "/d/file").c_str()));
    out += ExpectSuccess("write /dev/null", ::open("/dev/null", O_WRONLY | O_TRUNC));
    return out;
  });
  EXPECT_EQ(failure, "");
  EXPECT_EQ(airlock::testing::ReadFileOrMissing(outside + "/existing"), "original");
  struct stat info;
  EXPECT_NE(::stat((outside + "/new").c_str(), &info), 0);
}

TEST_F(LandlockKernelTest, ScopeStopsSignalsToTheParent) {
  if (abi_ < 6) GTEST_SKIP() << "Landlock ABI " << abi_ << " has no signal scoping";
  const std::string failure = RunInChild([]() -> std::string {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return "no_new_privs";
    std::string out = ExpectSuccess("signal 0 to parent before", ::kill(::getppid(), 0));
    absl::StatusOr<int> applied = ApplyLandlock(WorkerLandlockPolicy("/tmp", false));
    if (!applied.ok()) return std::string(applied.status().message());
    out += ExpectErrno("signal 0 to parent after", ::kill(::getppid(), 0), EPERM);
    out += ExpectSuccess("signal 0 to self", ::kill(::getpid(), 0));
    return out;
  });
  EXPECT_EQ(failure, "");
}

}  // namespace
}  // namespace airlock::linux_sandbox
