// The signed log end to end: what the writer produces verifies, and every kind of tampering,
// loss and crash is detected with the right reason.
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "broker/audit/audit_crypto.h"
#include "broker/audit/audit_format.h"
#include "broker/audit/audit_log.h"
#include "broker/audit/audit_verifier.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker::audit {
namespace {

using ::airlock::testing::IsOk;
using ::airlock::testing::ReadFileOrMissing;
using ::airlock::testing::StatusIs;
using ::airlock::testing::TempDir;
using ::airlock::testing::WriteFileOrDie;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kSession[] = "0123456789abcdef01234567";
constexpr char kSecretContent[] = "TOP-SECRET file content: hunter2";

AuditKey TestKey(char fill = 'k') {
  AuditKey key;
  key.master = SecretBytes(std::string(32, fill));
  key.source = "test";
  return key;
}

// Open consumes the master key it is given; tests keep theirs for verifying.
AuditKey Copy(const AuditKey& key) {
  AuditKey copy;
  copy.master = key.master.Clone();
  copy.source = key.source;
  copy.path = key.path;
  return copy;
}

AuditLogOptions SmallEpochs(uint64_t records) {
  AuditLogOptions options;
  options.epoch_max_records = records;
  options.epoch_max_duration = absl::ZeroDuration();
  return options;
}

std::vector<std::string> Lines(const std::string& content) {
  std::vector<std::string> lines;
  size_t at = 0;
  while (at < content.size()) {
    size_t newline = content.find('\n', at);
    if (newline == std::string::npos) newline = content.size() - 1;
    lines.push_back(content.substr(at, newline + 1 - at));
    at = newline + 1;
  }
  return lines;
}

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += line;
  return out;
}

// A run as the broker would log it: 8 records, epochs of 3, sealed. 11 lines:
// 1-3 records, 4 epoch_close, 5-7 records, 8 epoch_close, 9-10 records, 11 seal.
void WriteSampleLog(const std::string& path, const AuditKey& key,
                    const std::string& session = kSession) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(path, Copy(key), session, SmallEpochs(3)));
  AuditRecord record;
  record.event = AuditEvent::kRunStart;
  record.preset = "workspace-write";
  record.mode = "on-request";
  record.detail = "workspace /w";
  ASSERT_THAT(log->Append(record), IsOk());
  for (int i = 0; i < 2; ++i) {
    AuditRecord request;
    request.event = AuditEvent::kRequest;
    request.channel = 1;
    request.request_id = static_cast<uint64_t>(10 + i);
    request.tool = "write";
    request.target = absl::StrCat("/w/file", i, ".txt");
    ASSERT_THAT(log->Append(request), IsOk());
    AuditRecord decision = request;
    decision.event = AuditEvent::kDecision;
    decision.decision = "allow";
    decision.rule = "in-authority";
    decision.content_sha256 = Sha256Hex(kSecretContent);
    ASSERT_THAT(log->Append(decision), IsOk());
    AuditRecord result = request;
    result.event = AuditEvent::kResult;
    result.decision = "ok";
    result.content_sha256 = Sha256Hex(kSecretContent);
    result.previous_sha256 = "absent";
    ASSERT_THAT(log->Append(result, Durability::kBuffered), IsOk());
  }
  AuditRecord end;
  end.event = AuditEvent::kRunEnd;
  end.exit_code = 0;
  ASSERT_THAT(log->Append(end), IsOk());
  ASSERT_THAT(log->Seal("worker exited 0"), IsOk());
}

VerifyResult Verify(const std::string& content, const AuditKey& key) {
  absl::StatusOr<VerifyResult> result = VerifyAuditLog(content, key.master);
  EXPECT_THAT(result, IsOk());
  return result.ok() ? std::move(*result) : VerifyResult{};
}

// Replaces `from` by `to` in a line's signed prefix and signs it again with `key`.
std::string ReSign(const std::string& line, const std::string& from, const std::string& to,
                   absl::string_view key) {
  const std::string body = line.substr(0, line.size() - 1);  // no newline
  absl::string_view prefix, mac;
  EXPECT_TRUE(SplitSignedLine(body, &prefix, &mac));
  std::string changed(prefix);
  const size_t at = changed.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) changed.replace(at, from.size(), to);
  absl::StatusOr<Mac> new_mac = HmacSha256(key, changed);
  EXPECT_THAT(new_mac, IsOk());
  return absl::StrCat(changed, kMacFieldOpen, MacHex(*new_mac), kMacFieldClose, "\n");
}

SecretBytes EpochKey(const AuditKey& key, uint64_t epoch) {
  absl::StatusOr<SecretBytes> current = DeriveLogKey(key.master, kSession);
  EXPECT_THAT(current, IsOk());
  SecretBytes out = std::move(*current);
  for (uint64_t i = 0; i < epoch; ++i) {
    absl::StatusOr<SecretBytes> next = RatchetKey(out);
    EXPECT_THAT(next, IsOk());
    out = std::move(*next);
  }
  return out;
}

class AuditLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteSampleLog(path_, key_);
    sample_ = ReadFileOrMissing(path_);
    ASSERT_EQ(Lines(sample_).size(), 11u) << sample_;
  }

  TempDir dir_;
  const std::string path_ = dir_.Child("audit.jsonl");
  const AuditKey key_ = TestKey();
  std::string sample_;
};

TEST(AuditLogKeyTest, OpenWipesTheMasterKeyItWasGiven) {
  TempDir dir;
  AuditKey key = TestKey();
  key.path = "/k";
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(dir.Child("log"), key, kSession));
  EXPECT_TRUE(key.master.empty());
  EXPECT_EQ(key.path, "/k");
  EXPECT_NE(log->CurrentKeyForTesting(), std::string(32, 'k'));
  // Also when Open refuses.
  AuditKey again = TestKey();
  EXPECT_THAT(AuditLog::Open(dir.Child("log"), again, kSession), Not(IsOk()));
  EXPECT_TRUE(again.master.empty());
}

TEST_F(AuditLogTest, SampleLogVerifies) {
  VerifyResult result = Verify(sample_, key_);
  EXPECT_TRUE(result.intact()) << result.detail;
  EXPECT_EQ(result.records, 11u);
  EXPECT_EQ(result.last_seq, 11u);
  EXPECT_EQ(result.epochs_closed, 3u);
  EXPECT_EQ(result.seals, 1u);
  EXPECT_EQ(result.session, kSession);
  EXPECT_TRUE(result.notes.empty());
}

