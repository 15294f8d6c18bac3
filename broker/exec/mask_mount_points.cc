#include "broker/exec/mask_mount_points.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <deque>
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
  struct open_how how = {};
  how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  ScopedFd fd(static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, dir.c_str(), &how, sizeof(how))));
  if (fd || errno != ENOSYS) return fd;
  // No openat2 (before Linux 5.6): one component at a time, none of them a link.
  fd.reset(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  for (absl::string_view part : absl::StrSplit(dir, '/', absl::SkipEmpty())) {
    if (!fd) break;
    fd.reset(::openat(fd.get(), std::string(part).c_str(),
                      O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  }
  return fd;
}

// Empty `parent` when `path` has no parent or its parent cannot be opened that way.
Entry OpenEntry(const std::string& path) {
  Entry entry;
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash + 1 == path.size()) return entry;
  entry.name = path.substr(slash + 1);
  entry.parent_path = slash == 0 ? std::string("/") : path.substr(0, slash);
  entry.parent = OpenDirectoryNoLinks(entry.parent_path);
  return entry;
}

bool HoldsExactly(const Entry& entry, absl::string_view content) {
  ScopedFd fd(::openat(entry.parent.get(), entry.name.c_str(),
                       O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return false;
  std::string read(content.size() + 1, '\0');
  const ssize_t n = ::read(fd.get(), read.data(), read.size());
  return n == static_cast<ssize_t>(content.size()) &&
         absl::string_view(read).substr(0, content.size()) == content;
}

bool IsEmptyDirectoryAt(const Entry& entry) {
  ScopedFd fd(::openat(entry.parent.get(), entry.name.c_str(),
                       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return false;
  alignas(dirent64) char buffer[4096];
  for (;;) {
    const ssize_t n = ::getdents64(fd.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n == 0;
    for (ssize_t at = 0; at < n;) {
      const auto* dirent = reinterpret_cast<const dirent64*>(buffer + at);
      at += dirent->d_reclen;
      const absl::string_view name = dirent->d_name;
      if (name != "." && name != "..") return false;
    }
  }
}

// An entry as the broker made it: an empty directory, or a file holding one of the contents a
// mask is made with.
bool IsUnwritten(const Entry& entry, const struct stat& st) {
  if (S_ISDIR(st.st_mode)) return IsEmptyDirectoryAt(entry);
  if (!S_ISREG(st.st_mode)) return false;
  for (absl::string_view content : kUnwrittenContents) {
    if (static_cast<size_t>(st.st_size) == content.size() &&
        (content.empty() || HoldsExactly(entry, content))) {
      return true;
    }
  }
  return false;
}

// Removes the directory `path` if it is empty, through a link-free parent.
void RemoveEmptyDirectory(const std::string& path) {
  const Entry entry = OpenEntry(path);
  if (entry.parent) ::unlinkat(entry.parent.get(), entry.name.c_str(), AT_REMOVEDIR);
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
int HoldMountPoint(const CoveredPath& mask) {
  const Entry entry = OpenEntry(mask.path);
  if (!entry.parent) return -1;  // a link on the way (or gone): bwrap's mount fails closed
  const int dir = entry.parent.get();
  const char* name = entry.name.c_str();
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
    while (::flock(fd.get(), LOCK_SH) != 0 && errno == EINTR) {
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

// Removes renamed-aside mask directories in the background. Drained at exit, so a process that
// returns leaves nothing behind.
class MaskReaper {
 public:
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

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      wake_.wait(lock, [this] { return !queue_.empty(); });
      const std::string path = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      lock.unlock();
      // Only if still empty: a sandbox of a later call may have written into it (it is an
      // ordinary directory of the root now), and then it stays, under its temp name. It is
      // never renamed back to the protected name.
      RemoveEmptyDirectory(path);
      lock.lock();
      pending_.erase(path);
      busy_ = false;
      if (queue_.empty()) idle_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::deque<std::string> queue_;  // guarded by mutex_
  std::set<std::string> pending_;  // guarded by mutex_; queued or being removed
  bool busy_ = false;              // guarded by mutex_
  bool started_ = false;           // guarded by mutex_; the thread runs (detached)
};

MaskReaper& Reaper() {
  static MaskReaper* const reaper = new MaskReaper;
  return *reaper;
}

// Removes the mount point `fd` holds if no other process holds it and it is still the
// unwritten entry the broker made at `path`.
void RemoveIfLast(const std::string& path, int fd) {
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) return;  // another process still uses it
  const Entry entry = OpenEntry(path);
  if (!entry.parent) return;
  const int dir = entry.parent.get();
  const char* name = entry.name.c_str();
  struct stat held, named;
  if (::fstat(fd, &held) != 0 || ::fstatat(dir, name, &named, AT_SYMLINK_NOFOLLOW) != 0 ||
      held.st_dev != named.st_dev || held.st_ino != named.st_ino ||
      !IsUnwritten(entry, named)) {
    return;
  }
  if (S_ISREG(named.st_mode)) {
    ::unlinkat(dir, name, 0);
    return;
  }
  // Freeing a directory's block can wait for the disk (a synchronous discard on file systems
  // mounted with `discard`: about a millisecond each). The name goes now — renamed to an
  // unprotected name beside it — and the directory is removed by the reaper thread.
  const std::string aside = AsideName();
  if (::renameat2(dir, name, dir, aside.c_str(), RENAME_NOREPLACE) == 0) {
    Reaper().Remove(absl::StrCat(entry.parent_path == "/" ? "" : entry.parent_path, "/", aside));
  } else {
    ::unlinkat(dir, name, AT_REMOVEDIR);
  }
}

}  // namespace

void AcquireMasks(const std::vector<CoveredPath>& masks) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  for (const CoveredPath& mask : masks) {
    Hold& hold = Registry()[mask.path];
    if (hold.calls++ == 0) hold.fd = HoldMountPoint(mask);
  }
}

void ReleaseMasks(const std::vector<CoveredPath>& masks) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  for (const CoveredPath& mask : masks) {
    auto it = Registry().find(mask.path);
    if (it == Registry().end() || --it->second.calls > 0) continue;
    const int fd = it->second.fd;
    Registry().erase(it);
    if (fd < 0) continue;
    RemoveIfLast(mask.path, fd);
    ::close(fd);  // drops this process's lock
  }
}

void DrainMaskRemovals() { Reaper().Drain(); }

bool IsHeldHere(const std::string& path) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  return Registry().count(path) != 0;
}

bool IsMaskMountPoint(const std::string& path, const struct stat& st) {
  if (IsHeldHere(path)) return true;
  if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) return false;
  const Entry entry = OpenEntry(path);
  if (!entry.parent) return false;
  struct stat now;
  if (::fstatat(entry.parent.get(), entry.name.c_str(), &now, AT_SYMLINK_NOFOLLOW) != 0) {
    return false;
  }
  if (!S_ISDIR(now.st_mode) && !S_ISREG(now.st_mode)) return false;
  ScopedFd fd(::openat(entry.parent.get(), entry.name.c_str(),
                       O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd || ::fgetxattr(fd.get(), kMark, nullptr, 0) < 0) return false;
  return IsUnwritten(entry, now);
}

bool IsMaskAsideName(absl::string_view name) {
  if (!absl::ConsumePrefix(&name, kMaskAsidePrefix) || name.size() != 16) return false;
  for (char c : name) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool IsEmptyDirectory(const std::string& path) {
  const Entry entry = OpenEntry(path);
  return entry.parent && IsEmptyDirectoryAt(entry);
}

void RemoveAsideLater(const std::string& path) { Reaper().Remove(path); }

}  // namespace airlock::broker
