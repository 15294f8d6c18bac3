#include "broker/fs/temp_sweep.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "broker/fs/atomic_replace.h"
#include "platform/base/errno_status.h"
#include "platform/base/scoped_fd.h"

namespace airlock::broker {

absl::StatusOr<SweepReport> SweepTemporaryFiles(int root_fd) {
  SweepReport report;
  ScopedFd root(::openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root) return LastErrnoStatus("open root for the temp-file sweep");
  struct stat root_st;
  if (::fstat(root.get(), &root_st) != 0) return LastErrnoStatus("fstat root");

  std::vector<std::pair<ScopedFd, int>> stack;
  stack.emplace_back(std::move(root), 0);
  while (!stack.empty()) {
    auto [dir_fd, depth] = std::move(stack.back());
    stack.pop_back();
    DIR* dir = ::fdopendir(dir_fd.get());
    if (dir == nullptr) continue;
    const int fd = dir_fd.release();  // now owned by `dir`
    while (dirent* entry = ::readdir(dir)) {
      if (++report.entries_seen > kSweepMaxEntries) {
        report.truncated = true;
        break;
      }
      const char* name = entry->d_name;
      if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
      unsigned char type = entry->d_type;
      if (type == DT_UNKNOWN) {
        struct stat st;
        if (::fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
      }
      if (type == DT_REG && absl::StartsWith(name, kTempFilePrefix)) {
        if (::unlinkat(fd, name, 0) == 0) ++report.removed;
      } else if (type == DT_DIR) {
        if (depth + 1 > kSweepMaxDepth) {
          report.truncated = true;
          continue;
        }
        ScopedFd child(::openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        struct stat st;
        if (!child || ::fstat(child.get(), &st) != 0 || st.st_dev != root_st.st_dev) continue;
        stack.emplace_back(std::move(child), depth + 1);
      }
    }
    ::closedir(dir);
    if (report.truncated && report.entries_seen > kSweepMaxEntries) break;
  }
  return report;
}

}  // namespace airlock::broker
