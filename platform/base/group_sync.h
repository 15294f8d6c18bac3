// Group commit for one append-only file. Writers note how far the file has been written
// (Written); fdatasync makes it durable, one sync covering everything written before it
// started, and only one sync is in flight at a time. A writer that needs its bytes on disk
// waits (WaitThrough): for the sync in flight if there is one, else it syncs itself — it does
// not depend on the background thread being scheduled. Request starts a sync on the
// background thread without waiting (to overlap it with the caller's own work); bytes
// nobody waits for are synced by the background thread within `flush_delay` of being written,
// or sooner: when any GroupSync of the process starts a sync someone waits for, every other
// one with unsynced bytes starts its own at the same moment, so that the file system can
// commit them together (one journal commit) instead of one after the other on a later call's
// path.
//
// The first failed sync is kept: every later wait fails with it (after a failed fdatasync the
// kernel may have dropped the dirty pages, so a later successful sync proves nothing).
// The destructor syncs what was written and stops the thread.
#ifndef PLATFORM_BASE_GROUP_SYNC_H_
#define PLATFORM_BASE_GROUP_SYNC_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"

namespace airlock {

struct GroupSyncOptions {
  // How long written bytes may stay unsynced when nobody waits for them.
  std::chrono::microseconds flush_delay = std::chrono::milliseconds(50);
  // Tests replace fdatasync(fd) (return -1 and set errno to fail).
  std::function<int(int)> sync_for_testing;
};

class GroupSync {
 public:
  // `fd` stays owned by the caller and must outlive this object; `synced` is how much of the
  // file is already durable; `what` names the file in errors.
  GroupSync(int fd, uint64_t synced, std::string what, GroupSyncOptions options = {});
  ~GroupSync();
  GroupSync(const GroupSync&) = delete;
  GroupSync& operator=(const GroupSync&) = delete;

  // Bytes [0, end) are written: sync them within flush_delay.
  void Written(uint64_t end);
  // Starts syncing through `end` now, without waiting.
  void Request(uint64_t end);
  // Returns once [0, end) is durable, or the sync failure.
  [[nodiscard]] absl::Status WaitThrough(uint64_t end);

  // The first sync failure (OK while none).
  absl::Status status() const;
  uint64_t synced() const;
  // How many fdatasync calls were made (tests and benchmarks).
  uint64_t syncs() const;

 private:
  void Loop();
  // Syncs everything written so far; requires mutex_ (held by `lock`, released meanwhile) and
  // no sync in flight. `waited_for`: someone waits, so the other files are called in.
  void SyncLocked(std::unique_lock<std::mutex>& lock, bool waited_for);
  // Another GroupSync starts a sync someone waits for: sync now if dirty.
  void Join();

  const int fd_;
  const std::string what_;
  const GroupSyncOptions options_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;     // the thread: work to do
  std::condition_variable synced_cv_;  // waiters: a sync finished
  uint64_t written_ = 0;             // guarded by mutex_
  uint64_t requested_ = 0;           // guarded by mutex_
  uint64_t synced_ = 0;              // guarded by mutex_
  uint64_t syncs_ = 0;               // guarded by mutex_
  bool dirty_timer_ = false;         // guarded by mutex_; unsynced bytes wait for the deadline
  bool join_ = false;                // guarded by mutex_; sync now (another one does)
  bool syncing_ = false;             // guarded by mutex_; an fdatasync is in flight
  std::chrono::steady_clock::time_point deadline_;  // guarded by mutex_
  absl::Status failure_;             // guarded by mutex_
  bool stopping_ = false;            // guarded by mutex_
  std::thread thread_;
};

}  // namespace airlock

#endif  // PLATFORM_BASE_GROUP_SYNC_H_