TEST_F(AuditLogTest, LinesHaveTheDocumentedShape) {
  std::vector<std::string> lines = Lines(sample_);
  EXPECT_TRUE(absl::StartsWith(lines[0], absl::StrCat("{\"v\":1,\"seq\":1,\"time\":\"")))
      << lines[0];
  EXPECT_THAT(lines[0], HasSubstr(absl::StrCat("\"session\":\"", kSession, "\"")));
  EXPECT_THAT(lines[0], HasSubstr(absl::StrCat("\"uid\":", ::geteuid(), ",\"user\":\"")));
  EXPECT_THAT(lines[0], HasSubstr(absl::StrCat("\"prev\":\"", kGenesisPrev, "\"")));
  EXPECT_THAT(lines[3], HasSubstr("\"event\":\"epoch_close\",\"records\":3"));
  EXPECT_THAT(lines[4], HasSubstr("\"epoch\":1"));
  EXPECT_THAT(lines[10], HasSubstr("\"event\":\"seal\",\"records\":2"));
  EXPECT_THAT(lines[1], HasSubstr(absl::StrCat("\"prev\":\"", Sha256Hex(lines[0]), "\"")));
  EXPECT_THAT(lines[2], HasSubstr("\"decision\":\"allow\",\"rule\":\"in-authority\""));
  for (const std::string& line : lines) {
    // The MAC covers exactly the bytes before `,"mac":"`.
    const std::string body = line.substr(0, line.size() - 1);
    absl::string_view prefix, mac;
    ASSERT_TRUE(SplitSignedLine(body, &prefix, &mac));
    EXPECT_EQ(body.find(",\"mac\":\""), prefix.size());
  }
  struct stat st;
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST_F(AuditLogTest, FlippingAnyByteIsDetected) {
  for (unsigned char mask : {0x01, 0x20, 0xff}) {
    for (size_t i = 0; i < sample_.size(); ++i) {
      std::string tampered = sample_;
      tampered[i] = static_cast<char>(tampered[i] ^ mask);
      VerifyResult result = Verify(tampered, key_);
      ASSERT_FALSE(result.intact()) << "flip 0x" << std::hex << int{mask} << " at byte "
                                    << std::dec << i << " went unnoticed";
      EXPECT_GT(result.line, 0u);
    }
  }
}

TEST_F(AuditLogTest, DeletedRecordIsASequenceGap) {
  std::vector<std::string> lines = Lines(sample_);
  lines.erase(lines.begin() + 5);  // seq 6
  VerifyResult result = Verify(Join(lines), key_);
  EXPECT_EQ(result.problem, AuditProblem::kSequenceGap) << result.detail;
  EXPECT_EQ(result.line, 6u);
  EXPECT_EQ(result.seq, 7u);
  EXPECT_THAT(result.detail, HasSubstr("expected seq 6"));
}

TEST_F(AuditLogTest, DeletedFirstRecordIsASequenceGap) {
  std::vector<std::string> lines = Lines(sample_);
  lines.erase(lines.begin());
  VerifyResult result = Verify(Join(lines), key_);
  EXPECT_EQ(result.problem, AuditProblem::kSequenceGap) << result.detail;
  EXPECT_EQ(result.line, 1u);
}

TEST_F(AuditLogTest, DeletedEpochCloseIsASequenceGap) {
  std::vector<std::string> lines = Lines(sample_);
  lines.erase(lines.begin() + 3);  // the first epoch_close
  VerifyResult result = Verify(Join(lines), key_);
  EXPECT_EQ(result.problem, AuditProblem::kSequenceGap) << result.detail;
  EXPECT_EQ(result.line, 4u);
}

TEST_F(AuditLogTest, DeletedWholeEpochIsASequenceGap) {
  std::vector<std::string> lines = Lines(sample_);
  lines.erase(lines.begin() + 4, lines.begin() + 8);  // epoch 1 with its close
  VerifyResult result = Verify(Join(lines), key_);
  EXPECT_EQ(result.problem, AuditProblem::kSequenceGap) << result.detail;
  EXPECT_EQ(result.line, 5u);
}

TEST_F(AuditLogTest, InsertedForeignRecordsFailTheMac) {
  // From a log written with another key, and from another session's log with the same key:
  // both are well-formed records, neither was signed for this log.
  TempDir other;
  WriteSampleLog(other.Child("a"), TestKey('x'));
  WriteSampleLog(other.Child("b"), key_, "another-session");
  for (const std::string& source : {other.Child("a"), other.Child("b")}) {
    std::vector<std::string> lines = Lines(sample_);
    lines.insert(lines.begin() + 2, Lines(ReadFileOrMissing(source))[2]);
    VerifyResult result = Verify(Join(lines), key_);
    EXPECT_EQ(result.problem, AuditProblem::kMac) << result.detail;
    EXPECT_EQ(result.line, 3u);
  }
}

TEST_F(AuditLogTest, SwappedRecordsAreOutOfOrder) {
  std::vector<std::string> lines = Lines(sample_);
  std::swap(lines[1], lines[2]);
  VerifyResult result = Verify(Join(lines), key_);
  EXPECT_EQ(result.problem, AuditProblem::kOrder) << result.detail;
  EXPECT_EQ(result.line, 2u);
  EXPECT_THAT(result.detail, HasSubstr("reordered"));

  // Across an epoch boundary too.
  lines = Lines(sample_);
  std::swap(lines[2], lines[4]);
  result = Verify(Join(lines), key_);
  EXPECT_EQ(result.problem, AuditProblem::kOrder) << result.detail;
  EXPECT_EQ(result.line, 3u);
}

TEST_F(AuditLogTest, DuplicatedRecordIsOutOfOrder) {
  std::vector<std::string> lines = Lines(sample_);
  lines.insert(lines.begin() + 2, lines[1]);
  VerifyResult result = Verify(Join(lines), key_);
  EXPECT_EQ(result.problem, AuditProblem::kOrder) << result.detail;
  EXPECT_EQ(result.line, 3u);
  EXPECT_THAT(result.detail, HasSubstr("duplicated"));

  // A record of an earlier epoch replayed later.
  lines = Lines(sample_);
  lines.insert(lines.begin() + 6, lines[1]);
  result = Verify(Join(lines), key_);
  EXPECT_EQ(result.problem, AuditProblem::kOrder) << result.detail;
  EXPECT_EQ(result.line, 7u);
}

TEST_F(AuditLogTest, TruncationIsDetected) {
  // Mid-record: truncated.
  for (size_t cut : {size_t{1}, size_t{75}, size_t{200}}) {
    VerifyResult result = Verify(sample_.substr(0, sample_.size() - cut), key_);
    EXPECT_EQ(result.problem, AuditProblem::kTruncated) << cut << ": " << result.detail;
    EXPECT_EQ(result.line, 11u);
  }
  // At a record boundary: the seal is missing.
  std::vector<std::string> lines = Lines(sample_);
  lines.resize(7);
  VerifyResult result = Verify(Join(lines), key_);
  EXPECT_EQ(result.problem, AuditProblem::kUnsealed) << result.detail;
  EXPECT_EQ(result.seq, 7u);
  // Nothing at all.
  result = Verify("", key_);
  EXPECT_EQ(result.problem, AuditProblem::kTruncated);
}

TEST_F(AuditLogTest, WrongKeyFailsOnTheFirstRecord) {
  VerifyResult result = Verify(sample_, TestKey('w'));
  EXPECT_EQ(result.problem, AuditProblem::kMac);
  EXPECT_EQ(result.line, 1u);
  EXPECT_THAT(result.detail, HasSubstr("wrong key"));
}

TEST_F(AuditLogTest, ReplacedRecordWithAValidMacBreaksTheChain) {
  // Even with the right epoch key, a record whose `prev` does not link is caught.
  std::vector<std::string> lines = Lines(sample_);
  SecretBytes k0 = EpochKey(key_, 0);
  lines[2] = ReSign(lines[2], Sha256Hex(lines[1]), Sha256Hex("something else"), k0.view());
  VerifyResult result = Verify(Join(lines), key_);
  EXPECT_EQ(result.problem, AuditProblem::kChain) << result.detail;
  EXPECT_EQ(result.line, 3u);
}

TEST_F(AuditLogTest, TimeGoingBackwardsIsOutOfOrder) {
  std::vector<std::string> lines = Lines(sample_);
  const size_t at = lines[1].find("\"time\":\"") + 8;
  const std::string time = lines[1].substr(at, 27);
  SecretBytes k0 = EpochKey(key_, 0);
  lines[1] = ReSign(lines[1], time, "2000-01-01T00:00:00.000000Z", k0.view());
  lines[2] = ReSign(lines[2], Sha256Hex(Lines(sample_)[1]), Sha256Hex(lines[1]), k0.view());
  VerifyResult result = Verify(Join(lines), key_);
  EXPECT_EQ(result.problem, AuditProblem::kOrder) << result.detail;
  EXPECT_EQ(result.line, 2u);
  EXPECT_THAT(result.detail, HasSubstr("earlier"));
}

TEST(AuditLogForwardSecurityTest, TheCurrentKeyCannotReSignEarlierRecords) {
  TempDir dir;
  const std::string path = dir.Child("log");
  const AuditKey key = TestKey();
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(path, Copy(key), kSession, SmallEpochs(2)));
  for (int i = 0; i < 6; ++i) {
    AuditRecord record;
    record.tool = "write";
    record.target = absl::StrCat("/w/", i);
    ASSERT_THAT(log->Append(record), IsOk());
  }
  ASSERT_EQ(log->current_epoch(), 3u);
  // What an attacker who takes over the broker now finds in it.
  const std::string stolen = log->CurrentKeyForTesting();
  ASSERT_EQ(stolen, std::string(EpochKey(key, 3).view()));
  for (uint64_t epoch = 0; epoch < 3; ++epoch) {
    EXPECT_NE(stolen, std::string(EpochKey(key, epoch).view()));
  }
  ASSERT_THAT(log->Seal(), IsOk());
  EXPECT_EQ(log->CurrentKeyForTesting(), "");
  const std::string content = ReadFileOrMissing(path);
  ASSERT_TRUE(Verify(content, key).intact());

  // Rewrite record 1's target and re-sign it with the stolen key, fixing the chain after it
  // as well as that key allows: the verifier still rejects record 1.
  std::vector<std::string> lines = Lines(content);
  std::vector<std::string> forged = lines;
  forged[0] = ReSign(lines[0], "/w/0", "/w/X", stolen);
  forged[1] = ReSign(lines[1], Sha256Hex(lines[0]), Sha256Hex(forged[0]), stolen);
  VerifyResult result = Verify(Join(forged), key);
  EXPECT_EQ(result.problem, AuditProblem::kMac) << result.detail;
  EXPECT_EQ(result.line, 1u);

  // Control: with the epoch-0 key (which the broker erased long ago) the same edit passes the
  // MAC checks of records 1 and 2, so the test above fails for the right reason. (The chain
  // still breaks at the epoch's close record, which was not re-signed.)
  SecretBytes k0 = EpochKey(key, 0);
  forged[0] = ReSign(lines[0], "/w/0", "/w/X", k0.view());
  forged[1] = ReSign(lines[1], Sha256Hex(lines[0]), Sha256Hex(forged[0]), k0.view());
  result = Verify(Join(forged), key);
  EXPECT_EQ(result.problem, AuditProblem::kChain) << result.detail;
  EXPECT_EQ(result.line, 3u);
}

