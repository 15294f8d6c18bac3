// `airlock audit verify|show` on real files, as root and as an unprivileged user: exit 0 for an
// intact log, 1 (saying where and why) for a tampered, cut or unsealed one, 2 for unusable
// input. The logs are written by the broker's own AuditLog in this process.
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "broker/audit/audit_crypto.h"
#include "broker/audit/audit_key.h"
#include "broker/audit/audit_log.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/harness.h"
#include "tests/testing/temp_dir.h"

namespace airlock::integration {
namespace {

using broker::audit::AuditEvent;
using broker::audit::AuditKey;
using broker::audit::AuditLog;
using broker::audit::AuditLogOptions;
using broker::audit::AuditRecord;
using broker::audit::SecretBytes;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kHexKey[] = "8f1c2a9b7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a";
constexpr char kSession[] = "integration-session";

AuditKey KeyFromHex(const std::string& hex) {
  AuditKey key;
  auto master = broker::audit::ParseAuditKeyMaterial(hex, "test");
  if (!master.ok()) std::abort();
  key.master = std::move(*master);
  return key;
}

class AuditCommandTest : public ::testing::TestWithParam<RunAs> {
 protected:
  RunOptions Options() const {
    RunOptions options;
    options.run_as = GetParam();
    options.env = {absl::StrCat("AIRLOCK_HOME=", scratch_.Child("home")),
                   absl::StrCat("HOME=", scratch_.path())};
    return options;
  }

  // A key file owned by the identity under test, mode `mode`.
  std::string KeyFile(const std::string& name, mode_t mode) {
    scratch_.Write(name, std::string(kHexKey) + "\n");
    const std::string path = scratch_.Child(name);
    EXPECT_EQ(::chmod(path.c_str(), mode), 0);
    return path;
  }

  // Hands a file written by this process over to the identity under test.
  void GiveAway(const std::string& path) {
    if (GetParam() == RunAs::kUnprivileged) {
      ASSERT_EQ(::chown(path.c_str(), kUnprivilegedUid, kUnprivilegedGid), 0);
    }
  }

  // A sealed log of a small run; `target` lets a test put hostile bytes in a record.
  std::string WriteLog(const std::string& name, bool seal = true,
                       const std::string& target = "/w/a.txt") {
    const std::string path = scratch_.Child(name);
    AuditLogOptions options;
    options.epoch_max_records = 3;
    options.epoch_max_duration = absl::ZeroDuration();
    auto log = AuditLog::Open(path, KeyFromHex(kHexKey), kSession, options);
    EXPECT_TRUE(log.ok()) << log.status();
    if (!log.ok()) return path;
    AuditRecord start;
    start.event = AuditEvent::kRunStart;
    start.preset = "workspace-write";
    EXPECT_TRUE((*log)->Append(start).ok());
    for (int i = 0; i < 3; ++i) {
      AuditRecord request;
      request.event = AuditEvent::kRequest;
      request.tool = "write";
      request.target = target;
      request.request_id = static_cast<uint64_t>(i);
      EXPECT_TRUE((*log)->Append(request).ok());
      AuditRecord decision = request;
      decision.event = AuditEvent::kDecision;
      decision.decision = "allow";
      decision.rule = "in-authority";
      decision.content_sha256 = broker::audit::Sha256Hex("new content");
      EXPECT_TRUE((*log)->Append(decision).ok());
    }
    if (seal) {
      EXPECT_TRUE((*log)->Seal().ok());
    }
    log->reset();
    GiveAway(path);
    return path;
  }

  std::vector<std::string> ReadLines(const std::string& path) {
    const std::string content = testing::ReadFileOrMissing(path);
    std::vector<std::string> lines;
    size_t at = 0;
    while (at < content.size()) {
      size_t end = content.find('\n', at);
      if (end == std::string::npos) end = content.size() - 1;
      lines.push_back(content.substr(at, end + 1 - at));
      at = end + 1;
    }
    return lines;
  }

  void Rewrite(const std::string& path, const std::string& content) {
    testing::WriteFileOrDie(path, content);
    GiveAway(path);
  }

  CommandResult Verify(const std::string& log, const std::string& key_file,
                       std::vector<std::string> extra_env = {}) {
    RunOptions options = Options();
    for (std::string& entry : extra_env) options.env.push_back(std::move(entry));
    std::vector<std::string> args = {"audit", "verify", log};
    if (!key_file.empty()) {
      args.push_back("--key-file");
      args.push_back(key_file);
    }
    return RunAirlock(args, options);
  }

