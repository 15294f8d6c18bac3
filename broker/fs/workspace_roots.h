// The file tools' roots (SPEC §5): fixed at start from their canonical paths and identities,
// held open, and re-verified on every call. Also the anchor of every descriptor walk: a
// canonical path inside a root is opened beneath that root's descriptor, anything else
// beneath "/".
#ifndef BROKER_FS_WORKSPACE_ROOTS_H_
#define BROKER_FS_WORKSPACE_ROOTS_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "platform/base/scoped_fd.h"

namespace airlock::broker {

class WorkspaceRoots {
 public:
  // Canonicalizes each directory (relative ones against the current directory) and opens it.
  // A missing root or one that is not a directory is INVALID_ARGUMENT.
  [[nodiscard]] static absl::StatusOr<WorkspaceRoots> Open(
      const std::vector<std::string>& requested_roots);

  WorkspaceRoots(WorkspaceRoots&&) = default;
  WorkspaceRoots& operator=(WorkspaceRoots&&) = default;

  // SANDBOX_UNAVAILABLE when any root path no longer names the directory opened at start.
  [[nodiscard]] absl::Status Verify() const;

  const std::string& workspace() const { return roots_.front().path; }
  const std::vector<std::string>& paths() const { return paths_; }
  // The O_PATH descriptor of root `index` (as in paths()).
  int fd(size_t index) const { return roots_[index].fd.get(); }

  // The root containing `canonical` (the innermost one), or -1.
  int RootOf(const std::string& canonical) const;

  // Where to walk from to reach the first `count` components of a canonical path:
  // the innermost root containing it (and the components below that root), else "/".
  struct Anchor {
    int dir_fd = -1;
    std::vector<std::string> components;
  };
  Anchor AnchorFor(const std::vector<std::string>& canonical_components, size_t count) const;

 private:
  struct Root {
    std::string path;
    std::vector<std::string> components;
    ScopedFd fd;       // O_PATH | O_DIRECTORY
    uint64_t device = 0;
    uint64_t inode = 0;
  };
  WorkspaceRoots() = default;

  std::vector<Root> roots_;
  std::vector<std::string> paths_;
  ScopedFd slash_;
};

}  // namespace airlock::broker

#endif  // BROKER_FS_WORKSPACE_ROOTS_H_
