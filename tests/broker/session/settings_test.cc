#include "broker/session/settings.h"

#include <sys/stat.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker {
namespace {

using ::airlock::testing::IsOk;
using ::airlock::testing::StatusIs;
using ::testing::HasSubstr;

TEST(SettingsTest, ParsesEveryDocumentedField) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      v1::Settings settings,
      ParseSettings(R"({"permissionPreset":"workspace-write","mode":"accept-edits",
                        "editTools":["write","edit","fmt"],"outsideWorkspace":"ask",
                        "protect":["secrets"],"approver":"command:/usr/bin/ok",
                        "approvalTimeoutSeconds":30,"readScope":"workspace"})",
                    "settings.json"));
  EXPECT_EQ(settings.permission_preset(), "workspace-write");
  EXPECT_EQ(settings.mode(), "accept-edits");
  EXPECT_EQ(settings.edit_tools_size(), 3);
  EXPECT_EQ(settings.approval_timeout_seconds(), 30u);
}

TEST(SettingsTest, EmptyObjectIsAllDefaults) {
  EXPECT_THAT(ParseSettings("{}", "s"), IsOk());
}

struct BadCase {
  const char* json;
  const char* must_mention;
};

class SettingsRejectionTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(SettingsRejectionTest, IsRejectedNamingTheProblem) {
  auto settings = ParseSettings(GetParam().json, "settings.json");
  EXPECT_THAT(settings, StatusIs(absl::StatusCode::kInvalidArgument,
                                 HasSubstr(GetParam().must_mention)));
  EXPECT_THAT(std::string(settings.status().message()), HasSubstr("settings.json"));
}

INSTANTIATE_TEST_SUITE_P(
    Bad, SettingsRejectionTest,
    ::testing::Values(BadCase{R"({"permissionPreset":"root"})", "permissionPreset"},
                      BadCase{R"({"permisionPreset":"read-only"})", "permisionPreset"},
                      BadCase{R"({"mode":"yolo"})", "mode"},
                      BadCase{R"({"mode":3})", "mode"},
                      BadCase{R"({"editTools":"write"})", "editTools"},
                      BadCase{R"({"approvalTimeoutSeconds":"soon"})", "approval_timeout_seconds"},
                      BadCase{R"({"outsideWorkspace":"allow"})", "outsideWorkspace"},
                      BadCase{R"({"approver":"socket:"})", "approver"},
                      BadCase{R"({"readScope":"all"})", "readScope"},
                      BadCase{R"(not json)", "settings.json"},
                      BadCase{R"([1,2])", "settings.json"}));

TEST(SettingsTest, MissingFileIsEmptySettings) {
  testing::TempDir dir;
  AIRLOCK_ASSERT_OK_AND_ASSIGN(v1::Settings settings, LoadSettings(dir.Child("settings.json")));
  EXPECT_EQ(settings.permission_preset(), "");
}

TEST(SettingsTest, InvalidFileRefusesAndIsLeftAsItWas) {
  testing::TempDir dir;
  const std::string path = dir.Child("settings.json");
  const std::string bytes = R"({"permissionPreset":"everything"})";
  testing::WriteFileOrDie(path, bytes);
  EXPECT_THAT(LoadSettings(path), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(testing::ReadFileOrMissing(path), bytes);
}

TEST(SettingsTest, SymlinkedSettingsAreRefused) {
  testing::TempDir dir;
  testing::WriteFileOrDie(dir.Child("real.json"), "{}");
  ASSERT_EQ(::symlink(dir.Child("real.json").c_str(), dir.Child("settings.json").c_str()), 0);
  EXPECT_THAT(LoadSettings(dir.Child("settings.json")), ::testing::Not(IsOk()));
}

}  // namespace
}  // namespace airlock::broker
