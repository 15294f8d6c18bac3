#include "broker/audit/audit_verifier.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "broker/audit/audit_format.h"
#include "broker/audit/audit_json.h"
#include "broker/audit/audit_record.h"
#include "platform/base/status_macros.h"

namespace airlock::broker::audit {
namespace {

// A record that claims an epoch this far past the expected one is not worth deriving keys for.
constexpr uint64_t kMaxEpochSkip = 4096;

struct Line {
  absl::string_view bytes;  // without the newline
  bool terminated = false;  // ended by '\n'
  size_t end = 0;           // offset just past the line (and its newline)
};

std::vector<Line> SplitLines(absl::string_view content) {
  std::vector<Line> lines;
  size_t at = 0;
  while (at < content.size()) {
    const size_t newline = content.find('\n', at);
    Line line;
    if (newline == absl::string_view::npos) {
      line.bytes = content.substr(at);
      line.end = content.size();
    } else {
      line.bytes = content.substr(at, newline - at);
      line.terminated = true;
      line.end = newline + 1;
    }
    lines.push_back(line);
    at = line.end;
  }
  return lines;
}

// The body of a signed line as a JSON object: the signed prefix closed with '}'.
absl::StatusOr<FlatJsonObject> ParseBody(absl::string_view signed_prefix) {
  return ParseFlatJsonObject(absl::StrCat(signed_prefix, "}"));
}

std::optional<int64_t> IntField(const FlatJsonObject& object, absl::string_view key) {
  const JsonValue* value = object.Find(key);
  if (value == nullptr || value->is_string) return std::nullopt;
  return value->int_value;
}

std::optional<std::string> StringField(const FlatJsonObject& object, absl::string_view key) {
  const JsonValue* value = object.Find(key);
  if (value == nullptr || !value->is_string) return std::nullopt;
  return value->string_value;
}

// The sequence number a line claims, without verifying anything (for diagnosis only).
std::optional<int64_t> ClaimedSeq(absl::string_view line) {
  absl::string_view prefix, mac;
  if (!SplitSignedLine(line, &prefix, &mac)) return std::nullopt;
  absl::StatusOr<FlatJsonObject> body = ParseBody(prefix);
  if (!body.ok()) return std::nullopt;
  return IntField(*body, "seq");
}

class Verifier {
 public:
  Verifier(const SecretBytes& master, const VerifyOptions& options)
      : master_(master), options_(options) {}

  absl::StatusOr<VerifyResult> Run(absl::string_view content) {
    result_.last_line_hash = std::string(kGenesisPrev);
    lines_ = SplitLines(content);
    if (lines_.empty()) {
      return Fail(AuditProblem::kTruncated, 1, std::nullopt, "the log is empty: no records");
    }
    for (size_t i = 0; i < lines_.size(); ++i) {
      AIRLOCK_ASSIGN_OR_RETURN(bool ok, VerifyLine(i));
      if (!ok) return std::move(result_);
    }
    if (!result_.sealed) {
      return Fail(AuditProblem::kUnsealed, lines_.size(), result_.last_seq,
                  absl::StrCat("the log ends at seq ", result_.last_seq,
                               " without a seal record: the run is still going, the broker "
                               "crashed, or records were cut off the end"));
    }
    return std::move(result_);
  }

 private:
  VerifyResult Fail(AuditProblem problem, size_t line_number, std::optional<uint64_t> seq,
                    std::string detail) {
    result_.problem = problem;
    result_.line = line_number;
    result_.seq = seq;
    result_.detail = std::move(detail);
    return std::move(result_);
  }
  bool FailLine(AuditProblem problem, size_t index, std::optional<uint64_t> seq,
                std::string detail) {
    result_.problem = problem;
    result_.line = index + 1;
    result_.seq = seq;
    result_.detail = std::move(detail);
    return false;
  }

  absl::StatusOr<const SecretBytes*> KeyForEpoch(uint64_t epoch) {
    if (epoch_keys_.empty()) {
      AIRLOCK_ASSIGN_OR_RETURN(SecretBytes first, DeriveLogKey(master_, result_.session));
      epoch_keys_.push_back(std::move(first));
    }
    while (epoch_keys_.size() <= epoch) {
      AIRLOCK_ASSIGN_OR_RETURN(SecretBytes next, RatchetKey(epoch_keys_.back()));
      epoch_keys_.push_back(std::move(next));
    }
    return &epoch_keys_[epoch];
  }

  absl::StatusOr<bool> MacValid(uint64_t epoch, absl::string_view prefix,
                                absl::string_view mac_hex) {
    AIRLOCK_ASSIGN_OR_RETURN(const SecretBytes* key, KeyForEpoch(epoch));
    AIRLOCK_ASSIGN_OR_RETURN(Mac mac, HmacSha256(key->view(), prefix));
    return MacMatchesHex(mac, mac_hex);
  }

