#include "broker/exec/mask_mount_points.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "platform/base/fd_io.h"
#include "platform/base/scoped_fd.h"
#include "platform/linux/open_no_links.h"

namespace airlock::broker {
namespace {

using linux_sandbox::CoveredPath;

// The mark of a mount point a broker made (mask_mount_points.h).
constexpr char kMark[] = "user.airlock.mask";
// The contents a mask's file may hold and still be unwritten: nothing, or what a content mask
// (a `commondir` saying ".") was made with.
constexpr absl::string_view kUnwrittenContents[] = {"", ".\n"};

// The directory holding `path` (canonical), opened without following a link in any
// component, and the last component. Every change the broker makes on the host goes through
// such a descriptor: a sandbox can swap a directory of its workspace for a link to anywhere
// while the broker works on a mask's mount point, and a path would follow it.
struct Entry {
  ScopedFd parent;
  std::string name;
  std::string parent_path;
};

ScopedFd OpenDirectoryNoLinks(const std::string& dir) {
  return linux_sandbox::OpenNoLinks(dir, O_PATH | O_DIRECTORY);
}

// `path` split at its last slash; false for "/" and paths without a name.
bool SplitLast(const std::string& path, std::string& parent, std::string& name) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash + 1 == path.size()) return false;
  parent = slash == 0 ? std::string("/") : path.substr(0, slash);
  name = path.substr(slash + 1);
  return true;
}

// Empty `parent` when `path` has no parent or its parent cannot be opened that way.
Entry OpenEntry(const std::string& path) {
  Entry entry;
  if (SplitLast(path, entry.parent_path, entry.name)) {
    entry.parent = OpenDirectoryNoLinks(entry.parent_path);
  }
  return entry;
}

