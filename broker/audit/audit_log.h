// The broker's write-ahead audit log (SPEC §9): one signed JSON line per event (the format is
// in audit_format.h), a hash chain, and forward-secure keys.
//
// Epochs: the log's key starts at k(0) = DeriveLogKey(master, session). An epoch ends after
// `epoch_max_records` records or `epoch_max_duration` (whichever comes first; a timer closes
// an idle epoch too), with an epoch_close record signed by the old key, which is then replaced
// by k(i+1) = HMAC(k(i), "ratchet") and wiped. The broker process keeps only the current key,
// so whoever takes over the broker later cannot re-sign earlier records. (The master key file
// remains: it is what `airlock audit verify` needs, and it is protected storage the worker and
// the shells cannot read.)
//
// Durability (group commit): every record is written to the file (one write(2)) before Append
// returns, so it survives the broker being killed; what a power loss may take is told below.
// A background thread (platform/base/group_sync.h) fdatasyncs the file, one sync covering every
// record written before it started.
// - kDurable: Append returns once the record is on disk. Concurrent durable appends share one
//   fdatasync.
// - AppendPending + AwaitDurable: the record is written and its sync started at once; the
//   caller overlaps its own work (writing and syncing a temp file) and waits before it acts
//   (the rename). This is how intents are recorded.
// - kBuffered: synced by the next durable record's sync, by the background flush within
//   `flush_delay` (50 ms), by Flush(), Seal() or the destructor — whichever comes first
//   (outcomes, requests, refusals). Under load the next intent's sync covers them.
// Any failure to write or sync is returned: the broker must then refuse the action. A failed
// write is cut back off the file; if that fails too, or a sync fails, the log is broken and
// every later Append fails (fail closed).
//
// Crash recovery: Open on an existing log verifies it. A torn final line is cut off and a
// recovery record says what was cut; a log that ended without a seal gets a recovery record
// saying so. A log that fails verification in any other way is refused: it is evidence.
#ifndef BROKER_AUDIT_AUDIT_LOG_H_
#define BROKER_AUDIT_AUDIT_LOG_H_

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "broker/audit/audit_crypto.h"
#include "broker/audit/audit_key.h"
#include "broker/audit/audit_record.h"
#include "platform/base/group_sync.h"
#include "platform/base/scoped_fd.h"

namespace airlock::broker::audit {

enum class Durability {
  kDurable,   // on disk (fdatasync) before Append returns: intents, decisions
  kBuffered,  // written now, synced within flush_delay (or sooner by a later durable record)
};

// A record written but perhaps not yet on disk (AppendPending).
struct PendingRecord {
  uint64_t seq = 0;
  uint64_t end = 0;  // the log's size after the record
};

struct AuditLogOptions {
  uint64_t epoch_max_records = 256;                  // 0: no record limit
  absl::Duration epoch_max_duration = absl::Seconds(60);  // zero: no timer
  std::function<absl::Time()> clock;                 // default absl::Now (tests inject one)
  // How long a buffered record may stay unsynced when no durable record follows.
  absl::Duration flush_delay = absl::Milliseconds(50);
  // Tests replace fdatasync(fd) of the background syncs (return -1 and set errno to fail).
  std::function<int(int)> sync_for_testing;
};

// What Open found.
enum class OpenOutcome { kCreated, kResumedSealed, kRecovered };

class AuditLog {
 public:
  // Opens or creates `path` (0600, O_NOFOLLOW; an existing log must be a regular file owned by
  // the effective user and inaccessible to others). Takes an exclusive lock: a second broker
  // on the same log is refused.
  //
  // Consumes the master key: key.master is wiped before Open returns (success or not), so the
  // broker keeps only the current epoch's key — otherwise whoever took over the broker later
  // could forge every record. key.path and key.source stay.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<AuditLog>> Open(
      const std::string& path, AuditKey& key, absl::string_view session,
      AuditLogOptions options = {});
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<AuditLog>> Open(
      const std::string& path, AuditKey&& key, absl::string_view session,
      AuditLogOptions options = {}) {
    return Open(path, key, session, std::move(options));
  }

