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

TEST(SessionStoreTest, CallsAndResultsAreWrittenInOrderByTheWriterAndDurableAfterFlush) {
  // Record* hands them to the writer thread; Flush waits for it and for the sync. Many
  // records from several threads all arrive, whole lines, each thread's in its order.
  testing::TempDir home;
  const std::string dir = home.Child("sessions");
  AIRLOCK_ASSERT_OK_AND_ASSIGN(auto store, SessionStore::Create(dir, "s3", "read-only", "/w"));
  constexpr int kThreads = 4, kCalls = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&store, t] {
      for (int i = 0; i < kCalls; ++i) {
        v1::ToolCallRecord call;
        call.set_request_id(static_cast<uint64_t>(t * kCalls + i + 1));  // 0 is not printed
        call.set_tool("write");
        EXPECT_THAT(store->RecordToolCall(call), IsOk());
        v1::ToolResultRecord result;
        result.set_request_id(static_cast<uint64_t>(t * kCalls + i + 1));
        result.set_ok(true);
        EXPECT_THAT(store->RecordToolResult(result), IsOk());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_THAT(store->Flush(), IsOk());
  const std::string bytes = testing::ReadFileOrMissing(store->path());
  AIRLOCK_ASSERT_OK_AND_ASSIGN(SessionStore::Parsed parsed, SessionStore::Parse(bytes, "s3"));
  EXPECT_EQ(parsed.entries, static_cast<size_t>(2 * kThreads * kCalls));
  // Each thread's call precedes its result, and its requests keep their order.
  std::vector<int64_t> last(kThreads, -1);
  size_t at = 0;
  while ((at = bytes.find("\"requestId\":\"", at)) != std::string::npos) {
    at += 13;
    const int64_t id = std::stoll(bytes.substr(at));
    const int t = static_cast<int>((id - 1) / kCalls);
    EXPECT_GE(id, last[t]) << "request " << id << " after " << last[t];
    last[t] = id;
  }
  EXPECT_NE(bytes.find("\"toolCall\":{\"requestId\":\"1\""), std::string::npos);
  EXPECT_LT(bytes.find("\"toolCall\":{\"requestId\":\"1\""),
            bytes.find("\"toolResult\":{\"requestId\":\"1\""));
}

TEST(SessionStoreTest, ASnapshotIsWrittenAfterTheCallsQueuedBeforeIt) {
  testing::TempDir home;
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      auto store, SessionStore::Create(home.Child("sessions"), "s4", "read-only", "/w"));
  v1::ToolCallRecord call;
  call.set_request_id(1);
  call.set_tool("read");
  ASSERT_THAT(store->RecordToolCall(call), IsOk());
  ASSERT_THAT(store->RecordContextIfChanged(Snapshot("workspace-write")), IsOk());
  // Durable when RecordContextIfChanged returns, and after the call queued before it.
  const std::string bytes = testing::ReadFileOrMissing(store->path());
  ASSERT_NE(bytes.find("\"toolCall\""), std::string::npos) << bytes;
  ASSERT_NE(bytes.find("\"context\""), std::string::npos) << bytes;
  EXPECT_LT(bytes.find("\"toolCall\""), bytes.find("\"context\""));
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
