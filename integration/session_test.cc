// Sessions, settings and the operator's control socket end to end (SPEC §10): precedence of
// command line, resumed session and settings.json; live preset changes with `airlock ctl`
// (published to the worker, refused while a call is in flight); invalid settings refused.
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/harness.h"

namespace airlock::integration {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class SessionTest : public ::testing::TestWithParam<RunAs> {
 protected:
  RunOptions Options() const { return AirlockOptions(GetParam(), home_); }
  // `airlock run ARGS -- sh -c SCRIPT`.
  CommandResult Run(std::vector<std::string> args, const std::string& script) {
    std::vector<std::string> argv = {"run", "--workspace", workspace_.path(), "--approver", "none"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--", "/bin/sh", "-c", script});
    return RunAirlock(argv, Options());
  }
  static std::string SessionIdOf(const CommandResult& result) {
    const std::string marker = "airlock: session ";
    const size_t at = result.err.find(marker);
    if (at == std::string::npos) return "";
    const size_t start = at + marker.size();
    return result.err.substr(start, result.err.find(' ', start) - start);
  }

  Scratch workspace_{GetParam()};
  Scratch home_{GetParam()};
};

TEST_P(SessionTest, ResumingKeepsThePresetAndAnExplicitPresetOverridesIt) {
  CommandResult first = Run({"--preset", "workspace-write"}, "airlock tool context");
  ASSERT_EQ(first.exit_code, 0) << first;
  const std::string id = SessionIdOf(first);
  ASSERT_FALSE(id.empty()) << first;
  EXPECT_THAT(first.out, HasSubstr("PRESET_WORKSPACE_WRITE"));

  CommandResult resumed = Run({"--session", id}, "echo \"session=$AIRLOCK_SESSION\"; airlock tool context");
  ASSERT_EQ(resumed.exit_code, 0) << resumed;
  EXPECT_THAT(resumed.out, HasSubstr("session=" + id));
  EXPECT_THAT(resumed.out, HasSubstr("PRESET_WORKSPACE_WRITE"));

  CommandResult overridden = Run({"--session", id, "--preset", "read-only"}, "airlock tool context");
  ASSERT_EQ(overridden.exit_code, 0) << overridden;
  EXPECT_THAT(overridden.out, HasSubstr("PRESET_READ_ONLY"));
  // The override was recorded: the next resume keeps read-only.
  CommandResult again = Run({"--session", id}, "airlock tool context");
  EXPECT_THAT(again.out, HasSubstr("PRESET_READ_ONLY")) << again;
}

TEST_P(SessionTest, SettingsDefaultAppliesToNewSessionsAndInvalidSettingsRefuseToStart) {
  // The broker creates AIRLOCK_HOME itself; give it one with settings.
  home_.Write("airlock/settings.json", R"({"permissionPreset":"workspace-write"})");
  CommandResult result = Run({}, "airlock tool context");
  ASSERT_EQ(result.exit_code, 0) << result;
  EXPECT_THAT(result.out, HasSubstr("PRESET_WORKSPACE_WRITE"));

  home_.Write("airlock/settings.json", R"({"permissionPreset":"everything"})");
  CommandResult refused = Run({}, "echo worker-ran");
  EXPECT_EQ(refused.exit_code, 125) << refused;
  EXPECT_THAT(refused.err, HasSubstr("permissionPreset"));
  EXPECT_THAT(refused.out, Not(HasSubstr("worker-ran")));
}

TEST_P(SessionTest, CtlChangesThePresetLiveAndTheWorkerSeesIt) {
  const std::string socket = home_.Child("ctl/broker.sock");
  const std::string binary = AirlockBinary(GetParam());
  // The worker waits (bounded) until the context it gets from the broker changes preset.
  const std::string worker =
      "airlock tool context | grep -o PRESET_READ_ONLY; i=0; "
      "while [ $i -lt 100 ]; do airlock tool context | grep -q PRESET_WORKSPACE_WRITE && "
      "{ echo saw-workspace-write; exit 0; }; sleep 0.1; i=$((i+1)); done; exit 7";
  const std::string script = absl::StrCat(
      binary, " run --workspace ", workspace_.path(), " --approver none --control-socket ", socket,
      " -- /bin/sh -c '", worker, "' & broker=$!; ",
      "i=0; while [ ! -S ", socket, " ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; ",
      binary, " ctl --socket ", socket, " status; ",
      binary, " ctl --socket ", socket, " preset bogus; echo \"bogus=$?\"; ",
      binary, " ctl --socket ", socket, " preset workspace-write; echo \"ctl=$?\"; ",
      "wait $broker; echo \"broker=$?\"");
  CommandResult result = RunCommand({"/bin/sh", "-c", script}, Options());
  EXPECT_THAT(result.out, HasSubstr("preset: read-only")) << result;
  EXPECT_THAT(result.out, HasSubstr("bogus=3"));
  EXPECT_THAT(result.out, HasSubstr("ctl=0"));
  EXPECT_THAT(result.out, HasSubstr("saw-workspace-write"));
  EXPECT_THAT(result.out, HasSubstr("broker=0"));
}

TEST_P(SessionTest, CtlIsBusyWhileACommandRuns) {
  const std::string socket = home_.Child("ctl/broker.sock");
  const std::string binary = AirlockBinary(GetParam());
  const std::string script = absl::StrCat(
      binary, " run --workspace ", workspace_.path(), " --approver none --control-socket ", socket,
      " -- /bin/sh -c 'airlock tool bash --command \"sleep 5\" >/dev/null' & broker=$!; ",
      "i=0; while [ ! -S ", socket, " ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; ",
      // Asked only once the command is in flight, however slow the machine.
      "i=0; until ", binary, " ctl --socket ", socket, " status | grep -q 'calls in flight: 1'",
      " || [ $i -ge 400 ]; do sleep 0.05; i=$((i+1)); done; ",
      binary, " ctl --socket ", socket, " preset workspace-write; echo \"ctl=$?\"; ",
      binary, " ctl --socket ", socket, " status | grep preset; wait $broker");
  CommandResult result = RunCommand({"/bin/sh", "-c", script}, Options());
  EXPECT_THAT(result.out, HasSubstr("ctl=3")) << result;
  EXPECT_THAT(result.err, HasSubstr("BUSY"));
  EXPECT_THAT(result.out, HasSubstr("preset: read-only"));
}

INSTANTIATE_TEST_SUITE_P(Identities, SessionTest, ::testing::ValuesIn(IdentitiesToTest()),
                         RunAsName);

}  // namespace
}  // namespace airlock::integration