TEST(AuditLogContentTest, NoContentOrKeyBytesReachTheLog) {
  TempDir dir;
  const std::string path = dir.Child("log");
  const AuditKey key = TestKey('s');
  WriteSampleLog(path, key);
  const std::string content = ReadFileOrMissing(path);
  EXPECT_THAT(content, Not(HasSubstr(kSecretContent)));
  EXPECT_THAT(content, HasSubstr(Sha256Hex(kSecretContent)));
  EXPECT_THAT(content, Not(HasSubstr(std::string(key.master.view()))));
  EXPECT_THAT(content, Not(HasSubstr(absl::BytesToHexString(key.master.view()))));
  for (uint64_t epoch = 0; epoch < 5; ++epoch) {
    SecretBytes k = EpochKey(key, epoch);
    EXPECT_THAT(content, Not(HasSubstr(absl::BytesToHexString(k.view()))));
    EXPECT_THAT(content, Not(HasSubstr(std::string(k.view()))));
  }
}

TEST(AuditLogOpenTest, TornTailIsCutAndExplainedByARecoveryRecord) {
  TempDir dir;
  const std::string path = dir.Child("log");
  const AuditKey key = TestKey();
  {
    AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                                 AuditLog::Open(path, Copy(key), kSession, SmallEpochs(3)));
    for (int i = 0; i < 4; ++i) ASSERT_THAT(log->Append(AuditRecord{}), IsOk());
    // The broker dies here: no seal. Then a half-written record.
  }
  const std::string before = ReadFileOrMissing(path);
  const std::string torn = "{\"v\":1,\"seq\":6,\"time\":\"2026-";
  WriteFileOrDie(path, before + torn);
  EXPECT_EQ(Verify(ReadFileOrMissing(path), key).problem, AuditProblem::kTruncated);

  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(path, Copy(key), kSession, SmallEpochs(3)));
  EXPECT_EQ(log->open_outcome(), OpenOutcome::kRecovered);
  EXPECT_THAT(log->recovery_detail(), HasSubstr(absl::StrCat("torn final record of ",
                                                             torn.size(), " bytes after seq 5")));
  AuditRecord start;
  start.event = AuditEvent::kRunStart;
  ASSERT_THAT(log->Append(start), IsOk());
  ASSERT_THAT(log->Seal(), IsOk());

  const std::string after = ReadFileOrMissing(path);
  EXPECT_TRUE(absl::StartsWith(after, before));
  EXPECT_THAT(after, Not(HasSubstr(torn + "{")));
  std::vector<std::string> lines = Lines(after);
  EXPECT_THAT(lines[5], HasSubstr("\"event\":\"recovery\""));
  EXPECT_THAT(lines[5], HasSubstr(absl::StrCat("\"cut_bytes\":", torn.size())));
  EXPECT_THAT(lines[5], HasSubstr(Sha256Hex(torn)));
  VerifyResult result = Verify(after, key);
  EXPECT_TRUE(result.intact()) << result.detail;
  EXPECT_EQ(result.recoveries, 1u);
  ASSERT_EQ(result.notes.size(), 1u);
  EXPECT_THAT(result.notes[0], HasSubstr("line 6 (seq 6) recovery"));
  EXPECT_THAT(result.notes[0], HasSubstr("torn"));
}

