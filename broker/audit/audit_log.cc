#include "broker/audit/audit_log.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "broker/audit/audit_format.h"
#include "broker/audit/audit_json.h"
#include "broker/audit/audit_verifier.h"
#include "broker/wire_error.h"
#include "platform/base/errno_status.h"
#include "platform/base/fd_io.h"
#include "platform/base/status_macros.h"

namespace airlock::broker::audit {
namespace {

// A log this large is not read back at start (its session should have ended long before).
constexpr uint64_t kMaxLogBytes = uint64_t{1} << 30;

std::string ParentOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string UserName(uid_t uid) {
  struct passwd entry;
  struct passwd* found = nullptr;
  std::vector<char> buffer(16384);
  if (::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr &&
      found->pw_name != nullptr) {
    return found->pw_name;
  }
  return absl::StrCat("uid:", uid);
}

absl::Status Refuse(absl::string_view rule, std::string message) {
  return WithRule(absl::PermissionDeniedError(std::move(message)), rule);
}

absl::StatusOr<std::string> ReadWholeFile(int fd, uint64_t size, absl::string_view path) {
  std::string content(size, '\0');
  uint64_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd, content.data() + done, size - done, static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return LastErrnoStatus("read audit log", path);
    }
    if (n == 0) break;
    done += static_cast<uint64_t>(n);
  }
  content.resize(done);
  return content;
}

}  // namespace

AuditLog::AuditLog(std::string path, std::string session, ScopedFd fd, AuditLogOptions options)
    : path_(std::move(path)),
      session_(std::move(session)),
      fd_(std::move(fd)),
      options_(std::move(options)),
      uid_(::geteuid()),
      user_name_(UserName(uid_)) {}

absl::StatusOr<std::unique_ptr<AuditLog>> AuditLog::Open(const std::string& path,
                                                          AuditKey& key,
                                                          absl::string_view session,
                                                          AuditLogOptions options) {
  absl::StatusOr<std::unique_ptr<AuditLog>> log = OpenWithMaster(path, key, session,
                                                                 std::move(options));
  key.master.Wipe();
  return log;
}

