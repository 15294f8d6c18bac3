#include "broker/session/session_store.h"

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

v1::ContextSnapshot Snapshot(const std::string& preset) {
  v1::ContextSnapshot snapshot;
  snapshot.set_preset(preset);
  snapshot.set_mode("on-request");
  snapshot.add_roots("/w");
  snapshot.set_shell_network("none");
  snapshot.set_worker_network("host");
  return snapshot;
}

TEST(SessionStoreTest, CreateWritesAVersion2HeaderWithThePreset) {
  testing::TempDir home;
  const std::string dir = home.Child("sessions");
  AIRLOCK_ASSERT_OK_AND_ASSIGN(auto store, SessionStore::Create(dir, "abc", "workspace-write", "/w"));
  const std::string bytes = testing::ReadFileOrMissing(store->path());
  EXPECT_THAT(bytes, HasSubstr("\"version\":2"));
  EXPECT_THAT(bytes, HasSubstr("\"permissionPreset\":\"workspace-write\""));
  struct stat st;
  ASSERT_EQ(::stat(store->path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  // A second Create of the same id refuses rather than overwriting.
  EXPECT_THAT(SessionStore::Create(dir, "abc", "read-only", "/w"), ::testing::Not(IsOk()));
}

TEST(SessionStoreTest, SnapshotsOnlyWhenThePolicyChanges) {
  testing::TempDir home;
  const std::string dir = home.Child("sessions");
  AIRLOCK_ASSERT_OK_AND_ASSIGN(auto store, SessionStore::Create(dir, "s1", "read-only", "/w"));
  EXPECT_EQ(store->RecordContextIfChanged(Snapshot("read-only")).value_or(false), true);
  EXPECT_EQ(store->RecordContextIfChanged(Snapshot("read-only")).value_or(true), false);
  EXPECT_EQ(store->RecordContextIfChanged(Snapshot("workspace-write")).value_or(false), true);
  EXPECT_EQ(store->RecordedPreset(), "workspace-write");
}

TEST(SessionStoreTest, CallsAndResultsAreInTheFileAtOnceAndDurableAfterFlush) {
  // They are synced in the background, but written before Record* returns: a killed broker
  // loses none of them, and a resumed session reads them.
  testing::TempDir home;
  const std::string dir = home.Child("sessions");
  AIRLOCK_ASSERT_OK_AND_ASSIGN(auto store, SessionStore::Create(dir, "s3", "read-only", "/w"));
  v1::ToolCallRecord call;
  call.set_request_id(7);
  call.set_tool("write");
  ASSERT_THAT(store->RecordToolCall(call), IsOk());
  v1::ToolResultRecord result;
  result.set_request_id(7);
  result.set_ok(true);
  ASSERT_THAT(store->RecordToolResult(result), IsOk());
  const std::string bytes = testing::ReadFileOrMissing(store->path());
  EXPECT_THAT(bytes, HasSubstr("\"toolCall\""));
  EXPECT_THAT(bytes, HasSubstr("\"toolResult\""));
  ASSERT_THAT(store->Flush(), IsOk());
  AIRLOCK_ASSERT_OK_AND_ASSIGN(SessionStore::Parsed parsed, SessionStore::Parse(bytes, "s3"));
  EXPECT_EQ(parsed.entries, 2u);
}

TEST(SessionStoreTest, ResumeKeepsTheLastRecordedPreset) {
  testing::TempDir home;
  const std::string dir = home.Child("sessions");
  {
    AIRLOCK_ASSERT_OK_AND_ASSIGN(auto store, SessionStore::Create(dir, "s2", "read-only", "/w"));
    ASSERT_THAT(store->RecordContextIfChanged(Snapshot("workspace-write")), IsOk());
    v1::ToolCallRecord call;
    call.set_request_id(1);
    call.set_tool("read");
    call.set_path("a.txt");
    ASSERT_THAT(store->RecordToolCall(call), IsOk());
    v1::ToolResultRecord result;
    result.set_request_id(1);
    result.set_ok(true);
    ASSERT_THAT(store->RecordToolResult(result), IsOk());
  }
  AIRLOCK_ASSERT_OK_AND_ASSIGN(auto resumed, SessionStore::Resume(dir, "s2"));
  EXPECT_EQ(resumed->RecordedPreset(), "workspace-write");
  EXPECT_EQ(resumed->header().permission_preset(), "read-only");
}

struct Corrupt {
  const char* name;
  const char* bytes;
  const char* must_mention;
};

class SessionRejectionTest : public ::testing::TestWithParam<Corrupt> {};

TEST_P(SessionRejectionTest, IsRejectedAndTheFileIsUntouched) {
  testing::TempDir home;
  const std::string dir = home.Child("sessions");
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  const std::string path = dir + "/bad.jsonl";
  testing::WriteFileOrDie(path, GetParam().bytes);
  EXPECT_THAT(SessionStore::Resume(dir, "bad"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(GetParam().must_mention)));
  EXPECT_EQ(testing::ReadFileOrMissing(path), GetParam().bytes);
}

INSTANTIATE_TEST_SUITE_P(
    Bad, SessionRejectionTest,
    ::testing::Values(
        Corrupt{"Version1", "{\"version\":1,\"id\":\"bad\",\"permissionPreset\":\"read-only\"}\n",
                "unsupported session version 1"},
        Corrupt{"Version3", "{\"version\":3,\"id\":\"bad\",\"permissionPreset\":\"read-only\"}\n",
                "unsupported session version 3"},
        Corrupt{"MissingPreset", "{\"version\":2,\"id\":\"bad\"}\n", "no permissionPreset"},
        Corrupt{"InvalidPreset", "{\"version\":2,\"id\":\"bad\",\"permissionPreset\":\"all\"}\n",
                "invalid permissionPreset"},
        Corrupt{"UnknownField",
                "{\"version\":2,\"id\":\"bad\",\"permissionPreset\":\"read-only\",\"x\":1}\n", "x"},
        Corrupt{"WrongType",
                "{\"version\":\"two\",\"id\":\"bad\",\"permissionPreset\":\"read-only\"}\n",
                "version"},
        Corrupt{"Truncated",
                "{\"version\":2,\"id\":\"bad\",\"permissionPreset\":\"read-only\"}\n{\"context\":{\"pre",
                "truncated"},
        Corrupt{"BadEntry",
                "{\"version\":2,\"id\":\"bad\",\"permissionPreset\":\"read-only\"}\n{\"nope\":{}}\n",
                "line 2"},
        Corrupt{"BadSnapshotPreset",
                "{\"version\":2,\"id\":\"bad\",\"permissionPreset\":\"read-only\"}\n"
                "{\"context\":{\"preset\":\"root\"}}\n",
                "invalid preset"},
        Corrupt{"Empty", "", "empty"}),
    [](const ::testing::TestParamInfo<Corrupt>& info) { return info.param.name; });

TEST(SessionStoreTest, HostileSessionIdsAreRefused) {
  testing::TempDir home;
  for (const char* id : {"", "../x", "a/b", "a b", ".", "x\n"}) {
    EXPECT_THAT(SessionStore::Resume(home.path(), id), StatusIs(absl::StatusCode::kInvalidArgument))
        << id;
    EXPECT_THAT(SessionStore::Create(home.path(), id, "read-only", "/w"),
                StatusIs(absl::StatusCode::kInvalidArgument))
        << id;
  }
}

}  // namespace
}  // namespace airlock::broker