  // Stops the epoch timer and closes the file. Does not seal: a log without a seal is how a
  // crash shows, and the next Open explains it.
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // Appends one record; returns its sequence number. Thread-safe.
  [[nodiscard]] absl::StatusOr<uint64_t> Append(const AuditRecord& record,
                                                Durability durability = Durability::kDurable);

  // Writes `record` and starts syncing it without waiting; AwaitDurable(pending) returns once
  // it is on disk (or the sync failure, which also breaks the log). Thread-safe.
  [[nodiscard]] absl::StatusOr<PendingRecord> AppendPending(const AuditRecord& record);
  [[nodiscard]] absl::Status AwaitDurable(const PendingRecord& pending);

  // Makes every record written so far durable.
  [[nodiscard]] absl::Status Flush();

  // Writes the seal (the run's last record, which also closes the last epoch), syncs, and
  // wipes the key. Every later Append fails.
  [[nodiscard]] absl::Status Seal(absl::string_view detail = {});

  OpenOutcome open_outcome() const { return open_outcome_; }
  // The recovery record's explanation when open_outcome() is kRecovered.
  const std::string& recovery_detail() const { return recovery_detail_; }
  const std::string& path() const { return path_; }
  uint64_t current_epoch() const;
  uint64_t last_seq() const;

  // Tests only: the key the log holds right now (empty once sealed or broken).
  std::string CurrentKeyForTesting() const;

 private:
  AuditLog(std::string path, std::string session, ScopedFd fd, AuditLogOptions options);
  static absl::StatusOr<std::unique_ptr<AuditLog>> OpenWithMaster(const std::string& path,
                                                                  const AuditKey& key,
                                                                  absl::string_view session,
                                                                  AuditLogOptions options);

  absl::Status InitializeFromFile(const AuditKey& key);
  // Builds, signs and writes one line. `fields` are `,"k":v…` after the event name.
  absl::StatusOr<uint64_t> WriteLocked(absl::string_view event, absl::string_view fields,
                                       bool closes_epoch);
  absl::Status CloseEpochLocked();
  // Writes one record (closing a full or old epoch first); returns its seq and the log's end.
  absl::StatusOr<PendingRecord> WriteRecord(const AuditRecord& record);
  absl::Status SyncThrough(uint64_t offset);
  void Break(absl::Status why);  // requires mutex_
  void TimerLoop();
  absl::Time Now() const;

  const std::string path_;
  const std::string session_;
  ScopedFd fd_;
  const AuditLogOptions options_;
  uid_t uid_;
  std::string user_name_;
  OpenOutcome open_outcome_ = OpenOutcome::kCreated;
  std::string recovery_detail_;

  mutable std::mutex mutex_;
  SecretBytes key_;              // guarded by mutex_; the current epoch's key only
  uint64_t epoch_ = 0;           // guarded by mutex_
  uint64_t epoch_records_ = 0;   // guarded by mutex_
  absl::Time epoch_started_;     // guarded by mutex_
  uint64_t seq_ = 0;             // guarded by mutex_; the last written
  std::string prev_hash_;        // guarded by mutex_
  std::string last_time_;        // guarded by mutex_
  uint64_t size_ = 0;            // guarded by mutex_; bytes written
  bool sealed_ = false;          // guarded by mutex_
  absl::Status broken_;          // guarded by mutex_

  // Started once the file is verified and recovered; destroyed before fd_ is closed.
  std::unique_ptr<GroupSync> sync_;

  std::condition_variable timer_wake_;
  bool stopping_ = false;        // guarded by mutex_
  std::thread timer_;
};

}  // namespace airlock::broker::audit

#endif  // BROKER_AUDIT_AUDIT_LOG_H_