bool HoldsExactly(int dir, const char* name, absl::string_view content) {
  ScopedFd fd(::openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return false;
  std::string read(content.size() + 1, '\0');
  const ssize_t n = ::read(fd.get(), read.data(), read.size());
  return n == static_cast<ssize_t>(content.size()) &&
         absl::string_view(read).substr(0, content.size()) == content;
}

// Calls `visit` with each name in the directory `fd` but "." and ".."; stops, returning false,
// when `visit` does or the listing fails.
template <typename Visit>
bool ForEachName(int fd, Visit visit) {
  alignas(dirent64) char buffer[4096];
  for (;;) {
    const ssize_t n = ::getdents64(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n == 0;
    for (ssize_t at = 0; at < n;) {
      const auto* dirent = reinterpret_cast<const dirent64*>(buffer + at);
      at += dirent->d_reclen;
      const absl::string_view name = dirent->d_name;
      if (name != "." && name != ".." && !visit(name)) return false;
    }
  }
}

bool IsEmptyDirectoryAt(int dir, const char* name) {
  ScopedFd fd(::openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  return fd && ForEachName(fd.get(), [](absl::string_view) { return false; });
}

// An entry as the broker made it: an empty directory, or a file holding one of the contents a
// mask is made with.
bool IsUnwritten(int dir, const char* name, const struct stat& st) {
  if (S_ISDIR(st.st_mode)) return IsEmptyDirectoryAt(dir, name);
  if (!S_ISREG(st.st_mode)) return false;
  for (absl::string_view content : kUnwrittenContents) {
    if (static_cast<size_t>(st.st_size) == content.size() &&
        (content.empty() || HoldsExactly(dir, name, content))) {
      return true;
    }
  }
  return false;
}

// Removes the aside directory `path` (kMaskAsidePrefix…) through a link-free parent: first the
// empty aside-named directories in it (the mask directories of one release, moved into it),
// then itself. Whatever is not empty stays. `quiet` is awaited before each rmdir.
void RemoveAsideDirectory(const std::string& path, const std::function<void()>& quiet) {
  const Entry entry = OpenEntry(path);
  if (!entry.parent) return;
  ScopedFd dir(::openat(entry.parent.get(), entry.name.c_str(),
                        O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) return;
  std::vector<std::string> children;
  ForEachName(dir.get(), [&children](absl::string_view name) {
    if (IsMaskAsideName(name)) children.emplace_back(name);
    return true;
  });
  for (const std::string& child : children) {
    quiet();
    ::unlinkat(dir.get(), child.c_str(), AT_REMOVEDIR);
  }
  quiet();
  ::unlinkat(entry.parent.get(), entry.name.c_str(), AT_REMOVEDIR);
}

// One process's hold on a mount point: the calls using it and the descriptor carrying the
// shared flock (-1: not ours to remove — the user's own entry, or one that could not be made).
struct Hold {
  int calls = 0;
  int fd = -1;
};

std::mutex& RegistryMutex() {
  static std::mutex* const mutex = new std::mutex;
  return *mutex;
}
std::map<std::string, Hold>& Registry() {
  static std::map<std::string, Hold>* const registry = new std::map<std::string, Hold>;
  return *registry;
}

// Makes or joins the mount point of `mask` and holds it (a shared flock). Gives up after a few
// tries if it keeps being removed or replaced meanwhile: bwrap then makes one (and this
// process will not remove it).
// `dir` is the mount point's directory, opened without links (-1: a link on the way, or gone;
// bwrap's mount then fails closed).
int HoldMountPoint(int dir, const char* name, const CoveredPath& mask) {
  if (dir < 0) return -1;
  for (int attempt = 0; attempt < 3; ++attempt) {
    // Made here: marked and held through the descriptor it was made with (a directory is
    // opened once more). Nobody else holds a new entry, so there is nothing to verify.
    ScopedFd fd;
    if (mask.directory) {
      if (::mkdirat(dir, name, 0755) == 0) {
        fd.reset(::openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!fd) {
          ::unlinkat(dir, name, AT_REMOVEDIR);  // not left unmarked and unheld
          return -1;
        }
      }
    } else {
      fd.reset(::openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444));
      if (fd && !mask.content.empty()) (void)WriteFully(fd.get(), mask.content, mask.path);
    }
    if (fd) {
      (void)::fsetxattr(fd.get(), kMark, "1", 1, 0);
      (void)::flock(fd.get(), LOCK_SH);  // new: no exclusive holder can exist yet
      return fd.release();
    }
    if (errno != EEXIST) return -1;
    // There already: another process's mount point (marked) is joined; the user's own entry,
    // made since the plan, is not ours — bwrap covers it and nobody removes it.
    fd.reset(::openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
                                     (mask.directory ? O_DIRECTORY : 0)));
    if (!fd) return -1;
    if (::fgetxattr(fd.get(), kMark, nullptr, 0) < 0) {
      // Unmarked: the user's, or another process's made a moment ago and not marked yet
      // (mkdir and the mark are two steps). Look again shortly before taking it for the user's.
      ::usleep(1000);
      continue;
    }
    // Without waiting, under the registry mutex: an exclusive holder is its last user
    // removing it right now (the name goes; look again) — or a sandbox that planted a marked
    // entry and locks it, which must not stall the broker: given up after the last attempt
    // (bwrap then mounts the mask over whatever is there; nobody removes it).
    if (::flock(fd.get(), LOCK_SH | LOCK_NB) != 0) {
      ::usleep(200);
      continue;
    }
    struct stat held, named;
    if (::fstat(fd.get(), &held) == 0 &&
        ::fstatat(dir, name, &named, AT_SYMLINK_NOFOLLOW) == 0 && held.st_dev == named.st_dev &&
        held.st_ino == named.st_ino) {
      return fd.release();
    }
    // Removed (or replaced) by its last holder between our open and our lock: again.
  }
  return -1;
}

// kMaskAsidePrefix and 16 random hex digits: never a protected name.
std::string AsideName() {
  unsigned char bytes[8] = {};
  size_t filled = 0;
  while (filled < sizeof(bytes)) {
    const ssize_t n = ::getrandom(bytes + filled, sizeof(bytes) - filled, 0);
    if (n > 0) filled += static_cast<size_t>(n);
  }
  std::string name = kMaskAsidePrefix;
  static constexpr char kHex[] = "0123456789abcdef";
  for (unsigned char byte : bytes) {
    name.push_back(kHex[byte >> 4]);
    name.push_back(kHex[byte & 0xf]);
  }
  return name;
}

// Removes aside mask directories in the background. Drained at exit, so a process that
// returns leaves nothing behind.
//
// An rmdir that waits for a discard holds the lock of the directory it removes from, and a
// call laying out its sandbox needs the locks of its workspace's directories (the scan lists
// them, the mount points are made in them, bwrap looks them up). So each rmdir waits while any
// call of this process is laying out (MaskSetupScope), for at most kMaxHoldOff: the removals
// run while sandboxes run instead. One queued directory waits kMaxHoldOff at most in all, so
// calls whose layouts keep overlapping cannot hold the removals off for ever.
class MaskReaper {
 public:
  static constexpr std::chrono::milliseconds kMaxHoldOff{200};

  void Remove(std::string path) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!pending_.insert(path).second) return;  // queued already
    if (!started_) {
      started_ = true;
      std::thread([this] { Loop(); }).detach();
      std::atexit([] { DrainMaskRemovals(); });
    }
    queue_.push_back(std::move(path));
    wake_.notify_one();
  }

  void Drain() {
    std::unique_lock<std::mutex> lock(mutex_);
    idle_.wait(lock, [this] { return queue_.empty() && !busy_; });
  }

  void SetMaxHoldOff(std::chrono::milliseconds bound) {
    std::lock_guard<std::mutex> lock(mutex_);
    max_hold_off_ = bound;
  }

  void BeginSetup() {
    std::lock_guard<std::mutex> lock(mutex_);
    ++setups_;
  }

  void EndSetup() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (--setups_ == 0) quiet_.notify_all();
  }

 private:
  void AwaitQuiet(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mutex_);
    quiet_.wait_until(lock, deadline, [this] { return setups_ == 0; });
  }

  void Loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      wake_.wait(lock, [this] { return !queue_.empty(); });
      const std::string path = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      const auto deadline = std::chrono::steady_clock::now() + max_hold_off_;
      lock.unlock();
      // Only what is still empty: a sandbox of a later call may have written into it (it is
      // an ordinary directory of the root now), and then that stays, under its temp name. It
      // is never renamed back to the protected name.
      RemoveAsideDirectory(path, [this, deadline] { AwaitQuiet(deadline); });
      lock.lock();
      pending_.erase(path);
      busy_ = false;
      if (queue_.empty()) idle_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::condition_variable quiet_;
  std::deque<std::string> queue_;  // guarded by mutex_
  std::set<std::string> pending_;  // guarded by mutex_; queued or being removed
  bool busy_ = false;              // guarded by mutex_
  bool started_ = false;           // guarded by mutex_; the thread runs (detached)
  int setups_ = 0;                 // guarded by mutex_; calls laying out their sandbox
  std::chrono::milliseconds max_hold_off_ = kMaxHoldOff;  // guarded by mutex_
};