TEST(AuditLogOpenTest, TornFirstRecordIsRecoveredToo) {
  TempDir dir;
  const std::string path = dir.Child("log");
  const AuditKey key = TestKey();
  WriteFileOrDie(path, "{\"v\":1,\"se");
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(path, Copy(key), kSession, SmallEpochs(3)));
  EXPECT_EQ(log->open_outcome(), OpenOutcome::kRecovered);
  ASSERT_THAT(log->Seal(), IsOk());
  VerifyResult result = Verify(ReadFileOrMissing(path), key);
  EXPECT_TRUE(result.intact()) << result.detail;
  EXPECT_EQ(result.recoveries, 1u);
}

TEST(AuditLogOpenTest, UnsealedLogGetsARecoveryRecord) {
  TempDir dir;
  const std::string path = dir.Child("log");
  const AuditKey key = TestKey();
  {
    AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                                 AuditLog::Open(path, Copy(key), kSession, SmallEpochs(2)));
    for (int i = 0; i < 3; ++i) ASSERT_THAT(log->Append(AuditRecord{}), IsOk());
  }
  EXPECT_EQ(Verify(ReadFileOrMissing(path), key).problem, AuditProblem::kUnsealed);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(path, Copy(key), kSession, SmallEpochs(2)));
  EXPECT_EQ(log->open_outcome(), OpenOutcome::kRecovered);
  EXPECT_THAT(log->recovery_detail(), HasSubstr("ended at seq 4 without a seal"));
  EXPECT_EQ(log->current_epoch(), 1u);
  ASSERT_THAT(log->Append(AuditRecord{}), IsOk());
  ASSERT_THAT(log->Seal(), IsOk());
  VerifyResult result = Verify(ReadFileOrMissing(path), key);
  EXPECT_TRUE(result.intact()) << result.detail;
  EXPECT_EQ(result.recoveries, 1u);
}

TEST(AuditLogOpenTest, SealedLogIsResumed) {
  TempDir dir;
  const std::string path = dir.Child("log");
  const AuditKey key = TestKey();
  WriteSampleLog(path, key);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(path, Copy(key), kSession, SmallEpochs(3)));
  EXPECT_EQ(log->open_outcome(), OpenOutcome::kResumedSealed);
  EXPECT_EQ(log->last_seq(), 11u);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(uint64_t seq, log->Append(AuditRecord{}));
  EXPECT_EQ(seq, 12u);
  ASSERT_THAT(log->Seal(), IsOk());
  VerifyResult result = Verify(ReadFileOrMissing(path), key);
  EXPECT_TRUE(result.intact()) << result.detail;
  EXPECT_EQ(result.seals, 2u);
}

