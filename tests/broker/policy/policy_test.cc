#include "broker/policy/policy.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace airlock::broker {
namespace {

using ::airlock::testing::IsOk;
using ::airlock::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(PolicyBuilderTest, DefaultsAreReadOnlyOnRequestDenyAny) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(Policy policy, PolicyBuilder().AddRoot("/w").Build());
  EXPECT_EQ(policy.preset(), v1::PRESET_READ_ONLY);
  EXPECT_EQ(policy.mode(), v1::MODE_ON_REQUEST);
  EXPECT_FALSE(policy.mode_explicit());
  EXPECT_THAT(policy.edit_tools(), ElementsAre("write", "edit"));
  EXPECT_EQ(policy.outside_workspace(), OutsideWorkspace::kDeny);
  EXPECT_EQ(policy.read_scope(), ReadScope::kAny);
  EXPECT_FALSE(policy.allow_unix_sockets());
  EXPECT_THAT(policy.roots(), ElementsAre("/w"));
  EXPECT_EQ(policy.epoch(), 1u);
}

TEST(PolicyBuilderTest, DefaultModeFollowsThePreset) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      Policy ww, PolicyBuilder().AddRoot("/w").SetPreset(v1::PRESET_WORKSPACE_WRITE).Build());
  EXPECT_EQ(ww.mode(), v1::MODE_ON_REQUEST);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      Policy full, PolicyBuilder().AddRoot("/w").SetPresetName("danger-full-access").Build());
  EXPECT_EQ(full.mode(), v1::MODE_NEVER);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(Policy explicit_mode, PolicyBuilder()
                                                         .AddRoot("/w")
                                                         .SetPresetName("danger-full-access")
                                                         .SetModeName("default")
                                                         .Build());
  EXPECT_EQ(explicit_mode.mode(), v1::MODE_DEFAULT);
  EXPECT_TRUE(explicit_mode.mode_explicit());
}

TEST(PolicyBuilderTest, EveryOptionIsApplied) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(Policy policy, PolicyBuilder()
                                                  .SetPresetName("workspace-write")
                                                  .SetModeName("accept-edits")
                                                  .SetEditTools("write, edit,fmt")
                                                  .SetOutsideWorkspaceName("ask")
                                                  .SetReadScopeName("workspace")
                                                  .AddRoot("/w")
                                                  .AddRoot("/extra")
                                                  .AddProtectedPath("/w/secrets")
                                                  .AllowUnixSockets(true)
                                                  .Build());
  EXPECT_EQ(policy.preset(), v1::PRESET_WORKSPACE_WRITE);
  EXPECT_EQ(policy.mode(), v1::MODE_ACCEPT_EDITS);
  EXPECT_THAT(policy.edit_tools(), ElementsAre("write", "edit", "fmt"));
  EXPECT_TRUE(policy.IsEditTool("fmt"));
  EXPECT_FALSE(policy.IsEditTool("bash"));
  EXPECT_EQ(policy.outside_workspace(), OutsideWorkspace::kAsk);
  EXPECT_EQ(policy.read_scope(), ReadScope::kWorkspace);
  EXPECT_THAT(policy.roots(), ElementsAre("/w", "/extra"));
  EXPECT_THAT(policy.protected_paths(), ElementsAre("/w/secrets"));
  EXPECT_TRUE(policy.allow_unix_sockets());
  EXPECT_THAT(policy.Describe(), HasSubstr("preset workspace-write, mode accept-edits"));
}

TEST(PolicyBuilderTest, KeepsTheFirstError) {
  absl::StatusOr<Policy> policy = PolicyBuilder()
                                      .SetPresetName("root-access")
                                      .SetModeName("sometimes")
                                      .AddRoot("/w")
                                      .Build();
  EXPECT_THAT(policy, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("root-access")));
  EXPECT_THAT(policy.status().message(), ::testing::Not(HasSubstr("sometimes")));
}

