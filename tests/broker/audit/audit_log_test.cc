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
#include "tests/broker/audit/audit_log_testing.h"
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




std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += line;
  return out;
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

}  // namespace
}  // namespace airlock::broker::audit