TEST(AuditLogOpenTest, TamperedLogIsRefusedNotRepaired) {
  TempDir dir;
  const std::string path = dir.Child("log");
  const AuditKey key = TestKey();
  WriteSampleLog(path, key);
  std::string content = ReadFileOrMissing(path);
  content[content.size() / 2] ^= 0x01;
  WriteFileOrDie(path, content);
  EXPECT_THAT(AuditLog::Open(path, Copy(key), kSession, SmallEpochs(3)),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("not intact")));
  EXPECT_EQ(ReadFileOrMissing(path), content);
  // Wrong key, wrong session: refused as well.
  WriteSampleLog(dir.Child("good"), key);
  EXPECT_THAT(AuditLog::Open(dir.Child("good"), TestKey('z'), kSession),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("MAC")));
  EXPECT_THAT(AuditLog::Open(dir.Child("good"), Copy(key), "other-session"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("belongs to session")));
}

TEST(AuditLogOpenTest, UnsafeLogFilesAreRefused) {
  TempDir dir;
  const AuditKey key = TestKey();
  WriteFileOrDie(dir.Child("open"), "");
  ASSERT_EQ(::chmod(dir.Child("open").c_str(), 0644), 0);
  EXPECT_THAT(AuditLog::Open(dir.Child("open"), Copy(key), kSession),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("0644")));
  ASSERT_EQ(::symlink(dir.Child("target").c_str(), dir.Child("link").c_str()), 0);
  EXPECT_THAT(AuditLog::Open(dir.Child("link"), Copy(key), kSession),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("symbolic link")));
  struct stat st;
  EXPECT_NE(::lstat(dir.Child("target").c_str(), &st), 0);  // nothing created through it
  ASSERT_EQ(::mkdir(dir.Child("d").c_str(), 0700), 0);
  EXPECT_THAT(AuditLog::Open(dir.Child("d"), Copy(key), kSession), Not(IsOk()));
  EXPECT_THAT(AuditLog::Open(dir.Child("x"), Copy(key), "../bad"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(AuditLogOpenTest, ASecondWriterIsRefused) {
  TempDir dir;
  const AuditKey key = TestKey();
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(dir.Child("log"), Copy(key), kSession));
  ASSERT_THAT(log->Append(AuditRecord{}), IsOk());
  EXPECT_THAT(AuditLog::Open(dir.Child("log"), Copy(key), kSession),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("in use")));
}

TEST(AuditLogAppendTest, SealedLogRefusesAppends) {
  TempDir dir;
  const AuditKey key = TestKey();
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(dir.Child("log"), Copy(key), kSession));
  ASSERT_THAT(log->Seal(), IsOk());
  EXPECT_THAT(log->Append(AuditRecord{}), StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(log->Seal(), StatusIs(absl::StatusCode::kFailedPrecondition));
  AuditRecord control;
  control.event = AuditEvent::kSeal;
  EXPECT_THAT(log->Append(control), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(AuditLogAppendTest, ConcurrentAppendsAreAllRecordedInOneChain) {
  TempDir dir;
  const std::string path = dir.Child("log");
  const AuditKey key = TestKey();
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(path, Copy(key), kSession, SmallEpochs(7)));
  constexpr int kThreads = 8;
  constexpr int kPerThread = 100;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        AuditRecord record;
        record.channel = static_cast<uint64_t>(t);
        record.request_id = static_cast<uint64_t>(i);
        const Durability durability = i % 2 == 0 ? Durability::kDurable : Durability::kBuffered;
        if (!log->Append(record, durability).ok()) ++failures;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  ASSERT_THAT(log->Flush(), IsOk());
  ASSERT_THAT(log->Seal(), IsOk());
  VerifyResult result = Verify(ReadFileOrMissing(path), key);
  EXPECT_TRUE(result.intact()) << result.detail;
  const uint64_t records = kThreads * kPerThread;
  EXPECT_EQ(result.records, records + records / 7 + 1);
}

TEST(AuditLogAppendTest, AnIdleEpochIsClosedOnTime) {
  TempDir dir;
  const std::string path = dir.Child("log");
  const AuditKey key = TestKey();
  AuditLogOptions options;
  options.epoch_max_records = 0;
  options.epoch_max_duration = absl::Milliseconds(20);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(path, Copy(key), kSession, options));
  const std::string first_key = log->CurrentKeyForTesting();
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_GE(log->current_epoch(), 2u);
  EXPECT_NE(log->CurrentKeyForTesting(), first_key);
  ASSERT_THAT(log->Seal(), IsOk());
  const std::string content = ReadFileOrMissing(path);
  EXPECT_THAT(content, HasSubstr("\"event\":\"epoch_close\",\"records\":0"));
  VerifyResult result = Verify(content, key);
  EXPECT_TRUE(result.intact()) << result.detail;
  EXPECT_GE(result.epochs_closed, 3u);
}