  Scratch scratch_{GetParam()};
};

TEST_P(AuditCommandTest, IntactLogExitsZeroWithASummary) {
  const std::string log = WriteLog("audit.jsonl");
  CommandResult result = Verify(log, KeyFile("key", 0600));
  EXPECT_EQ(result.exit_code, 0) << result;
  EXPECT_THAT(result.out, HasSubstr("intact: "));
  EXPECT_THAT(result.out, HasSubstr(absl::StrCat("session ", kSession, ": 10 records verified")));
  EXPECT_THAT(result.out, HasSubstr("1 seal(s)"));
}

TEST_P(AuditCommandTest, KeyFromTheEnvironmentWorksToo) {
  const std::string log = WriteLog("audit.jsonl");
  CommandResult result = Verify(log, "", {absl::StrCat("AIRLOCK_AUDIT_KEY=", kHexKey)});
  EXPECT_EQ(result.exit_code, 0) << result;
}

TEST_P(AuditCommandTest, EditedRecordExitsOneNamingTheLine) {
  const std::string log = WriteLog("audit.jsonl");
  std::vector<std::string> lines = ReadLines(log);
  const size_t at = lines[2].find("in-authority");
  ASSERT_NE(at, std::string::npos);
  lines[2][at] = 'X';
  std::string content;
  for (const std::string& line : lines) content += line;
  Rewrite(log, content);
  CommandResult result = Verify(log, KeyFile("key", 0600));
  EXPECT_EQ(result.exit_code, 1) << result;
  EXPECT_THAT(result.out, HasSubstr("NOT INTACT"));
  EXPECT_THAT(result.out, HasSubstr("line 3 (seq 3): MAC"));
}

TEST_P(AuditCommandTest, DeletedSwappedAndCutRecordsExitOneWithTheReason) {
  const std::string key = KeyFile("key", 0600);
  const std::string log = WriteLog("audit.jsonl");
  const std::vector<std::string> lines = ReadLines(log);
  struct Case {
    std::string name;
    std::vector<std::string> lines;
    std::string expected;
  };
  std::vector<Case> cases;
  {
    std::vector<std::string> deleted = lines;
    deleted.erase(deleted.begin() + 1);
    cases.push_back({"deleted", deleted, "line 2 (seq 3): sequence gap"});
  }
  {
    std::vector<std::string> swapped = lines;
    std::swap(swapped[1], swapped[2]);
    cases.push_back({"swapped", swapped, "line 2 (seq 3): order"});
  }
  {
    std::vector<std::string> duplicated = lines;
    duplicated.insert(duplicated.begin() + 2, duplicated[1]);
    cases.push_back({"duplicated", duplicated, "line 3 (seq 2): order"});
  }
  {
    std::vector<std::string> unsealed = lines;
    unsealed.pop_back();
    cases.push_back({"unsealed", unsealed, "unsealed"});
  }
  {
    std::vector<std::string> torn = lines;
    torn.back().resize(torn.back().size() / 2);
    cases.push_back({"torn", torn, "truncated"});
  }
  for (const Case& c : cases) {
    std::string content;
    for (const std::string& line : c.lines) content += line;
    Rewrite(log, content);
    CommandResult result = Verify(log, key);
    EXPECT_EQ(result.exit_code, 1) << c.name << ": " << result;
    EXPECT_THAT(result.out, HasSubstr(c.expected)) << c.name << ": " << result;
  }
}

TEST_P(AuditCommandTest, WrongKeyExitsOne) {
  const std::string log = WriteLog("audit.jsonl");
  scratch_.Write("other", std::string(64, 'a'));
  ASSERT_EQ(::chmod(scratch_.Child("other").c_str(), 0600), 0);
  CommandResult result = Verify(log, scratch_.Child("other"));
  EXPECT_EQ(result.exit_code, 1) << result;
  EXPECT_THAT(result.out, HasSubstr("line 1 (seq 1): MAC"));
}

TEST_P(AuditCommandTest, UnusableInputExitsTwo) {
  const std::string log = WriteLog("audit.jsonl");
  const std::string key = KeyFile("key", 0600);

  CommandResult missing_log = Verify(scratch_.Child("no-such-log"), key);
  EXPECT_EQ(missing_log.exit_code, 2) << missing_log;
  EXPECT_THAT(missing_log.err, HasSubstr("unusable log"));

  CommandResult loose_key = Verify(log, KeyFile("loose", 0644));
  EXPECT_EQ(loose_key.exit_code, 2) << loose_key;
  EXPECT_THAT(loose_key.err, HasSubstr("0600"));

  CommandResult missing_key = Verify(log, scratch_.Child("no-such-key"));
  EXPECT_EQ(missing_key.exit_code, 2) << missing_key;

  CommandResult no_key = Verify(log, "");
  EXPECT_EQ(no_key.exit_code, 2) << no_key;
  EXPECT_THAT(no_key.err, HasSubstr("--key-file"));
  struct stat st;
  EXPECT_NE(::stat(scratch_.Child("home/audit.key").c_str(), &st), 0) << "verify created a key";

  CommandResult usage = RunAirlock({"audit", "verify"}, Options());
  EXPECT_EQ(usage.exit_code, 64) << usage;
}

TEST_P(AuditCommandTest, AnotherUsersKeyOrLogIsUnusable) {
  if (GetParam() != RunAs::kUnprivileged) GTEST_SKIP() << "needs a second identity";
  const std::string log = WriteLog("audit.jsonl");
  // A root-owned 0600 key: unreadable, and not the user's own.
  testing::TempDir root_dir;
  const std::string root_key = root_dir.Child("key");
  testing::WriteFileOrDie(root_key, kHexKey);
  ASSERT_EQ(::chmod(root_key.c_str(), 0600), 0);
  ASSERT_EQ(::chmod(root_dir.path().c_str(), 0755), 0);
  CommandResult result = Verify(log, root_key);
  EXPECT_EQ(result.exit_code, 2) << result;
  // A root-owned 0600 log.
  ASSERT_EQ(::chown(log.c_str(), 0, 0), 0);
  result = Verify(log, KeyFile("key", 0600));
  EXPECT_EQ(result.exit_code, 2) << result;
}

TEST_P(AuditCommandTest, ALogStillBeingWrittenIsReportedAsSuch) {
  const std::string path = scratch_.Child("live.jsonl");
  auto log = AuditLog::Open(path, KeyFromHex(kHexKey), kSession);
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_TRUE((*log)->Append(AuditRecord{}).ok());
  GiveAway(path);
  CommandResult live = Verify(path, KeyFile("key", 0600));
  EXPECT_EQ(live.exit_code, 0) << live;
  EXPECT_THAT(live.out, HasSubstr("still being written by a running broker"));
  log->reset();  // the broker is gone, without a seal
  CommandResult dead = Verify(path, KeyFile("key", 0600));
  EXPECT_EQ(dead.exit_code, 1) << dead;
  EXPECT_THAT(dead.out, HasSubstr("unsealed"));
}

TEST_P(AuditCommandTest, ALineBeingWrittenIsTornOnlyOnceTheBrokerIsGone) {
  const std::string path = scratch_.Child("live.jsonl");
  auto log = AuditLog::Open(path, KeyFromHex(kHexKey), kSession);
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_TRUE((*log)->Append(AuditRecord{}).ok());
  // What a reader may see while the broker's write() of the next line is under way.
  Rewrite(path, testing::ReadFileOrMissing(path) + "{\"v\":1,\"seq\":2");
  CommandResult live = Verify(path, KeyFile("key", 0600));
  EXPECT_EQ(live.exit_code, 0) << live;
  EXPECT_THAT(live.out, HasSubstr("still being written by a running broker"));
  log->reset();
  CommandResult dead = Verify(path, KeyFile("key", 0600));
  EXPECT_EQ(dead.exit_code, 1) << dead;
  EXPECT_THAT(dead.out, HasSubstr("line 2: truncated"));
}

TEST_P(AuditCommandTest, RecoveryAfterACrashIsExplained) {
  const std::string path = WriteLog("audit.jsonl", /*seal=*/false);
  std::string content = testing::ReadFileOrMissing(path);
  Rewrite(path, content + "{\"v\":1,\"seq\":10,\"ti");  // the record being written at the kill
  ASSERT_EQ(::chown(path.c_str(), ::geteuid(), ::getegid()), 0);
  {
    AuditLogOptions options;
    options.epoch_max_duration = absl::ZeroDuration();
    auto log = AuditLog::Open(path, KeyFromHex(kHexKey), kSession, options);
    ASSERT_TRUE(log.ok()) << log.status();
    ASSERT_TRUE((*log)->Seal().ok());
  }
  GiveAway(path);
  CommandResult result = Verify(path, KeyFile("key", 0600));
  EXPECT_EQ(result.exit_code, 0) << result;
  EXPECT_THAT(result.out, HasSubstr("1 recovery record(s)"));
  EXPECT_THAT(result.out, HasSubstr("line 10 (seq 10) recovery"));
  EXPECT_THAT(result.out, HasSubstr("torn final record of 19 bytes after seq 9"));
}

TEST_P(AuditCommandTest, ShowListsRecordsWithControlCharactersEscaped) {
  const std::string log = WriteLog("audit.jsonl", true, "/w/\x1b[2J\x1b]0;pwned\x07\xe2\x80\xae.txt");
  CommandResult result = RunAirlock({"audit", "show", log}, Options());
  EXPECT_EQ(result.exit_code, 0) << result;
  EXPECT_THAT(result.out, HasSubstr("seq=1 "));
  EXPECT_THAT(result.out, HasSubstr("run_start"));
  EXPECT_THAT(result.out, HasSubstr("target=/w/\\x1b[2J\\x1b]0;pwned\\x07\\u{202e}.txt"));
  EXPECT_THAT(result.out, HasSubstr("seal"));
  EXPECT_THAT(result.out, Not(HasSubstr("\x1b")));
  EXPECT_THAT(result.out, Not(HasSubstr("\xe2\x80\xae")));

  CommandResult missing = RunAirlock({"audit", "show", scratch_.Child("nope")}, Options());
  EXPECT_EQ(missing.exit_code, 2) << missing;
}

INSTANTIATE_TEST_SUITE_P(Identities, AuditCommandTest, ::testing::ValuesIn(IdentitiesToTest()),
                         RunAsName);

}  // namespace
}  // namespace airlock::integration
