// The session store: $AIRLOCK_HOME/sessions/<id>.jsonl. A version 2 header with the session's
// permissionPreset, then one JSON line per context snapshot, tool call and tool result.
// Approvals are never stored. A file that fails validation is rejected and never rewritten.
//
// When records reach the disk:
// - The header, and each context snapshot (the preset a resumed session starts under), are
//   written and synced before Create / RecordContextIfChanged return.
// - Tool calls and results are handed to the store's writer thread, which serializes them (the
//   JSON printer costs more than the write) and appends them in order, one write(2) per batch,
//   off the call's critical path (at most 1024 wait; past that a call waits for the writer)
//   — within microseconds, so a broker killed in that window may
//   lose the last ones (the audit log's records of the same calls are written before the
//   reply). Once written they are synced by a background group commit
//   (platform/base/group_sync.h) alongside the audit log's next waited-for sync, else within
//   50 ms, by the next snapshot, by Flush, or when the store is destroyed.
// A failed write or sync is returned by every later Record* call.
#ifndef BROKER_SESSION_SESSION_STORE_H_
#define BROKER_SESSION_SESSION_STORE_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "airlock/v1/session.pb.h"
#include "airlock/v1/wire.pb.h"
#include "platform/base/group_sync.h"
#include "platform/base/scoped_fd.h"

namespace airlock::broker {

inline constexpr uint32_t kSessionVersion = 2;

// Session ids name files: 1 to 128 of [A-Za-z0-9_-].
bool IsValidSessionId(absl::string_view id);

// The session-file form of the broker's runtime context.
v1::ContextSnapshot SnapshotOfContext(const v1::Context& context);

// The current time as RFC 3339 UTC with milliseconds.
std::string NowRfc3339();

class SessionStore {
 public:
  // Creates `<sessions_dir>/<id>.jsonl` (the directory 0700, the file 0600, exclusive) and
  // writes the header.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<SessionStore>> Create(
      const std::string& sessions_dir, const std::string& id, const std::string& preset,
      const std::string& workspace);

  // Opens an existing session after validating every line: an unsupported version, a missing
  // or invalid preset, an unknown field, a wrong type or a truncated last line is rejected
  // without touching the file.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<SessionStore>> Resume(
      const std::string& sessions_dir, const std::string& id);

  // Validates session-file bytes (the part of Resume that reads), for tests and fuzzing.
  struct Parsed {
    v1::SessionHeader header;
    std::optional<v1::ContextSnapshot> last_context;
    size_t entries = 0;
  };
  [[nodiscard]] static absl::StatusOr<Parsed> Parse(absl::string_view bytes,
                                                    absl::string_view origin);

  const v1::SessionHeader& header() const { return header_; }
  const std::string& path() const { return path_; }

  // The preset in force when the session was last used: the last snapshot's, else the header's.
  std::string RecordedPreset() const;

  // Appends `snapshot` unless it equals the last one recorded (time and reason aside).
  // Returns whether it was appended.
  [[nodiscard]] absl::StatusOr<bool> RecordContextIfChanged(v1::ContextSnapshot snapshot);
  [[nodiscard]] absl::Status RecordToolCall(const v1::ToolCallRecord& call);
  [[nodiscard]] absl::Status RecordToolResult(const v1::ToolResultRecord& result);
  // Makes every record appended so far durable (and written: Flush waits for the writer).
  [[nodiscard]] absl::Status Flush();

  ~SessionStore();  // writes what is queued, syncs, stops the threads
  SessionStore(const SessionStore&) = delete;
  SessionStore& operator=(const SessionStore&) = delete;

 private:
  SessionStore(std::string path, ScopedFd fd, v1::SessionHeader header,
               std::optional<v1::ContextSnapshot> last_context)
      : path_(std::move(path)),
        fd_(std::move(fd)),
        header_(std::move(header)),
        last_context_(std::move(last_context)) {}
  // Starts the group commit over what is on disk now, and the writer thread.
  absl::Status StartSync();

  // Appends `lines` with one write(2). Requires mutex_.
  absl::Status WriteLocked(const std::string& lines);
  // How much of the file is written (size_), read under mutex_.
  uint64_t WrittenBytes() const;
  // Hands `entry` to the writer thread; returns its ticket (the queue's count), or the first
  // write failure.
  absl::StatusOr<uint64_t> Enqueue(v1::SessionEntry entry);
  // Waits until the writer has written everything through `ticket`; the first failure.
  absl::Status AwaitWritten(uint64_t ticket);
  void WriterLoop();

  const std::string path_;
  mutable std::mutex mutex_;  // the file: size_ and the writes
  ScopedFd fd_;               // O_APPEND
  v1::SessionHeader header_;
  uint64_t size_ = 0;                // guarded by mutex_; bytes in the file
  std::unique_ptr<GroupSync> sync_;  // destroyed (and synced) before fd_

  mutable std::mutex context_mutex_;                 // held across check, write and sync
  std::optional<v1::ContextSnapshot> last_context_;  // guarded by context_mutex_

  std::mutex queue_mutex_;
  std::condition_variable queue_cv_;    // the writer: entries, or stop
  std::condition_variable written_cv_;  // waiters: a batch was written
  std::deque<v1::SessionEntry> queue_;  // guarded by queue_mutex_
  uint64_t queued_ = 0;                 // guarded by queue_mutex_; tickets handed out
  uint64_t written_ = 0;                // guarded by queue_mutex_; tickets written (or failed)
  absl::Status write_failure_;          // guarded by queue_mutex_; the first one
  bool stopping_ = false;               // guarded by queue_mutex_
  std::thread writer_;
};

}  // namespace airlock::broker

#endif  // BROKER_SESSION_SESSION_STORE_H_