TEST(AuditLogAppendTest, ClockSteppingBackDoesNotBreakTheOrder) {
  TempDir dir;
  const std::string path = dir.Child("log");
  const AuditKey key = TestKey();
  auto now = std::make_shared<absl::Time>(absl::FromUnixSeconds(2000000000));
  AuditLogOptions options = SmallEpochs(0);
  options.clock = [now] { return *now; };
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(path, Copy(key), kSession, options));
  ASSERT_THAT(log->Append(AuditRecord{}), IsOk());
  *now -= absl::Hours(1);
  ASSERT_THAT(log->Append(AuditRecord{}), IsOk());
  ASSERT_THAT(log->Seal(), IsOk());
  VerifyResult result = Verify(ReadFileOrMissing(path), key);
  EXPECT_TRUE(result.intact()) << result.detail;
}

TEST(AuditLogDurabilityTest, APendingRecordIsInTheFileAtOnceAndDurableWhenAwaited) {
  TempDir dir;
  const std::string path = dir.Child("log");
  const AuditKey key = TestKey();
  auto syncs = std::make_shared<std::atomic<int>>(0);
  AuditLogOptions options = SmallEpochs(0);
  options.flush_delay = absl::Hours(1);  // only waiters sync
  options.sync_for_testing = [syncs](int fd) {
    ++*syncs;
    return ::fdatasync(fd);
  };
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(path, Copy(key), kSession, options));
  AuditRecord record;
  record.detail = "intent: replace atomically";
  AIRLOCK_ASSERT_OK_AND_ASSIGN(PendingRecord pending, log->AppendPending(record));
  EXPECT_EQ(pending.seq, 1u);
  EXPECT_EQ(pending.end, ReadFileOrMissing(path).size());
  ASSERT_THAT(log->AwaitDurable(pending), IsOk());
  EXPECT_GE(syncs->load(), 1);
  const int after_intent = syncs->load();
  // A buffered record does not sync by itself (the delay is an hour) ...
  ASSERT_THAT(log->Append(AuditRecord{}, Durability::kBuffered), IsOk());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(syncs->load(), after_intent);
  // ... but the next durable one covers it with one sync.
  ASSERT_THAT(log->Append(AuditRecord{}, Durability::kDurable), IsOk());
  EXPECT_EQ(syncs->load(), after_intent + 1);
  ASSERT_THAT(log->Seal(), IsOk());
  VerifyResult result = Verify(ReadFileOrMissing(path), key);
  EXPECT_TRUE(result.intact()) << result.detail;
  EXPECT_EQ(result.records, 4u);
}

TEST(AuditLogDurabilityTest, BufferedRecordsAreFlushedInTheBackground) {
  TempDir dir;
  const std::string path = dir.Child("log");
  auto syncs = std::make_shared<std::atomic<int>>(0);
  AuditLogOptions options = SmallEpochs(0);
  options.flush_delay = absl::Milliseconds(2);
  options.sync_for_testing = [syncs](int fd) {
    ++*syncs;
    return ::fdatasync(fd);
  };
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(path, TestKey(), kSession, options));
  ASSERT_THAT(log->Append(AuditRecord{}, Durability::kBuffered), IsOk());
  for (int i = 0; i < 5000 && syncs->load() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(syncs->load(), 1);
}

TEST(AuditLogDurabilityTest, AKilledBrokerLosesNoWrittenRecordAndTheLogIsRecovered) {
  // Buffered records not yet synced are in the file once Append returns: SIGKILL loses none
  // of them (only a power loss could take the unsynced tail, which Open then cuts and
  // explains).
  TempDir dir;
  const std::string path = dir.Child("log");
  const AuditKey key = TestKey();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    AuditLogOptions options = SmallEpochs(0);
    options.flush_delay = absl::Hours(1);
    absl::StatusOr<std::unique_ptr<AuditLog>> log =
        AuditLog::Open(path, Copy(key), kSession, options);
    if (!log.ok()) ::_exit(2);
    AuditRecord record;
    record.detail = "buffered outcome";
    for (int i = 0; i < 5; ++i) {
      if (!(*log)->Append(record, Durability::kBuffered).ok()) ::_exit(3);
    }
    ::kill(::getpid(), SIGKILL);
    ::_exit(4);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(path, Copy(key), kSession, SmallEpochs(0)));
  EXPECT_EQ(log->open_outcome(), OpenOutcome::kRecovered);
  EXPECT_EQ(log->last_seq(), 6u);  // five records, then the recovery record
  ASSERT_THAT(log->Seal(), IsOk());
  VerifyResult result = Verify(ReadFileOrMissing(path), key);
  EXPECT_TRUE(result.intact()) << result.detail;
}

