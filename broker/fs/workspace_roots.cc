#include "broker/fs/workspace_roots.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>

#include "absl/strings/str_cat.h"
#include "broker/fs/beneath.h"
#include "broker/fs/path_resolver.h"
#include "broker/wire_error.h"
#include "platform/base/errno_status.h"

namespace airlock::broker {

absl::StatusOr<WorkspaceRoots> WorkspaceRoots::Open(
    const std::vector<std::string>& requested_roots) {
  if (requested_roots.empty()) {
    return WireError(v1::INVALID_ARGUMENT, "no workspace root was given");
  }
  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof(cwd)) == nullptr) return LastErrnoStatus("getcwd");
  WorkspaceRoots roots;
  roots.slash_.reset(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!roots.slash_) return LastErrnoStatus("open", "/");
  for (const std::string& requested_root : requested_roots) {
    auto resolved = ResolvePath(requested_root, cwd);
    if (!resolved.ok()) return resolved.status();
    if (!resolved->exists()) {
      return WireError(v1::INVALID_ARGUMENT,
                       absl::StrCat("root ", resolved->canonical, " does not exist"));
    }
    Root root;
    root.path = resolved->canonical;
    root.components = resolved->components;
    auto fd = OpenBeneath(roots.slash_.get(), resolved->components, O_PATH | O_DIRECTORY,
                          WalkMode::kAuto, root.path);
    if (!fd.ok()) return fd.status();
    root.fd = std::move(*fd);
    struct stat st;
    if (::fstat(root.fd.get(), &st) != 0) return LastErrnoStatus("fstat", root.path);
    root.device = st.st_dev;
    root.inode = st.st_ino;
    roots.paths_.push_back(root.path);
    roots.roots_.push_back(std::move(root));
  }
  return roots;
}

absl::Status WorkspaceRoots::Verify() const {
  for (const Root& root : roots_) {
    struct stat st;
    if (::lstat(root.path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
        static_cast<uint64_t>(st.st_dev) != root.device ||
        static_cast<uint64_t>(st.st_ino) != root.inode) {
      return WireError(v1::SANDBOX_UNAVAILABLE,
                       absl::StrCat("root ", root.path,
                                    " is no longer the directory the broker started with (it "
                                    "was removed or replaced by a link or another directory); "
                                    "every file call is refused"));
    }
  }
  return absl::OkStatus();
}

int WorkspaceRoots::RootOf(const std::string& canonical) const {
  int best = -1;
  for (size_t i = 0; i < roots_.size(); ++i) {
    if (PathIsWithin(canonical, roots_[i].path) &&
        (best < 0 || roots_[i].components.size() >
                         roots_[static_cast<size_t>(best)].components.size())) {
      best = static_cast<int>(i);
    }
  }
  return best;
}

WorkspaceRoots::Anchor WorkspaceRoots::AnchorFor(
    const std::vector<std::string>& canonical_components, size_t count) const {
  Anchor anchor;
  anchor.dir_fd = slash_.get();
  size_t skip = 0;
  // Innermost root whose components are a prefix of the first `count` components.
  const Root* best = nullptr;
  for (const Root& root : roots_) {
    if (root.components.size() > count) continue;
    if (!std::equal(root.components.begin(), root.components.end(),
                    canonical_components.begin())) {
      continue;
    }
    if (best == nullptr || root.components.size() > best->components.size()) best = &root;
  }
  if (best != nullptr) {
    anchor.dir_fd = best->fd.get();
    skip = best->components.size();
  }
  anchor.components.assign(canonical_components.begin() + static_cast<long>(skip),
                           canonical_components.begin() + static_cast<long>(count));
  return anchor;
}

}  // namespace airlock::broker