absl::StatusOr<std::unique_ptr<AuditLog>> AuditLog::OpenWithMaster(const std::string& path,
                                                                    const AuditKey& key,
                                                                    absl::string_view session,
                                                                    AuditLogOptions options) {
  if (!IsValidSessionId(session)) {
    return absl::InvalidArgumentError("audit log: invalid session id");
  }
  if (key.master.empty()) return absl::InvalidArgumentError("audit log: empty key");
  if (path.empty()) return absl::InvalidArgumentError("audit log: empty path");

  constexpr int kFlags = O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
  bool created = true;
  ScopedFd fd(::open(path.c_str(), kFlags | O_CREAT | O_EXCL, 0600));
  if (!fd && errno == EEXIST) {
    created = false;
    fd.reset(::open(path.c_str(), kFlags));
  }
  if (!fd) {
    if (errno == ELOOP) {
      return Refuse("audit-log-file",
                    absl::StrCat("audit log ", path, " is a symbolic link (refused)"));
    }
    return LastErrnoStatus("open audit log", path);
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return LastErrnoStatus("stat audit log", path);
  if (!S_ISREG(st.st_mode)) {
    return Refuse("audit-log-file",
                  absl::StrCat("audit log ", path, " is not a regular file (refused)"));
  }
  if (st.st_uid != ::geteuid()) {
    return Refuse("audit-log-file", absl::StrCat("audit log ", path, " is owned by uid ",
                                                 st.st_uid, ", not the current user (refused)"));
  }
  if (created) {
    if (::fchmod(fd.get(), 0600) != 0) return LastErrnoStatus("chmod audit log", path);
  } else if ((st.st_mode & 077) != 0) {
    return Refuse("audit-log-file",
                  absl::StrFormat("audit log %s has mode %04o: other users can reach it "
                                  "(refused; it must be 0600)",
                                  path, st.st_mode & 07777));
  }
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return absl::FailedPreconditionError(
          absl::StrCat("audit log ", path, " is in use by another broker (refused)"));
    }
    return LastErrnoStatus("lock audit log", path);
  }
  if (created) {
    ScopedFd dir(::open(ParentOf(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir || ::fsync(dir.get()) != 0) {
      return LastErrnoStatus("fsync the audit log's directory", ParentOf(path));
    }
  }

  std::unique_ptr<AuditLog> log(
      new AuditLog(path, std::string(session), std::move(fd), std::move(options)));
  AIRLOCK_RETURN_IF_ERROR(log->InitializeFromFile(key));
  if (log->options_.epoch_max_duration > absl::ZeroDuration()) {
    log->timer_ = std::thread([raw = log.get()] { raw->TimerLoop(); });
  }
  return log;
}

absl::Status AuditLog::InitializeFromFile(const AuditKey& key) {
  struct stat st;
  if (::fstat(fd_.get(), &st) != 0) return LastErrnoStatus("stat audit log", path_);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > kMaxLogBytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "audit log ", path_, " is larger than ", kMaxLogBytes, " bytes; start a new session"));
  }

  std::lock_guard<std::mutex> lock(mutex_);
  prev_hash_ = std::string(kGenesisPrev);
  std::string recovery_fields;
  if (size > 0) {
    AIRLOCK_ASSIGN_OR_RETURN(std::string content, ReadWholeFile(fd_.get(), size, path_));
    VerifyOptions verify;
    verify.expected_session = session_;
    AIRLOCK_ASSIGN_OR_RETURN(VerifyResult result, VerifyAuditLog(content, key.master, verify));
    const bool torn_tail = result.problem == AuditProblem::kTruncated &&
                           result.verified_bytes < content.size() &&
                           content.find('\n', result.verified_bytes) == std::string::npos;
    if (!result.intact() && result.problem != AuditProblem::kUnsealed && !torn_tail) {
      return absl::FailedPreconditionError(absl::StrCat(
          "audit log ", path_, " is not intact at line ", result.line,
          result.seq.has_value() ? absl::StrCat(" (seq ", *result.seq, ")") : std::string(),
          ": ", AuditProblemName(result.problem), ": ", result.detail,
          " — refusing to append to it; keep it as evidence and use a new session"));
    }
    if (torn_tail) {
      const absl::string_view cut = absl::string_view(content).substr(result.verified_bytes);
      recovery_detail_ = absl::StrCat(
          "a torn final record of ", cut.size(), " bytes after seq ", result.last_seq,
          " was cut off", result.sealed ? "" : " (the previous run ended without a seal)");
      recovery_fields = absl::StrCat(",\"cut_bytes\":", cut.size(), ",\"cut_sha256\":\"",
                                     Sha256Hex(cut), "\"");
      if (::ftruncate(fd_.get(), static_cast<off_t>(result.verified_bytes)) != 0) {
        return LastErrnoStatus("cut the torn tail of audit log", path_);
      }
      if (::fdatasync(fd_.get()) != 0) return LastErrnoStatus("fdatasync audit log", path_);
    } else if (!result.intact()) {
      recovery_detail_ = absl::StrCat("the previous run ended at seq ", result.last_seq,
                                      " without a seal (the broker was killed or crashed)");
    }
    if (!recovery_detail_.empty()) {
      open_outcome_ = OpenOutcome::kRecovered;
    } else {
      open_outcome_ = OpenOutcome::kResumedSealed;
    }
    seq_ = result.last_seq;
    prev_hash_ = result.last_line_hash;
    epoch_ = result.epoch;
    epoch_records_ = result.epoch_records;
    last_time_ = result.last_time;
    size_ = result.verified_bytes;
  }

  // This process needs only the current epoch's key: derive it and drop the rest.
  AIRLOCK_ASSIGN_OR_RETURN(key_, DeriveLogKey(key.master, session_));
  for (uint64_t i = 0; i < epoch_; ++i) {
    AIRLOCK_ASSIGN_OR_RETURN(key_, RatchetKey(key_));
  }
  epoch_started_ = Now();

  if (open_outcome_ == OpenOutcome::kRecovered) {
    std::string fields;
    absl::StrAppend(&fields, ",\"detail\":");
    AppendJsonString(&fields, recovery_detail_);
    fields.append(recovery_fields);
    AIRLOCK_RETURN_IF_ERROR(WriteLocked("recovery", fields, /*closes_epoch=*/false).status());
    if (::fdatasync(fd_.get()) != 0) return LastErrnoStatus("fdatasync audit log", path_);
  }
  GroupSyncOptions sync_options;
  sync_options.flush_delay = absl::ToChronoMicroseconds(options_.flush_delay);
  sync_options.sync_for_testing = options_.sync_for_testing;
  sync_ = std::make_unique<GroupSync>(fd_.get(), size_, absl::StrCat("audit log ", path_),
                                      std::move(sync_options));
  return absl::OkStatus();
}

