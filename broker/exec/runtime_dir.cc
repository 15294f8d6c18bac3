#include "broker/exec/runtime_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "platform/base/errno_status.h"
#include "platform/base/logging.h"
#include "platform/base/scoped_fd.h"
#include "platform/base/status_macros.h"

namespace airlock::broker {
namespace {

constexpr char kCallPrefix[] = "shell-";

absl::Status RemoveChildren(int dir_fd, const std::string& path, int depth) {
  if (depth > 256) return absl::FailedPreconditionError(absl::StrCat("too deep: ", path));
  ScopedFd listing(::dup(dir_fd));
  if (!listing) return LastErrnoStatus("dup", path);
  DIR* dir = ::fdopendir(listing.get());
  if (dir == nullptr) return LastErrnoStatus("fdopendir", path);
  (void)listing.release();
  absl::Status status;
  while (dirent* entry = ::readdir(dir)) {
    const absl::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    if (::unlinkat(dir_fd, entry->d_name, 0) == 0) continue;
    if (errno != EISDIR && errno != EPERM) {
      if (errno != ENOENT && status.ok()) status = LastErrnoStatus("unlink", path);
      continue;
    }
    const std::string child = absl::StrCat(path, "/", name);
    ScopedFd child_fd(::openat(dir_fd, entry->d_name,
                               O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!child_fd && errno == EACCES) {
      ::fchmodat(dir_fd, entry->d_name, 0700, 0);
      child_fd.reset(::openat(dir_fd, entry->d_name,
                              O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    }
    if (!child_fd) {
      if (status.ok()) status = LastErrnoStatus("open", child);
      continue;
    }
    ::fchmod(child_fd.get(), 0700);
    absl::Status inner = RemoveChildren(child_fd.get(), child, depth + 1);
    if (!inner.ok() && status.ok()) status = inner;
    if (::unlinkat(dir_fd, entry->d_name, AT_REMOVEDIR) != 0 && status.ok()) {
      status = LastErrnoStatus("rmdir", child);
    }
  }
  ::closedir(dir);
  return status;
}

}  // namespace

absl::StatusOr<std::string> EnsureRuntimeDir(const std::string& requested) {
  std::string path = requested;
  if (path.empty()) {
    // Prefer memory-backed directories: each call creates and removes a few directories
    // here, which costs milliseconds on a loaded disk and nothing on tmpfs.
    const char* xdg = std::getenv("XDG_RUNTIME_DIR");
    struct stat shm;
    if (xdg != nullptr && xdg[0] == '/') {
      path = absl::StrCat(xdg, "/airlock");
    } else if (::lstat("/dev/shm", &shm) == 0 && S_ISDIR(shm.st_mode) &&
               (shm.st_mode & S_ISVTX) != 0) {
      path = absl::StrCat("/dev/shm/airlock-", ::geteuid());
    } else {
      path = absl::StrCat("/tmp/airlock-", ::geteuid());
    }
  }
  if (path.empty() || path[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat("runtime directory '", path,
                                                   "' is not absolute"));
  }
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    return LastErrnoStatus("mkdir", path);
  }
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return LastErrnoStatus("lstat", path);
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "runtime directory ", path,
        " must be a directory (not a link) owned by this user with mode 0700"));
  }
  return path;
}

absl::StatusOr<CallDir> MakeCallDir(const std::string& runtime_dir) {
  CallDir call;
  call.path = absl::StrCat(runtime_dir, "/", kCallPrefix, ::getpid(), "-XXXXXX");
  if (::mkdtemp(call.path.data()) == nullptr) return LastErrnoStatus("mkdtemp", call.path);
  call.tmp = call.path + "/tmp";
  call.empty_dir = call.path + "/empty-dir";
  call.empty_file = call.path + "/empty-file";
  absl::Status status;
  if (::mkdir(call.tmp.c_str(), 0700) != 0) {
    status = LastErrnoStatus("mkdir", call.tmp);
  } else if (::mkdir(call.empty_dir.c_str(), 0500) != 0) {
    status = LastErrnoStatus("mkdir", call.empty_dir);
  } else {
    ScopedFd file(::open(call.empty_file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0400));
    if (!file) status = LastErrnoStatus("create", call.empty_file);
  }
  if (!status.ok()) {
    (void)RemoveTree(call.path);
    return status;
  }
  return call;
}

absl::Status RemoveTree(const std::string& path) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return absl::OkStatus();
    if (errno == ENOTDIR || errno == ELOOP) {
      if (::unlink(path.c_str()) != 0) return LastErrnoStatus("unlink", path);
      return absl::OkStatus();
    }
    return LastErrnoStatus("open", path);
  }
  ::fchmod(fd.get(), 0700);
  absl::Status status = RemoveChildren(fd.get(), path, 0);
  if (::rmdir(path.c_str()) != 0 && status.ok()) status = LastErrnoStatus("rmdir", path);
  return status;
}

int SweepStaleCallDirs(const std::string& runtime_dir) {
  DIR* dir = ::opendir(runtime_dir.c_str());
  if (dir == nullptr) return 0;
  std::vector<std::string> stale;
  while (dirent* entry = ::readdir(dir)) {
    absl::string_view name = entry->d_name;
    if (!absl::ConsumePrefix(&name, kCallPrefix)) continue;
    const size_t dash = name.find('-');
    int pid = 0;
    if (dash == absl::string_view::npos || !absl::SimpleAtoi(name.substr(0, dash), &pid) ||
        pid <= 0) {
      continue;
    }
    if (pid == ::getpid()) continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;
    stale.push_back(absl::StrCat(runtime_dir, "/", entry->d_name));
  }
  ::closedir(dir);
  int removed = 0;
  for (const std::string& path : stale) {
    const absl::Status status = RemoveTree(path);
    if (status.ok()) {
      ++removed;
    } else {
      AIRLOCK_LOG(kWarning, "cannot sweep ", path, ": ", status.message());
    }
  }
  return removed;
}

}  // namespace airlock::broker