TEST(PolicyBuilderTest, RejectsInvalidValues) {
  const struct {
    const char* name;
    PolicyBuilder builder;
    const char* message;
  } cases[] = {
      {"no root", PolicyBuilder(), "at least one root"},
      {"relative root", PolicyBuilder().AddRoot("w"), "not an absolute path"},
      {"dotdot root", PolicyBuilder().AddRoot("/w/../etc"), "not canonical"},
      {"empty component", PolicyBuilder().AddRoot("/w//x"), "not canonical"},
      {"nul root", PolicyBuilder().AddRoot(absl::string_view("/w\0x", 4)), "NUL"},
      {"relative protect", PolicyBuilder().AddRoot("/w").AddProtectedPath("x"), "absolute"},
      {"mode", PolicyBuilder().AddRoot("/w").SetModeName("always"), "unknown mode"},
      {"mode value", PolicyBuilder().AddRoot("/w").SetMode(static_cast<v1::Mode>(9)),
       "invalid mode"},
      {"preset value",
       PolicyBuilder().AddRoot("/w").SetPreset(v1::PRESET_UNSPECIFIED), "invalid preset"},
      {"outside", PolicyBuilder().AddRoot("/w").SetOutsideWorkspaceName("allow"),
       "--outside-workspace"},
      {"read scope", PolicyBuilder().AddRoot("/w").SetReadScopeName("none"), "--read-scope"},
      {"edit tools empty entry", PolicyBuilder().AddRoot("/w").SetEditTools("write,,edit"),
       "empty"},
      {"edit tools bad name", PolicyBuilder().AddRoot("/w").SetEditTools("wri te"),
       "may hold only"},
  };
  for (const auto& c : cases) {
    EXPECT_THAT(c.builder.Build(),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)))
        << c.name;
  }
}

TEST(PolicyBuilderTest, AChangeMakesANewPolicyWithAHigherEpoch) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(Policy first, PolicyBuilder().AddRoot("/w").Build());
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      Policy second, PolicyBuilder(first).SetPreset(v1::PRESET_DANGER_FULL_ACCESS).Build());
  EXPECT_EQ(first.preset(), v1::PRESET_READ_ONLY);  // the old one is untouched
  EXPECT_EQ(second.preset(), v1::PRESET_DANGER_FULL_ACCESS);
  EXPECT_EQ(second.mode(), v1::MODE_NEVER);  // a defaulted mode follows the new preset
  EXPECT_EQ(second.epoch(), first.epoch() + 1);
  EXPECT_THAT(second.roots(), ElementsAre("/w"));
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      Policy third, PolicyBuilder(second).SetPreset(v1::PRESET_WORKSPACE_WRITE).Build());
  EXPECT_EQ(third.epoch(), 3u);
  EXPECT_EQ(third.mode(), v1::MODE_ON_REQUEST);

  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      Policy pinned, PolicyBuilder().AddRoot("/w").SetMode(v1::MODE_DEFAULT).Build());
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      Policy changed, PolicyBuilder(pinned).SetPreset(v1::PRESET_DANGER_FULL_ACCESS).Build());
  EXPECT_EQ(changed.mode(), v1::MODE_DEFAULT);  // an explicit mode stays
}

TEST(PolicyBuilderTest, ApplyOptionsTakesWhatWasGivenAndKeepsTheRest) {
  PolicyOptions options;
  AIRLOCK_ASSERT_OK_AND_ASSIGN(Policy defaults,
                               PolicyBuilder().ApplyOptions(options).AddRoot("/w").Build());
  EXPECT_EQ(defaults.preset(), v1::PRESET_READ_ONLY);
  EXPECT_EQ(defaults.mode(), v1::MODE_ON_REQUEST);
  EXPECT_THAT(defaults.edit_tools(), ElementsAre("write", "edit"));
  EXPECT_EQ(defaults.outside_workspace(), OutsideWorkspace::kDeny);
  EXPECT_EQ(defaults.read_scope(), ReadScope::kAny);

  options.preset = "danger-full-access";
  options.edit_tools = "fmt";
  options.outside_workspace = "ask";
  options.read_scope = "workspace";
  options.allow_unix_sockets = true;
  AIRLOCK_ASSERT_OK_AND_ASSIGN(Policy given,
                               PolicyBuilder().ApplyOptions(options).AddRoot("/w").Build());
  EXPECT_EQ(given.preset(), v1::PRESET_DANGER_FULL_ACCESS);
  EXPECT_EQ(given.mode(), v1::MODE_NEVER);
  EXPECT_THAT(given.edit_tools(), ElementsAre("fmt"));
  EXPECT_EQ(given.outside_workspace(), OutsideWorkspace::kAsk);
  EXPECT_EQ(given.read_scope(), ReadScope::kWorkspace);
  EXPECT_TRUE(given.allow_unix_sockets());

  options.mode = "sometimes";
  EXPECT_THAT(PolicyBuilder().ApplyOptions(options).AddRoot("/w").Build(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("sometimes")));
}

TEST(PolicyNamesTest, ParseEveryName) {
  EXPECT_THAT(ParsePresetName("read-only"), IsOk());
  EXPECT_EQ(*ParsePresetName("workspace-write"), v1::PRESET_WORKSPACE_WRITE);
  EXPECT_THAT(ParsePresetName("Read-Only"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(*ParseModeName("accept-edits"), v1::MODE_ACCEPT_EDITS);
  EXPECT_EQ(*ParseModeName("never"), v1::MODE_NEVER);
  EXPECT_THAT(ParseModeName(""), StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace airlock::broker
