#include "platform/base/group_sync.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <set>
#include <utility>
#include <vector>

#include "platform/base/errno_status.h"

namespace airlock {
namespace {

// Every GroupSync of the process, so that a sync someone waits for can call the others in.
std::mutex& RegistryMutex() {
  static std::mutex* const mutex = new std::mutex;
  return *mutex;
}
std::set<GroupSync*>& Registry() {
  static std::set<GroupSync*>* const registry = new std::set<GroupSync*>;
  return *registry;
}

}  // namespace

GroupSync::GroupSync(int fd, uint64_t synced, std::string what, GroupSyncOptions options)
    : fd_(fd), what_(std::move(what)), options_(std::move(options)) {
  written_ = requested_ = synced_ = synced;
  thread_ = std::thread([this] { Loop(); });
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registry().insert(this);
}

GroupSync::~GroupSync() {
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    Registry().erase(this);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

// Notifications are sent after the lock is released: on a busy machine a thread woken while
// the waker still holds the lock blocks on it, and the waker may lose the CPU in between.

void GroupSync::Join() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (written_ <= synced_ || !failure_.ok()) return;
    join_ = true;
  }
  wake_.notify_one();
}

void GroupSync::Written(uint64_t end) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (end <= written_) return;
    written_ = end;
    if (dirty_timer_) return;
    dirty_timer_ = true;
    deadline_ = std::chrono::steady_clock::now() + options_.flush_delay;
  }
  wake_.notify_one();
}

void GroupSync::Request(uint64_t end) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    written_ = std::max(written_, end);
    if (end <= requested_) return;
    requested_ = end;
  }
  wake_.notify_one();
}

absl::Status GroupSync::WaitThrough(uint64_t end) {
  std::unique_lock<std::mutex> lock(mutex_);
  written_ = std::max(written_, end);
  requested_ = std::max(requested_, end);
  while (synced_ < end) {
    if (!failure_.ok()) return failure_;
    if (syncing_) {
      // A sync is in flight (the background thread's, or another waiter's): it may cover
      // these bytes; wait for it rather than flushing the device a second time.
      synced_cv_.wait(lock);
      continue;
    }
    // Nobody syncs: this thread does, rather than wait for the background thread to be
    // scheduled (on a busy machine that can take longer than the sync).
    SyncLocked(lock, /*waited_for=*/true);
  }
  return absl::OkStatus();
}

absl::Status GroupSync::status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

uint64_t GroupSync::synced() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return synced_;
}

uint64_t GroupSync::syncs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return syncs_;
}

void GroupSync::Loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    const bool dirty = written_ > synced_ && failure_.ok();
    if (!dirty) {
      dirty_timer_ = false;
      if (stopping_) return;
      wake_.wait(lock);
      continue;
    }
    // Someone waits (or we stop): sync now. Otherwise wait for the flush deadline, unless a
    // request or the stop comes first.
    const bool waited_for = requested_ > synced_;
    if (!waited_for && !join_ && !stopping_ && std::chrono::steady_clock::now() < deadline_) {
      wake_.wait_until(lock, deadline_);
      continue;
    }
    if (syncing_) {
      synced_cv_.wait(lock);
      continue;
    }
    SyncLocked(lock, waited_for);
  }
}

void GroupSync::SyncLocked(std::unique_lock<std::mutex>& lock, bool waited_for) {
  // Everything written before the sync starts is covered by it.
  const uint64_t target = written_;
  syncing_ = true;
  dirty_timer_ = false;
  join_ = false;
  lock.unlock();
  if (waited_for) {
    // Call the other files' pending bytes in: their syncs run alongside this one.
    std::lock_guard<std::mutex> registry(RegistryMutex());
    for (GroupSync* other : Registry()) {
      if (other != this) other->Join();
    }
  }
  const int rc = options_.sync_for_testing ? options_.sync_for_testing(fd_) : ::fdatasync(fd_);
  const int error_number = errno;
  lock.lock();
  syncing_ = false;
  ++syncs_;
  if (rc != 0) {
    if (failure_.ok()) failure_ = ErrnoToStatus(error_number, "fdatasync", what_);
  } else {
    synced_ = std::max(synced_, target);
  }
  // Bytes written while the sync ran start a new flush delay.
  if (written_ > synced_ && !dirty_timer_) {
    dirty_timer_ = true;
    deadline_ = std::chrono::steady_clock::now() + options_.flush_delay;
  }
  lock.unlock();
  synced_cv_.notify_all();
  wake_.notify_one();
  lock.lock();
}

}  // namespace airlock
