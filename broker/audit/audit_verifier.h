// Verifies an audit log from its exact bytes and the master key: every line's MAC under its
// epoch's key (each derived from the initial key), the hash chain, the sequence, the time
// order, the epoch closures and the final seal. Reports the first bad record and why.
#ifndef BROKER_AUDIT_AUDIT_VERIFIER_H_
#define BROKER_AUDIT_AUDIT_VERIFIER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "broker/audit/audit_crypto.h"

namespace airlock::broker::audit {

enum class AuditProblem {
  kNone,
  kMac,          // the record's bytes are not what was signed (edited, forged, or wrong key)
  kChain,        // `prev` is not the hash of the line before it
  kSequenceGap,  // one or more records are missing (deleted)
  kOrder,        // a record is out of place: swapped, duplicated, or time went backwards
  kTruncated,    // the last line is incomplete, or the log is empty
  kUnsealed,     // the log ends without a seal record
  kMalformed,    // the line is not an audit record at all
};

// "MAC", "chain", "sequence gap", "order", "truncated", "unsealed", "malformed".
absl::string_view AuditProblemName(AuditProblem problem);

struct VerifyOptions {
  // When set, the log must belong to this session (the writer reopening its own log).
  std::optional<std::string> expected_session;
};

struct VerifyResult {
  AuditProblem problem = AuditProblem::kNone;
  size_t line = 0;                // 1-based line of the first bad record (0: none)
  std::optional<uint64_t> seq;    // its sequence number, when it could be read
  std::string detail;             // why, in words

  // What was verified (up to the first problem).
  std::string session;
  uint64_t records = 0;           // lines verified
  uint64_t epochs_closed = 0;     // epoch_close and seal records
  uint64_t seals = 0;
  uint64_t recoveries = 0;
  std::string first_time, last_time;
  std::vector<std::string> notes;  // one per recovery record, explained

  // The tail state after the last verified line, for a writer that continues the log.
  uint64_t last_seq = 0;
  std::string last_line_hash;       // SHA-256 of the last verified line (kGenesisPrev if none)
  uint64_t epoch = 0;               // the epoch the next record belongs to
  uint64_t epoch_records = 0;       // records already in that epoch
  bool sealed = false;              // the last verified record is a seal
  size_t verified_bytes = 0;        // length of the verified prefix of the log

  bool intact() const { return problem == AuditProblem::kNone; }
};

// Verifies `content` (a whole log). Non-OK only if the cryptography itself fails.
[[nodiscard]] absl::StatusOr<VerifyResult> VerifyAuditLog(absl::string_view content,
                                                          const SecretBytes& master_key,
                                                          const VerifyOptions& options = {});

}  // namespace airlock::broker::audit

#endif  // BROKER_AUDIT_AUDIT_VERIFIER_H_
