// Helpers shared by the audit log's tests: a test key, options with small epochs, a log's
// lines, and verification that must succeed.
#ifndef TESTS_BROKER_AUDIT_AUDIT_LOG_TESTING_H_
#define TESTS_BROKER_AUDIT_AUDIT_LOG_TESTING_H_

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "absl/strings/str_cat.h"
#include "broker/audit/audit_crypto.h"
#include "broker/audit/audit_log.h"
#include "broker/audit/audit_verifier.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace airlock::broker::audit {

inline constexpr char kSession[] = "0123456789abcdef01234567";
// Bytes that must never reach the log (only their digest may).
inline constexpr char kSecretContent[] = "TOP-SECRET file content: hunter2";

inline AuditKey TestKey(char fill = 'k') {
  AuditKey key;
  key.master = SecretBytes(std::string(32, fill));
  key.source = "test";
  return key;
}

// Open consumes the master key it is given; tests keep theirs for verifying.
inline AuditKey Copy(const AuditKey& key) {
  AuditKey copy;
  copy.master = key.master.Clone();
  copy.source = key.source;
  copy.path = key.path;
  return copy;
}

inline AuditLogOptions SmallEpochs(uint64_t records) {
  AuditLogOptions options;
  options.epoch_max_records = records;
  options.epoch_max_duration = absl::ZeroDuration();
  return options;
}

inline std::vector<std::string> Lines(const std::string& content) {
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

inline VerifyResult Verify(const std::string& content, const AuditKey& key) {
  absl::StatusOr<VerifyResult> result = VerifyAuditLog(content, key.master);
  EXPECT_THAT(result, ::airlock::testing::IsOk());
  return result.ok() ? std::move(*result) : VerifyResult{};
}

// A run as the broker would log it: 8 records, epochs of 3, sealed. 11 lines:
// 1-3 records, 4 epoch_close, 5-7 records, 8 epoch_close, 9-10 records, 11 seal.
inline void WriteSampleLog(const std::string& path, const AuditKey& key,
                    const std::string& session = kSession) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(path, Copy(key), session, SmallEpochs(3)));
  AuditRecord record;
  record.event = AuditEvent::kRunStart;
  record.preset = "workspace-write";
  record.mode = "on-request";
  record.detail = "workspace /w";
  ASSERT_THAT(log->Append(record), ::airlock::testing::IsOk());
  for (int i = 0; i < 2; ++i) {
    AuditRecord request;
    request.event = AuditEvent::kRequest;
    request.channel = 1;
    request.request_id = static_cast<uint64_t>(10 + i);
    request.tool = "write";
    request.target = absl::StrCat("/w/file", i, ".txt");
    ASSERT_THAT(log->Append(request), ::airlock::testing::IsOk());
    AuditRecord decision = request;
    decision.event = AuditEvent::kDecision;
    decision.decision = "allow";
    decision.rule = "in-authority";
    decision.content_sha256 = Sha256Hex(kSecretContent);
    ASSERT_THAT(log->Append(decision), ::airlock::testing::IsOk());
    AuditRecord result = request;
    result.event = AuditEvent::kResult;
    result.decision = "ok";
    result.content_sha256 = Sha256Hex(kSecretContent);
    result.previous_sha256 = "absent";
    ASSERT_THAT(log->Append(result, Durability::kBuffered), ::airlock::testing::IsOk());
  }
  AuditRecord end;
  end.event = AuditEvent::kRunEnd;
  end.exit_code = 0;
  ASSERT_THAT(log->Append(end), ::airlock::testing::IsOk());
  ASSERT_THAT(log->Seal("worker exited 0"), ::airlock::testing::IsOk());
}

}  // namespace airlock::broker::audit

#endif  // TESTS_BROKER_AUDIT_AUDIT_LOG_TESTING_H_
