#include "broker/exec/runtime_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cerrno>
#include <cstdlib>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "platform/base/errno_status.h"
#include "platform/base/logging.h"
#include "platform/base/scoped_fd.h"
#include "platform/base/status_macros.h"

namespace airlock::broker {
namespace {

constexpr char kCallPrefix[] = "shell-";
constexpr char kOutputPrefix[] = "output-";

// Created 0700 when missing; then it must be a real directory (not a link) owned by this
// user and closed to everyone else.
absl::Status EnsurePrivateDir(const std::string& path, absl::string_view what) {
  if (path.empty() || path[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat(what, " '", path, "' is not absolute"));
  }
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    return LastErrnoStatus("mkdir", path);
  }
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return LastErrnoStatus("lstat", path);
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, " ", path, " must be a directory (not a link) owned by this user with mode 0700"));
  }
  return absl::OkStatus();
}

// $XDG_RUNTIME_DIR, resolved, when it is a directory of ours that nobody else can write.
absl::StatusOr<std::string> UsableXdgRuntimeDir(const std::string& xdg) {
  if (xdg.empty()) return absl::NotFoundError("XDG_RUNTIME_DIR is not set");
  if (xdg[0] != '/') {
    return absl::FailedPreconditionError(
        absl::StrCat("XDG_RUNTIME_DIR=", xdg, " is not an absolute path"));
  }
  char resolved[PATH_MAX];
  if (::realpath(xdg.c_str(), resolved) == nullptr) {
    return LastErrnoStatus("resolve XDG_RUNTIME_DIR", xdg);
  }
  struct stat st;
  if (::lstat(resolved, &st) != 0) return LastErrnoStatus("lstat XDG_RUNTIME_DIR", resolved);
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 022) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "XDG_RUNTIME_DIR=", xdg, " is not a directory owned by uid ", ::geteuid(),
        " and closed to writes by group and others"));
  }
  return std::string(resolved);
}

// The pid in `<prefix><pid>-…`, or 0 when `name` is not such a name.
pid_t PidInName(absl::string_view name, absl::string_view prefix) {
  if (!absl::ConsumePrefix(&name, prefix)) return 0;
  const size_t dash = name.find('-');
  int pid = 0;
  if (dash == absl::string_view::npos || !absl::SimpleAtoi(name.substr(0, dash), &pid) ||
      pid <= 0) {
    return 0;
  }
  return pid;
}

bool NoLongerRuns(pid_t pid) {
  if (pid == ::getpid()) return false;
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

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

RuntimeDirDefaults RuntimeDirDefaults::FromEnvironment() {
  RuntimeDirDefaults defaults;
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg != nullptr) {
    defaults.xdg_runtime_dir = xdg;
  }
  return defaults;
}

absl::StatusOr<std::string> EnsureRuntimeDir(const std::string& requested) {
  return EnsureRuntimeDir(requested, RuntimeDirDefaults::FromEnvironment());
}

absl::StatusOr<std::string> EnsureRuntimeDir(const std::string& requested,
                                             const RuntimeDirDefaults& defaults) {
  if (!requested.empty()) {
    AIRLOCK_RETURN_IF_ERROR(EnsurePrivateDir(requested, "runtime directory"));
    return requested;
  }
  // Prefer memory-backed directories: each call creates and removes a few directories
  // here, which costs milliseconds on a loaded disk and nothing on tmpfs.
  std::vector<std::string> candidates;
  std::vector<std::string> skipped;
  absl::StatusOr<std::string> xdg = UsableXdgRuntimeDir(defaults.xdg_runtime_dir);
  if (xdg.ok()) {
    candidates.push_back(absl::StrCat(*xdg, "/airlock"));
  } else if (!defaults.xdg_runtime_dir.empty()) {
    skipped.push_back(std::string(xdg.status().message()));
  }
  struct stat shm;
  if (::lstat(defaults.shm.c_str(), &shm) == 0 && S_ISDIR(shm.st_mode) &&
      (shm.st_mode & S_ISVTX) != 0) {
    candidates.push_back(absl::StrCat(defaults.shm, "/airlock-", ::geteuid()));
  } else {
    skipped.push_back(absl::StrCat(defaults.shm, " is not a sticky directory"));
  }
  candidates.push_back(absl::StrCat(defaults.tmp, "/airlock-", ::geteuid()));
  for (const std::string& candidate : candidates) {
    const absl::Status usable = EnsurePrivateDir(candidate, "runtime directory");
    if (usable.ok()) {
      for (const std::string& reason : skipped) {
        AIRLOCK_LOG(kInfo, "runtime directory: skipped: ", reason);
      }
      return candidate;
    }
    skipped.push_back(std::string(usable.message()));
  }
  return absl::FailedPreconditionError(
      absl::StrCat("no usable runtime directory: ", absl::StrJoin(skipped, "; ")));
}

absl::StatusOr<std::string> EnsureOutputDir(const std::string& runtime_dir) {
  const std::string path = absl::StrCat(runtime_dir, "-output");
  AIRLOCK_RETURN_IF_ERROR(EnsurePrivateDir(path, "output directory"));
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

namespace {

// The entries of `dir` named `prefix` + the pid of a broker that no longer runs + "-…".
std::vector<std::string> EntriesOfGoneBrokers(const std::string& dir, const char* prefix) {
  std::vector<std::string> stale;
  DIR* stream = ::opendir(dir.c_str());
  if (stream == nullptr) return stale;
  while (dirent* entry = ::readdir(stream)) {
    const pid_t pid = PidInName(entry->d_name, prefix);
    if (pid == 0 || !NoLongerRuns(pid)) continue;
    stale.push_back(absl::StrCat(dir, "/", entry->d_name));
  }
  ::closedir(stream);
  return stale;
}

}  // namespace

int SweepStaleCallDirs(const std::string& runtime_dir) {
  const std::vector<std::string> stale = EntriesOfGoneBrokers(runtime_dir, kCallPrefix);
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

int SweepStaleOutputFiles(const std::string& output_dir) {
  const std::vector<std::string> stale = EntriesOfGoneBrokers(output_dir, kOutputPrefix);
  int removed = 0;
  for (const std::string& path : stale) {
    // Only files are ever made here: unlink(2) does not remove a directory.
    if (::unlink(path.c_str()) == 0) {
      ++removed;
    } else if (errno != ENOENT) {
      const absl::Status status = LastErrnoStatus("unlink", path);
      AIRLOCK_LOG(kWarning, "cannot sweep ", path, ": ", status.message());
    }
  }
  return removed;
}

}  // namespace airlock::broker
