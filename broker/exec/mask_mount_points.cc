#include "broker/exec/mask_mount_points.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
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

std::string Parent(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == 0 ? std::string("/") : path.substr(0, slash);
}

bool HoldsExactly(const std::string& path, absl::string_view content) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return false;
  std::string read(content.size() + 1, '\0');
  const ssize_t n = ::read(fd.get(), read.data(), read.size());
  return n == static_cast<ssize_t>(content.size()) &&
         absl::string_view(read).substr(0, content.size()) == content;
}

// An entry as the broker made it: an empty directory, or a file holding one of the contents a
// mask is made with.
bool IsUnwritten(const std::string& path, const struct stat& st) {
  if (S_ISDIR(st.st_mode)) return IsEmptyDirectory(path);
  if (!S_ISREG(st.st_mode)) return false;
  for (absl::string_view content : kUnwrittenContents) {
    if (static_cast<size_t>(st.st_size) == content.size() &&
        (content.empty() || HoldsExactly(path, content))) {
      return true;
    }
  }
  return false;
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
  const char* path = mask.path.c_str();
  for (int attempt = 0; attempt < 3; ++attempt) {
    // Made here: marked and held through the descriptor it was made with (a directory is
    // opened once more). Nobody else holds a new entry, so there is nothing to verify.
    ScopedFd fd;
    if (mask.directory) {
      if (::mkdir(path, 0755) == 0) {
        fd.reset(::open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!fd) {
          ::rmdir(path);  // not left unmarked and unheld
          return -1;
        }
      }
    } else {
      fd.reset(::open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444));
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
    fd.reset(::open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (mask.directory ? O_DIRECTORY : 0)));
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
    if (::fstat(fd.get(), &held) == 0 && ::lstat(path, &named) == 0 &&
        held.st_dev == named.st_dev && held.st_ino == named.st_ino) {
      return fd.release();
    }
    // Removed (or replaced) by its last holder between our open and our lock: again.
  }
  return -1;
}

// A sibling of `path` under kMaskAsidePrefix, never a protected name.
std::string AsideName(const std::string& path) {
  unsigned char bytes[8] = {};
  size_t filled = 0;
  while (filled < sizeof(bytes)) {
    const ssize_t n = ::getrandom(bytes + filled, sizeof(bytes) - filled, 0);
    if (n > 0) filled += static_cast<size_t>(n);
  }
  std::string name = absl::StrCat(Parent(path) == "/" ? "" : Parent(path), "/", kMaskAsidePrefix);
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
      ::rmdir(path.c_str());
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
  struct stat held, named;
  if (::fstat(fd, &held) != 0 || ::lstat(path.c_str(), &named) != 0 ||
      held.st_dev != named.st_dev || held.st_ino != named.st_ino || !IsUnwritten(path, named)) {
    return;
  }
  if (S_ISREG(named.st_mode)) {
    ::unlink(path.c_str());
    return;
  }
  // Freeing a directory's block can wait for the disk (a synchronous discard on file systems
  // mounted with `discard`: about a millisecond each). The name goes now — renamed to an
  // unprotected name beside it — and the directory is removed by the reaper thread.
  const std::string aside = AsideName(path);
  if (::renameat2(AT_FDCWD, path.c_str(), AT_FDCWD, aside.c_str(), RENAME_NOREPLACE) == 0) {
    Reaper().Remove(aside);
  } else {
    ::rmdir(path.c_str());
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
  if (::lgetxattr(path.c_str(), kMark, nullptr, 0) < 0) return false;
  return IsUnwritten(path, st);
}

bool IsMaskAsideName(absl::string_view name) {
  if (!absl::ConsumePrefix(&name, kMaskAsidePrefix) || name.size() != 16) return false;
  for (char c : name) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool IsEmptyDirectory(const std::string& path) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return false;
  alignas(dirent64) char buffer[4096];
  for (;;) {
    const ssize_t n = ::getdents64(fd.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n == 0;
    for (ssize_t at = 0; at < n;) {
      const auto* entry = reinterpret_cast<const dirent64*>(buffer + at);
      at += entry->d_reclen;
      const absl::string_view name = entry->d_name;
      if (name != "." && name != "..") return false;
    }
  }
}

void RemoveAsideLater(const std::string& path) { Reaper().Remove(path); }

}  // namespace airlock::broker
