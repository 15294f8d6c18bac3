#include "broker/fs/beneath.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_join.h"
#include "platform/base/errno_status.h"

namespace airlock::broker {
namespace {

long RawOpenat2(int dir_fd, const char* path, int flags) {
  struct open_how how = {};
  how.flags = static_cast<uint64_t>(flags);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  return ::syscall(SYS_openat2, dir_fd, path, &how, sizeof(how));
}

bool ValidComponent(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

// O_PATH|O_NOFOLLOW opens a final link itself instead of failing (with openat2 too): refuse it.
absl::StatusOr<ScopedFd> RefuseLinkItself(ScopedFd fd, int flags, absl::string_view what) {
  if ((flags & O_PATH) != 0 && (flags & O_DIRECTORY) == 0) {
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) return LastErrnoStatus("fstat", what);
    if (S_ISLNK(st.st_mode)) return ErrnoToStatus(ELOOP, "open", what);
  }
  return fd;
}

}  // namespace

bool Openat2Available() {
  static const bool available = [] {
    const long fd = RawOpenat2(AT_FDCWD, ".", O_PATH | O_CLOEXEC);
    if (fd >= 0) {
      ::close(static_cast<int>(fd));
      return true;
    }
    return errno != ENOSYS && errno != EPERM;  // EPERM: a seccomp filter that refuses it
  }();
  return available;
}

absl::StatusOr<ScopedFd> OpenBeneath(int dir_fd, const std::vector<std::string>& components,
                                     int flags, WalkMode mode, absl::string_view what) {
  for (const std::string& name : components) {
    if (!ValidComponent(name)) return ErrnoToStatus(EINVAL, "open (bad component)", what);
  }
  flags |= O_CLOEXEC | O_NOFOLLOW;
  if (mode == WalkMode::kAuto && Openat2Available()) {
    const std::string relative = components.empty() ? std::string(".")
                                                    : absl::StrJoin(components, "/");
    // EAGAIN: a rename raced the lookup. Retried a bounded number of times, so a tree being
    // renamed in a loop cannot keep the broker spinning.
    for (int attempt = 0;; ++attempt) {
      const long fd = RawOpenat2(dir_fd, relative.c_str(), flags);
      if (fd >= 0) return RefuseLinkItself(ScopedFd(static_cast<int>(fd)), flags, what);
      if (errno == EINTR || (errno == EAGAIN && attempt < 16)) continue;
      return LastErrnoStatus("open", what);
    }
  }

  // The fallback: one directory at a time, never following a link.
  if (components.empty()) {
    ScopedFd fd(::openat(dir_fd, ".", flags));
    if (!fd) return LastErrnoStatus("open", what);
    return fd;
  }
  ScopedFd current;
  int at = dir_fd;
  for (size_t i = 0; i + 1 < components.size(); ++i) {
    ScopedFd next(::openat(at, components[i].c_str(),
                           O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next) return LastErrnoStatus("open", what);
    current = std::move(next);
    at = current.get();
  }
  ScopedFd fd(::openat(at, components.back().c_str(), flags));
  if (!fd) return LastErrnoStatus("open", what);
  return RefuseLinkItself(std::move(fd), flags, what);
}

}  // namespace airlock::broker