  // Where a record with `seq` turned up while `expected` was due: reordered or deleted.
  bool FailSequence(size_t index, uint64_t seq, uint64_t expected) {
    if (seq < expected) {
      return FailLine(AuditProblem::kOrder, index, seq,
                      absl::StrCat("seq ", seq, " comes after seq ", expected - 1,
                                   ": a record was duplicated or moved"));
    }
    for (size_t later = index + 1; later < lines_.size(); ++later) {
      std::optional<int64_t> claimed = ClaimedSeq(lines_[later].bytes);
      if (claimed.has_value() && *claimed == static_cast<int64_t>(expected)) {
        return FailLine(AuditProblem::kOrder, index, seq,
                        absl::StrCat("expected seq ", expected, " but found seq ", seq, "; seq ",
                                     expected, " appears later, at line ", later + 1,
                                     ": records were reordered"));
      }
    }
    return FailLine(AuditProblem::kSequenceGap, index, seq,
                    absl::StrCat("expected seq ", expected, " but found seq ", seq, ": ",
                                 seq - expected, " record(s) missing (deleted)"));
  }

  absl::StatusOr<bool> VerifyLine(size_t index) {
    const Line& line = lines_[index];
    const uint64_t expected_seq = result_.last_seq + 1;
    if (!line.terminated) {
      return FailLine(AuditProblem::kTruncated, index, std::nullopt,
                      absl::StrCat("the last line is incomplete (", line.bytes.size(),
                                   " bytes without an end of line): a torn or cut record"));
    }
    if (line.bytes.size() > kMaxLineBytes) {
      return FailLine(AuditProblem::kMalformed, index, std::nullopt, "the line is too long");
    }
    absl::string_view prefix, mac_hex;
    if (!SplitSignedLine(line.bytes, &prefix, &mac_hex)) {
      return FailLine(AuditProblem::kMalformed, index, std::nullopt,
                      "the line does not end with a \"mac\" field");
    }
    absl::StatusOr<FlatJsonObject> body = ParseBody(prefix);
    std::optional<int64_t> claimed_seq;
    if (body.ok()) claimed_seq = IntField(*body, "seq");
    const auto seq_for_report = [&]() -> std::optional<uint64_t> {
      if (claimed_seq.has_value() && *claimed_seq >= 0) return *claimed_seq;
      return std::nullopt;
    };

    if (index == 0) {
      // The first record names the session, and the session selects the log's key.
      std::optional<std::string> session;
      if (body.ok()) session = StringField(*body, "session");
      if (!session.has_value() || session->empty()) {
        return FailLine(AuditProblem::kMalformed, index, seq_for_report(),
                        "the first record names no session, so no key can be derived");
      }
      if (options_.expected_session.has_value() && *session != *options_.expected_session) {
        return FailLine(AuditProblem::kMalformed, index, seq_for_report(),
                        absl::StrCat("the log belongs to session ", *session, ", not ",
                                     *options_.expected_session));
      }
      result_.session = *session;
    }

    AIRLOCK_ASSIGN_OR_RETURN(bool mac_ok, MacValid(result_.epoch, prefix, mac_hex));
    bool authentic_elsewhere = false;
    if (!mac_ok) {
      // An authentic record from another epoch means records around an epoch boundary are
      // missing or moved; say so rather than "MAC".
      std::optional<int64_t> claimed_epoch;
      if (body.ok()) claimed_epoch = IntField(*body, "epoch");
      if (claimed_epoch.has_value() && *claimed_epoch >= 0 &&
          static_cast<uint64_t>(*claimed_epoch) != result_.epoch &&
          static_cast<uint64_t>(*claimed_epoch) <= result_.epoch + kMaxEpochSkip) {
        AIRLOCK_ASSIGN_OR_RETURN(authentic_elsewhere,
                                 MacValid(static_cast<uint64_t>(*claimed_epoch), prefix, mac_hex));
      }
      if (!authentic_elsewhere) {
        return FailLine(
            AuditProblem::kMac, index, seq_for_report(),
            index == 0 ? std::string("MAC mismatch on the first record: wrong key, or the record "
                                     "was altered")
                       : std::string("MAC mismatch: the record was altered or forged"));
      }
    }
    if (!body.ok()) {
      return FailLine(AuditProblem::kMalformed, index, std::nullopt,
                      absl::StrCat("not a JSON record: ", body.status().message()));
    }
    const std::optional<int64_t> version = IntField(*body, "v");
    const std::optional<int64_t> epoch = IntField(*body, "epoch");
    const std::optional<std::string> time = StringField(*body, "time");
    const std::optional<std::string> session = StringField(*body, "session");
    const std::optional<std::string> event_name = StringField(*body, "event");
    const std::optional<std::string> prev = StringField(*body, "prev");
    if (!version.has_value() || *version != kAuditFormatVersion || !claimed_seq.has_value() ||
        *claimed_seq <= 0 || !epoch.has_value() || *epoch < 0 || !time.has_value() ||
        !IsAuditTime(*time) || !session.has_value() || !event_name.has_value() ||
        !prev.has_value() || !IntField(*body, "uid").has_value() ||
        !StringField(*body, "user").has_value()) {
      return FailLine(AuditProblem::kMalformed, index, seq_for_report(),
                      "a required field (v, seq, time, epoch, session, uid, user, event, prev) "
                      "is missing or invalid");
    }
    const std::optional<AuditEvent> event = AuditEventFromName(*event_name);
    if (!event.has_value()) {
      return FailLine(AuditProblem::kMalformed, index, seq_for_report(),
                      absl::StrCat("unknown event \"", *event_name, "\""));
    }
    const uint64_t seq = static_cast<uint64_t>(*claimed_seq);
    if (*session != result_.session) {
      return FailLine(AuditProblem::kMalformed, index, seq,
                      absl::StrCat("record of session ", *session, " in the log of session ",
                                   result_.session));
    }
    if (seq != expected_seq) return FailSequence(index, seq, expected_seq);
    if (authentic_elsewhere || static_cast<uint64_t>(*epoch) != result_.epoch) {
      return FailLine(AuditProblem::kSequenceGap, index, seq,
                      absl::StrCat("record of key epoch ", *epoch, " where epoch ", result_.epoch,
                                   " is due: the record closing epoch ", result_.epoch,
                                   " is missing"));
    }
    if (*prev != result_.last_line_hash) {
      return FailLine(AuditProblem::kChain, index, seq,
                      index == 0 ? std::string("the first record does not start the chain")
                                 : absl::StrCat("\"prev\" is not the hash of line ", index,
                                                ": a record before it was replaced"));
    }
    if (!result_.last_time.empty() && *time < result_.last_time) {
      return FailLine(AuditProblem::kOrder, index, seq,
                      absl::StrCat("time ", *time, " is earlier than the previous record's ",
                                   result_.last_time));
    }

    const bool closes_epoch = *event == AuditEvent::kEpochClose || *event == AuditEvent::kSeal;
    if (closes_epoch) {
      const std::optional<int64_t> count = IntField(*body, "records");
      if (!count.has_value() || *count < 0 ||
          static_cast<uint64_t>(*count) != result_.epoch_records) {
        return FailLine(AuditProblem::kSequenceGap, index, seq,
                        absl::StrCat("epoch ", result_.epoch, " closes claiming ",
                                     count.value_or(-1), " records but ", result_.epoch_records,
                                     " are present"));
      }
    }

    // The record is good: advance.
    if (result_.first_time.empty()) result_.first_time = *time;
    result_.last_time = *time;
    result_.last_seq = seq;
    result_.last_line_hash = Sha256Hex(absl::StrCat(line.bytes, "\n"));
    result_.verified_bytes = line.end;
    ++result_.records;
    if (closes_epoch) {
      ++result_.epoch;
      ++result_.epochs_closed;
      result_.epoch_records = 0;
    } else {
      ++result_.epoch_records;
    }
    result_.sealed = *event == AuditEvent::kSeal;
    if (*event == AuditEvent::kSeal) ++result_.seals;
    if (*event == AuditEvent::kRecovery) {
      ++result_.recoveries;
      absl::StrAppend(&result_.notes.emplace_back(), "line ", index + 1, " (seq ", seq,
                      ") recovery at ", *time, ": ",
                      EscapeForDisplay(StringField(*body, "detail").value_or("(no detail)")));
    }
    return true;
  }

  const SecretBytes& master_;
  const VerifyOptions& options_;
  std::vector<Line> lines_;
  std::vector<SecretBytes> epoch_keys_;
  VerifyResult result_;
};

}  // namespace

absl::string_view AuditProblemName(AuditProblem problem) {
  switch (problem) {
    case AuditProblem::kNone: return "none";
    case AuditProblem::kMac: return "MAC";
    case AuditProblem::kChain: return "chain";
    case AuditProblem::kSequenceGap: return "sequence gap";
    case AuditProblem::kOrder: return "order";
    case AuditProblem::kTruncated: return "truncated";
    case AuditProblem::kUnsealed: return "unsealed";
    case AuditProblem::kMalformed: return "malformed";
  }
  return "unknown";
}

absl::StatusOr<VerifyResult> VerifyAuditLog(absl::string_view content,
                                            const SecretBytes& master_key,
                                            const VerifyOptions& options) {
  if (master_key.empty()) return absl::InvalidArgumentError("empty audit key");
  Verifier verifier(master_key, options);
  return verifier.Run(content);
}

}  // namespace airlock::broker::audit