TEST(AuditLogDurabilityTest, AFailedSyncRefusesTheWaiterAndBreaksTheLog) {
  TempDir dir;
  const std::string path = dir.Child("log");
  const AuditKey key = TestKey();
  auto fail = std::make_shared<std::atomic<bool>>(false);
  AuditLogOptions options = SmallEpochs(0);
  options.sync_for_testing = [fail](int fd) {
    if (fail->load()) {
      errno = EIO;
      return -1;
    }
    return ::fdatasync(fd);
  };
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(path, Copy(key), kSession, options));
  ASSERT_THAT(log->Append(AuditRecord{}), IsOk());
  fail->store(true);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(PendingRecord pending, log->AppendPending(AuditRecord{}));
  absl::Status durable = log->AwaitDurable(pending);
  EXPECT_FALSE(durable.ok());
  EXPECT_THAT(durable.message(), HasSubstr("can no longer be written"));
  EXPECT_THAT(durable.message(), HasSubstr("fdatasync"));
  // Fail closed: syncs would work again, but what the failed one lost is unknown.
  fail->store(false);
  EXPECT_THAT(log->Append(AuditRecord{}), Not(IsOk()));
  EXPECT_THAT(log->Append(AuditRecord{}, Durability::kBuffered), Not(IsOk()));
  EXPECT_TRUE(log->CurrentKeyForTesting().empty());
}

// Fills the filesystem under `path` and checks that appends fail, leave the log verifiable,
// and work again once there is room.
void ExpectFullFilesystemRefusesAppends(const std::string& directory) {
  const std::string path = directory + "/log";
  const AuditKey key = TestKey();
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(path, Copy(key), kSession, SmallEpochs(0)));
  ASSERT_THAT(log->Append(AuditRecord{}), IsOk());
  // Fill every block.
  const std::string filler = directory + "/filler";
  {
    int fd = ::open(filler.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    const std::string block(512, 'f');
    while (::write(fd, block.data(), block.size()) > 0) {
    }
    const std::string byte = "f";
    while (::write(fd, byte.data(), 1) > 0) {
    }
    ::close(fd);
  }
  AuditRecord record;
  record.target = "/" + std::string(3000, 'p');
  bool refused = false;
  for (int i = 0; i < 64 && !refused; ++i) {
    absl::StatusOr<uint64_t> appended = log->Append(record);
    if (!appended.ok()) {
      refused = true;
      EXPECT_THAT(appended.status().message(), HasSubstr("the action is refused"));
      EXPECT_EQ(appended.status().code(), absl::StatusCode::kResourceExhausted);
    }
  }
  ASSERT_TRUE(refused) << "the filesystem never filled up";
  // What is on disk is whole records only.
  std::string content = ReadFileOrMissing(path);
  ASSERT_FALSE(content.empty());
  EXPECT_EQ(content.back(), '\n');
  EXPECT_EQ(Verify(content, key).problem, AuditProblem::kUnsealed);

  ASSERT_EQ(::unlink(filler.c_str()), 0);
  ASSERT_THAT(log->Append(record), IsOk());
  ASSERT_THAT(log->Seal(), IsOk());
  VerifyResult result = Verify(ReadFileOrMissing(path), key);
  EXPECT_TRUE(result.intact()) << result.detail;
}

TEST(AuditLogFaultTest, FullFilesystemRefusesAppends) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a small tmpfs needs root";
  TempDir dir;
  const std::string mount_point = dir.Child("small");
  ASSERT_EQ(::mkdir(mount_point.c_str(), 0700), 0);
  if (::mount("tmpfs", mount_point.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0700") !=
      0) {
    GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
  }
  ExpectFullFilesystemRefusesAppends(mount_point);
  ::umount2(mount_point.c_str(), MNT_DETACH);
}

TEST(AuditLogFaultTest, FileSizeLimitRefusesAppends) {
  // The same without root: RLIMIT_FSIZE makes write() fail (EFBIG) like a full disk would.
  TempDir dir;
  const std::string path = dir.Child("log");
  const AuditKey key = TestKey();
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(path, Copy(key), kSession, SmallEpochs(0)));
  ASSERT_THAT(log->Append(AuditRecord{}), IsOk());
  const std::string before = ReadFileOrMissing(path);

  struct rlimit saved;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  struct sigaction ignore = {}, old_action = {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGXFSZ, &ignore, &old_action), 0);
  struct rlimit small = saved;
  small.rlim_cur = before.size() + 100;  // room for part of a record, not all of it
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  AuditRecord record;
  record.target = "/" + std::string(500, 'p');
  absl::StatusOr<uint64_t> appended = log->Append(record);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &saved), 0);
  ASSERT_EQ(::sigaction(SIGXFSZ, &old_action, nullptr), 0);

  EXPECT_THAT(appended, Not(IsOk()));
  // The partial record was cut back off.
  EXPECT_EQ(ReadFileOrMissing(path), before);
  ASSERT_THAT(log->Append(record), IsOk());
  ASSERT_THAT(log->Seal(), IsOk());
  VerifyResult result = Verify(ReadFileOrMissing(path), key);
  EXPECT_TRUE(result.intact()) << result.detail;
  EXPECT_EQ(result.records, 3u);
}

}  // namespace
}  // namespace airlock::broker::audit