MaskReaper& Reaper() {
  static MaskReaper* const reaper = new MaskReaper;
  return *reaper;
}

// A mount point this process was the last holder of anywhere (its exclusive flock granted),
// by name in its directory, with the descriptor that holds it.
struct Leaving {
  std::string name;
  int fd = -1;
};

// Removes what `leaving` names in the directory `parent_path` if each is still the entry held
// and unwritten. A file is unlinked. A directory's name goes at once and the directory itself
// later, by the reaper thread: freeing a directory's block can wait for the disk (a
// synchronous discard on file systems mounted with `discard`, about a millisecond each) while
// holding the lock of the directory it is removed from — the very directory where the next
// call makes its mount points. So the directories of one release are moved together into a
// fresh aside directory beside them and removed from there (one rmdir in the parent instead
// of one per mask); a lone one is renamed aside in place.
void RemoveLeaving(const std::string& parent_path, const std::vector<Leaving>& leaving) {
  const ScopedFd parent = OpenDirectoryNoLinks(parent_path);
  if (!parent) return;
  const int dir = parent.get();
  std::vector<const char*> directories;
  for (const Leaving& entry : leaving) {
    const char* name = entry.name.c_str();
    struct stat held, named;
    if (::fstat(entry.fd, &held) != 0 || ::fstatat(dir, name, &named, AT_SYMLINK_NOFOLLOW) != 0 ||
        held.st_dev != named.st_dev || held.st_ino != named.st_ino ||
        !IsUnwritten(dir, name, named)) {
      continue;
    }
    if (S_ISREG(named.st_mode)) {
      ::unlinkat(dir, name, 0);
    } else {
      directories.push_back(name);
    }
  }
  if (directories.empty()) return;
  const std::string prefix = parent_path == "/" ? "" : parent_path;
  std::string together;
  ScopedFd together_dir;
  if (directories.size() > 1) {
    together = AsideName();
    if (::mkdirat(dir, together.c_str(), 0700) == 0) {
      together_dir.reset(
          ::openat(dir, together.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!together_dir) ::unlinkat(dir, together.c_str(), AT_REMOVEDIR);
    }
  }
  for (const char* name : directories) {
    if (together_dir && ::renameat2(dir, name, together_dir.get(), AsideName().c_str(),
                                    RENAME_NOREPLACE) == 0) {
      continue;
    }
    const std::string aside = AsideName();
    if (::renameat2(dir, name, dir, aside.c_str(), RENAME_NOREPLACE) == 0) {
      Reaper().Remove(absl::StrCat(prefix, "/", aside));
    } else {
      ::unlinkat(dir, name, AT_REMOVEDIR);
    }
  }
  if (together_dir) Reaper().Remove(absl::StrCat(prefix, "/", together));
}

}  // namespace

