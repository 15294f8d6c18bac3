#include "platform/linux/open_no_links.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_split.h"

namespace airlock::linux_sandbox {
namespace {

// An O_PATH | O_NOFOLLOW open of a final link opens the link itself: refused.
ScopedFd RefuseLinkItself(ScopedFd fd) {
  struct stat st;
  if (fd && ::fstat(fd.get(), &st) == 0 && S_ISLNK(st.st_mode)) {
    fd.reset();
    errno = ELOOP;
  }
  return fd;
}

ScopedFd WalkComponents(const std::string& path, int flags) {
  if (path.empty() || path[0] != '/') {
    errno = EINVAL;
    return ScopedFd();
  }
  ScopedFd fd(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  const std::vector<absl::string_view> parts = absl::StrSplit(path, '/', absl::SkipEmpty());
  if (parts.empty()) {
    fd.reset(::open("/", flags));
    return fd;
  }
  for (size_t i = 0; i < parts.size() && fd; ++i) {
    const bool last = i + 1 == parts.size();
    fd.reset(::openat(fd.get(), std::string(parts[i]).c_str(),
                      last ? flags : O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  }
  return fd;
}

}  // namespace

ScopedFd OpenNoLinks(const std::string& path, int flags, NoLinksWalk walk) {
  flags |= O_NOFOLLOW | O_CLOEXEC;
  const bool path_only = (flags & O_PATH) != 0 && (flags & O_DIRECTORY) == 0;
  if (walk == NoLinksWalk::kAuto) {
    struct open_how how = {};
    how.flags = static_cast<uint64_t>(flags);
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    ScopedFd fd;
    for (int attempt = 0; attempt < 16; ++attempt) {  // EAGAIN: a rename raced the lookup
      fd.reset(static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof(how))));
      if (fd || (errno != EAGAIN && errno != EINTR)) break;
    }
    if (fd || errno != ENOSYS) return path_only ? RefuseLinkItself(std::move(fd)) : std::move(fd);
  }
  ScopedFd fd = WalkComponents(path, flags);
  return path_only ? RefuseLinkItself(std::move(fd)) : std::move(fd);
}

}  // namespace airlock::linux_sandbox
