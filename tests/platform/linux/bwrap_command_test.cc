#include "platform/linux/bwrap_command.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace airlock::linux_sandbox {
namespace {

using ::airlock::testing::IsOk;
using ::airlock::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(BwrapCommandTest, OperationsBecomeArgvInOrder) {
  BwrapCommand bwrap;
  bwrap.UnshareUser().DisableUserns().UnsharePid().DropAllCapabilities();
  bwrap.RoBind("/", "/").Bind("/w", "/w").Tmpfs("/run/x").RemountRo("/run/x").Dev("/dev");
  bwrap.Proc("/proc").Chdir("/w").ClearEnv().SetEnv("PATH", "/usr/bin").SeccompFd(5);
  bwrap.Command({"/bin/true"});
  AIRLOCK_ASSERT_OK_AND_ASSIGN(BwrapArgv argv, bwrap.Build());
  EXPECT_THAT(argv.options,
              ElementsAre("--unshare-user", "--disable-userns", "--unshare-pid", "--cap-drop",
                          "ALL", "--ro-bind", "/", "/", "--bind", "/w", "/w", "--tmpfs",
                          "/run/x", "--remount-ro", "/run/x", "--dev", "/dev", "--proc",
                          "/proc", "--chdir", "/w", "--clearenv", "--setenv", "PATH",
                          "/usr/bin", "--seccomp", "5"));
  EXPECT_THAT(argv.command, ElementsAre("/bin/true"));
}

TEST(BwrapCommandTest, DescriptorSourcesBecomeTheirFlagsAndBadOnesFailTheBuild) {
  BwrapCommand bwrap;
  bwrap.BindFd(7, "/w").RoBindFd(8, "/w/.git").Command({"/bin/true"});
  AIRLOCK_ASSERT_OK_AND_ASSIGN(BwrapArgv argv, bwrap.Build());
  EXPECT_THAT(argv.options, ElementsAre("--bind-fd", "7", "/w", "--ro-bind-fd", "8", "/w/.git"));
  EXPECT_THAT(BwrapCommand().BindFd(-1, "/w").Command({"/bin/true"}).Build(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--bind-fd: invalid descriptor")));
  EXPECT_THAT(BwrapCommand().RoBindFd(-1, "/w").Command({"/bin/true"}).Build(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--ro-bind-fd: invalid descriptor")));
  EXPECT_FALSE(BwrapCommand().RoBindFd(3, "relative").Command({"/bin/true"}).Build().ok());
  EXPECT_FALSE(BwrapCommand().BindFd(3, std::string("/w\0x", 4)).Command({"/bin/true"})
                   .Build().ok());
}

TEST(BwrapCommandTest, UserCommandOnlyAfterDoubleDash) {
  BwrapCommand bwrap;
  bwrap.UnshareUser().RoBind("/", "/");
  // A command that looks like bwrap options stays a command.
  bwrap.Command({"/bin/sh", "--bind", "/", "/", "--", "sh"});
  AIRLOCK_ASSERT_OK_AND_ASSIGN(BwrapArgv argv, bwrap.Build());
  std::vector<std::string> launcher = argv.LauncherArgv("/usr/bin/bwrap", 4);
  EXPECT_THAT(launcher, ElementsAre("/usr/bin/bwrap", "--args", "4", "--", "/bin/sh", "--bind",
                                    "/", "/", "--", "sh"));
  // The options file carries only options, NUL-terminated each.
  EXPECT_EQ(argv.ArgsFileContents(), std::string("--unshare-user\0--ro-bind\0/\0/\0", 29));
  std::vector<std::string> flat = argv.FlatArgv("/usr/bin/bwrap");
  ASSERT_EQ(flat.size(), 12u);
  EXPECT_EQ(flat[5], "--");
  EXPECT_EQ(flat[6], "/bin/sh");
}

TEST(BwrapCommandTest, NulBytesCannotSplitAnArgument) {
  // A NUL inside a path or value would become an extra option in the --args file.
  const std::string evil_path("/w\0--bind", 9);
  EXPECT_THAT(BwrapCommand().Bind(evil_path, "/w").Command({"/bin/true"}).Build(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("NUL")));
  EXPECT_THAT(BwrapCommand().SetEnv("X", std::string("a\0--bind", 8)).Command({"/bin/true"})
                  .Build(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("NUL")));
  EXPECT_THAT(BwrapCommand().Command({"/bin/echo", std::string("a\0b", 3)}).Build(),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

struct BadInput {
  const char* name;
  BwrapCommand (*make)();
};

TEST(BwrapCommandTest, InvalidOperationsAreRefusedAndTheFirstErrorKept) {
  const BadInput cases[] = {
      {"relative source", [] { return std::move(BwrapCommand().RoBind("etc", "/etc")); }},
      {"relative destination", [] { return std::move(BwrapCommand().Bind("/a", "a")); }},
      {"option as path", [] { return std::move(BwrapCommand().Tmpfs("--bind")); }},
      {"empty path", [] { return std::move(BwrapCommand().Chdir("")); }},
      {"env name with =", [] { return std::move(BwrapCommand().SetEnv("A=B", "x")); }},
      {"env name empty", [] { return std::move(BwrapCommand().SetEnv("", "x")); }},
      {"env name digit", [] { return std::move(BwrapCommand().SetEnv("1A", "x")); }},
      {"negative fd", [] { return std::move(BwrapCommand().SeccompFd(-1)); }},
      {"two seccomp", [] { return std::move(BwrapCommand().SeccompFd(5).SeccompFd(6)); }},
      {"userns without user", [] { return std::move(BwrapCommand().DisableUserns()); }},
  };
  for (const BadInput& bad : cases) {
    BwrapCommand command = bad.make();
    command.Command({"/bin/true"});
    EXPECT_THAT(command.Build(), StatusIs(absl::StatusCode::kInvalidArgument)) << bad.name;
  }
  // The first error wins even when later operations are fine.
  BwrapCommand command;
  command.Bind("relative", "/x").RoBind("/", "/").Command({"/bin/true"});
  EXPECT_THAT(command.Build(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("relative")));
}

TEST(BwrapCommandTest, CommandIsRequiredAbsoluteAndSingle) {
  EXPECT_THAT(BwrapCommand().RoBind("/", "/").Build(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(BwrapCommand().Command({"true"}).Build(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(BwrapCommand().Command({"--bind"}).Build(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(BwrapCommand().Command({"/bin/a"}).Command({"/bin/b"}).Build(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(BwrapCommand().Command({"/bin/true"}).Build(), IsOk());
}

TEST(BwrapCommandTest, EnvValuesMayLookLikeOptions) {
  // A value in its fixed slot is never parsed as an option by bwrap.
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      BwrapArgv argv, BwrapCommand().SetEnv("TERM", "--bind").Command({"/bin/true"}).Build());
  EXPECT_THAT(argv.options, ElementsAre("--setenv", "TERM", "--bind"));
}

}  // namespace
}  // namespace airlock::linux_sandbox