void AcquireMasks(const std::vector<CoveredPath>& masks) {
  if (masks.empty()) return;
  std::lock_guard<std::mutex> lock(RegistryMutex());
  std::string parent_path, name;
  ScopedFd parent;  // of the previous mask: masks come sorted, siblings together
  std::string opened;
  for (const CoveredPath& mask : masks) {
    Hold& hold = Registry()[mask.path];
    if (hold.calls++ != 0) continue;
    if (!SplitLast(mask.path, parent_path, name)) {
      hold.fd = -1;
      continue;
    }
    if (!parent || opened != parent_path) {
      parent = OpenDirectoryNoLinks(parent_path);
      opened = parent_path;
    }
    hold.fd = HoldMountPoint(parent.get(), name.c_str(), mask);
  }
}

void ReleaseMasks(const std::vector<CoveredPath>& masks) {
  if (masks.empty()) return;
  std::lock_guard<std::mutex> lock(RegistryMutex());
  std::map<std::string, std::vector<Leaving>> leaving;  // by directory
  std::vector<ScopedFd> held;  // closed (this process's locks dropped) once all are removed
  for (const CoveredPath& mask : masks) {
    auto it = Registry().find(mask.path);
    if (it == Registry().end() || --it->second.calls > 0) continue;
    ScopedFd fd(it->second.fd);
    Registry().erase(it);
    if (!fd) continue;
    std::string parent_path, name;
    // Refused: another process still uses it, and removes it when it is done.
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0 && SplitLast(mask.path, parent_path, name)) {
      leaving[parent_path].push_back({std::move(name), fd.get()});
    }
    held.push_back(std::move(fd));
  }
  for (const auto& [parent_path, entries] : leaving) RemoveLeaving(parent_path, entries);
}