AuditLog::~AuditLog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    key_.Wipe();
  }
  timer_wake_.notify_all();
  if (timer_.joinable()) timer_.join();
  sync_.reset();  // syncs what was written
}

absl::Time AuditLog::Now() const { return options_.clock ? options_.clock() : absl::Now(); }

void AuditLog::Break(absl::Status why) {
  if (broken_.ok()) {
    broken_ = absl::Status(why.code(), absl::StrCat("audit log ", path_,
                                                    " can no longer be written: ", why.message()));
  }
  key_.Wipe();
}

absl::StatusOr<uint64_t> AuditLog::WriteLocked(absl::string_view event, absl::string_view fields,
                                               bool closes_epoch) {
  if (sync_ != nullptr) {
    // A background sync that failed breaks the log for every later record.
    if (absl::Status synced = sync_->status(); !synced.ok()) Break(synced);
  }
  if (!broken_.ok()) return broken_;
  if (sealed_) {
    return absl::FailedPreconditionError(absl::StrCat("audit log ", path_, " is sealed"));
  }
  const uint64_t seq = seq_ + 1;
  std::string time = FormatAuditTime(Now());
  if (time < last_time_) time = last_time_;  // never backwards, even if the clock steps back

  std::string line = absl::StrCat("{\"v\":", kAuditFormatVersion, ",\"seq\":", seq,
                                  ",\"time\":\"", time, "\",\"epoch\":", epoch_, ",\"session\":");
  AppendJsonString(&line, session_);
  absl::StrAppend(&line, ",\"uid\":", uid_, ",\"user\":");
  AppendJsonString(&line, user_name_);
  absl::StrAppend(&line, ",\"event\":\"", event, "\"", fields, ",\"prev\":\"", prev_hash_, "\"");
  absl::StatusOr<Mac> mac = HmacSha256(key_.view(), line);
  if (!mac.ok()) {
    Break(mac.status());
    return broken_;
  }
  absl::StrAppend(&line, kMacFieldOpen, MacHex(*mac), kMacFieldClose, "\n");
  if (line.size() > kMaxLineBytes) {
    return absl::InvalidArgumentError("audit record too large");
  }

  if (absl::Status written = WriteFully(fd_.get(), line, path_); !written.ok()) {
    // Cut a partial line back off, so the log stays verifiable and later appends can succeed
    // once there is room again.
    if (::ftruncate(fd_.get(), static_cast<off_t>(size_)) != 0) {
      Break(absl::Status(written.code(),
                         absl::StrCat(written.message(), "; and the partial record could not "
                                                         "be cut back off")));
      return broken_;
    }
    return absl::Status(written.code(),
                        absl::StrCat("cannot write the audit log (", written.message(),
                                     "): the action is refused, it would go unrecorded"));
  }
  size_ += line.size();
  seq_ = seq;
  prev_hash_ = Sha256Hex(line);
  last_time_ = std::move(time);
  if (closes_epoch) {
    absl::StatusOr<SecretBytes> next = RatchetKey(key_);
    if (!next.ok()) {
      Break(next.status());
      return broken_;
    }
    key_ = std::move(*next);  // the move assignment wipes the old key
    ++epoch_;
    epoch_records_ = 0;
    epoch_started_ = Now();
  } else {
    ++epoch_records_;
  }
  return seq;
}

absl::Status AuditLog::CloseEpochLocked() {
  return WriteLocked("epoch_close", absl::StrCat(",\"records\":", epoch_records_),
                     /*closes_epoch=*/true)
      .status();
}

