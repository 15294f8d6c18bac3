#include "broker/fs/regular_file.h"

#include <fcntl.h>
#include <unistd.h>

#include "broker/fs/fs_errors.h"
#include "platform/base/errno_status.h"
#include "platform/base/fd_io.h"

namespace airlock::broker {

absl::StatusOr<OpenedFile> OpenRegular(int dir_fd, const std::string& name, absl::string_view tool,
                                       absl::string_view canonical, bool mutation) {
  struct stat before;
  if (::fstatat(dir_fd, name.c_str(), &before, AT_SYMLINK_NOFOLLOW) != 0) {
    return WalkFailure(LastErrnoStatus("stat", canonical), tool, canonical, mutation);
  }
  if (!S_ISREG(before.st_mode)) {
    if (mutation && S_ISLNK(before.st_mode)) {
      return Stale(tool, canonical, "a symbolic link appeared at the target");
    }
    return NotRegular(tool, canonical, before.st_mode);
  }
  OpenedFile file;
  file.fd.reset(::openat(dir_fd, name.c_str(),
                         O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC));
  if (!file.fd) return WalkFailure(LastErrnoStatus("open", canonical), tool, canonical, mutation);
  if (::fstat(file.fd.get(), &file.st) != 0) return LastErrnoStatus("fstat", canonical);
  if (!S_ISREG(file.st.st_mode) || file.st.st_ino != before.st_ino ||
      file.st.st_dev != before.st_dev) {
    if (mutation) return Stale(tool, canonical, "the target was replaced");
    return NotRegular(tool, canonical, file.st.st_mode);
  }
  return file;
}

absl::StatusOr<std::string> ReadWhole(const OpenedFile& file, uint64_t bound,
                                      absl::string_view tool, absl::string_view canonical) {
  if (static_cast<uint64_t>(file.st.st_size) > bound) {
    return TooLarge(tool, canonical, static_cast<uint64_t>(file.st.st_size), bound);
  }
  auto content = ReadToEnd(file.fd.get(), bound, canonical);
  if (!content.ok() && content.status().code() == absl::StatusCode::kResourceExhausted) {
    return TooLarge(tool, canonical, bound + 1, bound);
  }
  return content;
}

}  // namespace airlock::broker