absl::StatusOr<ReadOnlyHolds> ReadOnlyHolds::Take(const std::vector<std::string>& paths) {
  ReadOnlyHolds holds;
  for (const std::string& path : paths) {
    const Entry entry = OpenEntry(path);
    ScopedFd fd;
    if (entry.parent) {
      fd.reset(::openat(entry.parent.get(), entry.name.c_str(),
                        O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    }
    struct stat st;
    if (!fd || ::flock(fd.get(), LOCK_SH | LOCK_NB) != 0 || ::fstat(fd.get(), &st) != 0) {
      return absl::UnavailableError(absl::StrCat(
          "the protected entry ", path, " changed while the sandbox was laid out (",
          std::strerror(errno), "); nothing ran, try again"));
    }
    holds.held_.push_back({path, std::move(fd), st.st_dev, st.st_ino});
  }
  return holds;
}

absl::Status ReadOnlyHolds::StillInPlace() const {
  for (const Held& held : held_) {
    const Entry entry = OpenEntry(held.path);
    struct stat st;
    if (!entry.parent ||
        ::fstatat(entry.parent.get(), entry.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        st.st_dev != held.device || st.st_ino != held.inode) {
      return absl::UnavailableError(absl::StrCat(
          "the protected entry ", held.path,
          " was replaced while the sandbox was set up; nothing ran, try again"));
    }
  }
  return absl::OkStatus();
}

void DrainMaskRemovals() { Reaper().Drain(); }

void SetMaskRemovalHoldOffForTesting(std::chrono::milliseconds bound) {
  Reaper().SetMaxHoldOff(bound);
}

MaskSetupScope::MaskSetupScope() { Reaper().BeginSetup(); }

MaskSetupScope::~MaskSetupScope() { End(); }

void MaskSetupScope::End() {
  if (ended_) return;
  ended_ = true;
  Reaper().EndSetup();
}

bool IsHeldHere(const std::string& path) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  return Registry().count(path) != 0;
}

ExistingEntry ClassifyExistingEntry(const std::string& path, const struct stat& st) {
  if (IsHeldHere(path)) return ExistingEntry::kMaskMountPoint;
  if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) return ExistingEntry::kOther;
  if (S_ISREG(st.st_mode) && st.st_size > 2) return ExistingEntry::kOther;  // no lookup
  const Entry entry = OpenEntry(path);
  if (!entry.parent) return ExistingEntry::kOther;
  const int dir = entry.parent.get();
  const char* name = entry.name.c_str();
  struct stat now;
  if (::fstatat(dir, name, &now, AT_SYMLINK_NOFOLLOW) != 0 || !IsUnwritten(dir, name, now)) {
    return ExistingEntry::kOther;
  }
  ScopedFd fd(::openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  return fd && ::fgetxattr(fd.get(), kMark, nullptr, 0) >= 0 ? ExistingEntry::kMaskMountPoint
                                                            : ExistingEntry::kUnmarkedUnwritten;
}

bool IsMaskAsideName(absl::string_view name) {
  if (!absl::ConsumePrefix(&name, kMaskAsidePrefix) || name.size() != 16) return false;
  for (char c : name) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool IsLeftAside(const std::string& path) {
  // The name first: the scan asks this of every directory it meets.
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos || !IsMaskAsideName(absl::string_view(path).substr(slash + 1))) {
    return false;
  }
  const Entry entry = OpenEntry(path);
  if (!entry.parent) return false;
  ScopedFd dir(::openat(entry.parent.get(), entry.name.c_str(),
                        O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  return dir && ForEachName(dir.get(), [&dir](absl::string_view name) {
           const std::string child(name);
           return IsMaskAsideName(name) && IsEmptyDirectoryAt(dir.get(), child.c_str());
         });
}

void RemoveAsideLater(const std::string& path) { Reaper().Remove(path); }

}  // namespace airlock::broker