absl::StatusOr<PendingRecord> AuditLog::WriteRecord(const AuditRecord& record) {
  AIRLOCK_ASSIGN_OR_RETURN(std::string fields, SerializeRecordFields(record));
  std::lock_guard<std::mutex> lock(mutex_);
  const bool epoch_full =
      options_.epoch_max_records > 0 && epoch_records_ >= options_.epoch_max_records;
  const bool epoch_old = options_.epoch_max_duration > absl::ZeroDuration() &&
                         Now() - epoch_started_ >= options_.epoch_max_duration;
  if (epoch_full || epoch_old) {
    AIRLOCK_RETURN_IF_ERROR(CloseEpochLocked());
  }
  PendingRecord pending;
  AIRLOCK_ASSIGN_OR_RETURN(pending.seq, WriteLocked(AuditEventName(record.event), fields, false));
  if (options_.epoch_max_records > 0 && epoch_records_ >= options_.epoch_max_records) {
    // Close eagerly so the key is not kept a moment longer than needed. If this fails (no
    // room), the record above still stands and the next Append closes the epoch first.
    absl::Status closed = CloseEpochLocked();
    if (!closed.ok() && !broken_.ok()) return broken_;
  }
  pending.end = size_;
  return pending;
}

absl::StatusOr<uint64_t> AuditLog::Append(const AuditRecord& record, Durability durability) {
  AIRLOCK_ASSIGN_OR_RETURN(PendingRecord pending, WriteRecord(record));
  if (durability == Durability::kDurable) {
    AIRLOCK_RETURN_IF_ERROR(SyncThrough(pending.end));
  } else {
    sync_->Written(pending.end);
  }
  return pending.seq;
}

absl::StatusOr<PendingRecord> AuditLog::AppendPending(const AuditRecord& record) {
  AIRLOCK_ASSIGN_OR_RETURN(PendingRecord pending, WriteRecord(record));
  sync_->Request(pending.end);
  return pending;
}

absl::Status AuditLog::AwaitDurable(const PendingRecord& pending) {
  return SyncThrough(pending.end);
}

absl::Status AuditLog::SyncThrough(uint64_t offset) {
  // One fdatasync covers every record written before it: concurrent durable appends share it.
  absl::Status synced = sync_->WaitThrough(offset);
  if (synced.ok()) return synced;
  std::lock_guard<std::mutex> lock(mutex_);
  Break(synced);
  return broken_;
}

absl::Status AuditLog::Flush() {
  uint64_t end;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!broken_.ok()) return broken_;
    end = size_;
  }
  return SyncThrough(end);
}

absl::Status AuditLog::Seal(absl::string_view detail) {
  uint64_t end;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string fields = absl::StrCat(",\"records\":", epoch_records_);
    if (!detail.empty()) {
      absl::StrAppend(&fields, ",\"detail\":");
      AppendJsonString(&fields, detail.substr(0, kMaxTextFieldBytes));
    }
    AIRLOCK_RETURN_IF_ERROR(WriteLocked("seal", fields, /*closes_epoch=*/true).status());
    sealed_ = true;
    key_.Wipe();
    end = size_;
  }
  timer_wake_.notify_all();
  return SyncThrough(end);
}

uint64_t AuditLog::current_epoch() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return epoch_;
}

uint64_t AuditLog::last_seq() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return seq_;
}

std::string AuditLog::CurrentKeyForTesting() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::string(key_.view());
}

void AuditLog::TimerLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    if (sealed_ || !broken_.ok()) {
      timer_wake_.wait(lock, [this] { return stopping_; });
      break;
    }
    const absl::Duration left = epoch_started_ + options_.epoch_max_duration - Now();
    if (left > absl::ZeroDuration()) {
      timer_wake_.wait_for(lock, absl::ToChronoNanoseconds(left));
      continue;
    }
    // An idle epoch still ends on time, with its (possibly empty) close record.
    absl::Status closed = CloseEpochLocked();
    if (closed.ok()) {
      sync_->Written(size_);  // a failed sync breaks the log; Append reports it
    } else {
      // No room right now: try again shortly (Append will also close it first).
      timer_wake_.wait_for(lock, std::chrono::milliseconds(200));
    }
  }
}

}  // namespace airlock::broker::audit
