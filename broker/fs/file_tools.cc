// Interim read/list (foundation). The file-operations work replaces this with descriptor-
// relative resolution, protected storage and atomic replacement.
#include "broker/fs/file_tools.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "broker/wire_error.h"
#include "platform/base/errno_status.h"
#include "platform/base/fd_io.h"
#include "platform/base/scoped_fd.h"
#include "platform/base/status_macros.h"

namespace airlock::broker {
namespace {

absl::StatusOr<std::string> RealPath(const std::string& path) {
  char buffer[PATH_MAX];
  if (::realpath(path.c_str(), buffer) == nullptr) return LastErrnoStatus("resolve", path);
  return std::string(buffer);
}

class InterimFileTools final : public FileTools {
 public:
  explicit InterimFileTools(FileToolsOptions options) : options_(std::move(options)) {}

  absl::StatusOr<v1::ReadResult> Read(const v1::ReadRequest& request) override {
    AIRLOCK_ASSIGN_OR_RETURN(std::string path, Resolve(request.path()));
    ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    if (!fd) return LastErrnoStatus("open", path);
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) return LastErrnoStatus("fstat", path);
    if (!S_ISREG(st.st_mode)) {
      return WireError(v1::INVALID_ARGUMENT, absl::StrCat("read ", path, ": not a regular file"));
    }
    AIRLOCK_ASSIGN_OR_RETURN(std::string content,
                             ReadToEnd(fd.get(), options_.max_file_bytes, path));
    v1::ReadResult result;
    result.set_canonical_path(path);
    result.set_file_size(content.size());
    const uint64_t offset = std::min<uint64_t>(request.offset(), content.size());
    uint64_t length = content.size() - offset;
    if (request.limit() != 0) length = std::min<uint64_t>(length, request.limit());
    result.set_eof(offset + length == content.size());
    result.set_content(content.substr(offset, length));
    return result;
  }

  absl::StatusOr<v1::ListResult> List(const v1::ListRequest& request) override {
    AIRLOCK_ASSIGN_OR_RETURN(std::string path, Resolve(request.path()));
    DIR* dir = ::opendir(path.c_str());
    if (dir == nullptr) return LastErrnoStatus("opendir", path);
    v1::ListResult result;
    result.set_canonical_path(path);
    while (dirent* entry = ::readdir(dir)) {
      absl::string_view name(entry->d_name);
      if (name == "." || name == "..") continue;
      v1::ListEntry* out = result.add_entries();
      out->set_name(std::string(name));
      out->set_type(entry->d_type == DT_DIR   ? v1::ENTRY_TYPE_DIRECTORY
                    : entry->d_type == DT_REG ? v1::ENTRY_TYPE_FILE
                    : entry->d_type == DT_LNK ? v1::ENTRY_TYPE_SYMLINK
                                              : v1::ENTRY_TYPE_OTHER);
    }
    ::closedir(dir);
    std::sort(result.mutable_entries()->begin(), result.mutable_entries()->end(),
              [](const v1::ListEntry& a, const v1::ListEntry& b) { return a.name() < b.name(); });
    return result;
  }

  absl::StatusOr<v1::WriteResult> Write(const v1::WriteRequest&) override {
    return WireError(v1::DENIED, "write is not available in this build");
  }
  absl::StatusOr<v1::EditResult> Edit(const v1::EditRequest&) override {
    return WireError(v1::DENIED, "edit is not available in this build");
  }
  absl::StatusOr<MutationPlan> PlanWrite(const v1::WriteRequest&) override {
    return WireError(v1::DENIED, "write is not available in this build");
  }
  absl::StatusOr<MutationPlan> PlanEdit(const v1::EditRequest&) override {
    return WireError(v1::DENIED, "edit is not available in this build");
  }
  absl::StatusOr<v1::WriteResult> Commit(const MutationPlan&, CommitPermission) override {
    return WireError(v1::DENIED, "write is not available in this build");
  }

 private:
  absl::StatusOr<std::string> Resolve(const std::string& requested_path) {
    if (requested_path.empty() || requested_path.find('\0') != std::string::npos) {
      return WireError(v1::INVALID_ARGUMENT, "empty path or NUL byte in path");
    }
    const std::string joined = requested_path[0] == '/'
                                   ? requested_path
                                   : absl::StrCat(options_.roots.front(), "/", requested_path);
    AIRLOCK_ASSIGN_OR_RETURN(std::string path, RealPath(joined));
    for (const std::string& root : options_.roots) {
      if (path == root || absl::StartsWith(path, absl::StrCat(root, "/"))) return path;
    }
    return WireError(v1::OUTSIDE_SANDBOX,
                     absl::StrCat("access to ", path, " refused: outside every root"));
  }

  FileToolsOptions options_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<FileTools>> FileTools::Create(FileToolsOptions options) {
  if (options.roots.empty()) return absl::InvalidArgumentError("no workspace root");
  for (std::string& root : options.roots) {
    AIRLOCK_ASSIGN_OR_RETURN(root, RealPath(root));
  }
  return std::make_unique<InterimFileTools>(std::move(options));
}

}  // namespace airlock::broker
