#include "broker/fs/atomic_replace.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "broker/fs/fs_errors.h"
#include "platform/base/errno_status.h"
#include "platform/base/fd_io.h"
#include "platform/base/scoped_fd.h"

namespace airlock::broker {
namespace {

absl::Status Stale(absl::string_view what, absl::string_view why) {
  return broker::Stale("write", what, why);
}

std::string RandomTempName() {
  unsigned char bytes[8] = {};
  size_t filled = 0;
  while (filled < sizeof(bytes)) {
    const ssize_t n = ::getrandom(bytes + filled, sizeof(bytes) - filled, 0);
    if (n > 0) filled += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string name = kTempFilePrefix;
  for (unsigned char byte : bytes) {
    name.push_back(kHex[byte >> 4]);
    name.push_back(kHex[byte & 0xf]);
  }
  return name;
}

absl::Status Inject(const ReplaceOptions& options, ReplaceStep step) {
  return options.fault_for_testing ? options.fault_for_testing(step) : absl::OkStatus();
}

absl::Status Recheck(int dir_fd, const std::string& name, const ExpectedTarget& expected,
                     absl::string_view what) {
  struct stat st;
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno != ENOENT) return LastErrnoStatus("stat", what);
    if (expected.exists) return Stale(what, "the target disappeared");
    return absl::OkStatus();
  }
  if (!expected.exists) return Stale(what, "an entry appeared at the target");
  if (!S_ISREG(st.st_mode)) return Stale(what, "the target stopped being a regular file");
  if (static_cast<uint64_t>(st.st_dev) != expected.device ||
      static_cast<uint64_t>(st.st_ino) != expected.inode) {
    return Stale(what, "the target was replaced by another file");
  }
  return absl::OkStatus();
}

// The steps after the temp file exists; the caller removes it when they fail.
absl::Status FillAndRename(int dir_fd, int temp_fd, const std::string& temp_name,
                           const std::string& name, absl::string_view content,
                           const ExpectedTarget& expected, const ReplaceOptions& options,
                           absl::string_view what) {
  if (absl::Status s = Inject(options, ReplaceStep::kWrite); !s.ok()) return s;
  if (absl::Status s = WriteFully(temp_fd, content, what); !s.ok()) return s;
  const mode_t mode = options.mode & 0777;
  // The temp file was created 0600 (less the umask); change it only when the result differs.
  if (mode != 0600 && ::fchmod(temp_fd, mode) != 0) return LastErrnoStatus("fchmod", what);
  if (absl::Status s = Inject(options, ReplaceStep::kSync); !s.ok()) return s;
  if (::fsync(temp_fd) != 0) return LastErrnoStatus("fsync", what);
  if (options.before_rename) {
    if (absl::Status s = options.before_rename(); !s.ok()) return s;
  }
  if (absl::Status s = Inject(options, ReplaceStep::kRecheck); !s.ok()) return s;
  if (absl::Status s = Recheck(dir_fd, name, expected, what); !s.ok()) return s;
  if (absl::Status s = Inject(options, ReplaceStep::kRename); !s.ok()) return s;
  if (expected.exists) {
    if (::renameat(dir_fd, temp_name.c_str(), dir_fd, name.c_str()) != 0) {
      return LastErrnoStatus("rename", what);
    }
  } else if (::renameat2(dir_fd, temp_name.c_str(), dir_fd, name.c_str(), RENAME_NOREPLACE) != 0) {
    if (errno == EEXIST) return Stale(what, "an entry appeared at the target");
    if (errno != EINVAL) return LastErrnoStatus("rename", what);
    // A file system without RENAME_NOREPLACE: the recheck above is what remains.
    if (::renameat(dir_fd, temp_name.c_str(), dir_fd, name.c_str()) != 0) {
      return LastErrnoStatus("rename", what);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ReplaceAtomically(int dir_fd, const std::string& name, absl::string_view content,
                               const ExpectedTarget& expected, const ReplaceOptions& options,
                               absl::string_view what) {
  std::string temp_name;
  ScopedFd temp;
  for (int attempt = 0; attempt < 8 && !temp; ++attempt) {
    temp_name = RandomTempName();
    temp.reset(::openat(dir_fd, temp_name.c_str(),
                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!temp && errno != EEXIST) return LastErrnoStatus("create temp file for", what);
  }
  if (!temp) return ErrnoToStatus(EEXIST, "create temp file for", what);

  absl::Status status =
      FillAndRename(dir_fd, temp.get(), temp_name, name, content, expected, options, what);
  temp.reset();
  if (!status.ok()) {
    ::unlinkat(dir_fd, temp_name.c_str(), 0);
    return status;
  }
  // The rename is durable once the directory is; a failure here is reported, though the new
  // content is already in place (the caller cannot undo a completed rename).
  if (absl::Status s = Inject(options, ReplaceStep::kSyncDirectory); !s.ok()) return s;
  if (::fsync(dir_fd) != 0) return LastErrnoStatus("fsync directory of", what);
  return absl::OkStatus();
}

}  // namespace airlock::broker
