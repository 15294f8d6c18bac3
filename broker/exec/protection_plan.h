// Which mounts keep protected storage read-only inside a shell sandbox whose roots are
// writable (SPEC §5, §6). The names come from profiles/protected_paths.h, the one list shared
// with the file tools, plus the broker's own protected paths (--protect, $AIRLOCK_HOME, …).
//
// - An existing protected path is re-bound read-only over itself.
// - A missing one is masked: an empty read-only directory (a file where git reads one, see
//   IsFileEntry) is mounted at its first missing component. Its mount point on the host is
//   made, shared and removed as mask_mount_points.h says, so nothing is left behind; an entry
//   found marked as such a mount point (another airlock's, or a killed broker's) is masked
//   again rather than taken for the user's file. Masks are placed in every root and every
//   nested repository (a directory holding `.git`).
// - A protected path that is a symbolic link cannot be mounted over (a mount follows the
//   link), so its parent directory is made read-only instead — conservative, like the seed.
// - Every directory between a root and a protected path is bound onto itself, so renaming or
//   removing it (to move the protection aside and recreate it) fails with EBUSY.
// - Git directories found anywhere (HEAD, objects/ and refs/ inside — e.g. submodules under
//   .git/modules) get their `hooks` and `config` protected the same way.
// The scan never follows links, does not descend into protected directories, and is bounded;
// past the bound the call is refused rather than run with unknown protection.
#ifndef BROKER_EXEC_PROTECTION_PLAN_H_
#define BROKER_EXEC_PROTECTION_PLAN_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "broker/exec/mask_mount_points.h"
#include "platform/linux/bwrap_launcher.h"

namespace airlock::broker {

struct ProtectionLimits {
  size_t max_directories = 20000;
  size_t max_depth = 64;
};

struct ProtectionPlan {
  std::vector<std::string> self_binds;
  std::vector<std::string> read_only;
  std::vector<linux_sandbox::CoveredPath> masks;  // all missing before the call
  // Entries of `read_only` that could be another airlock process's mask mount point that is
  // not marked (made a moment ago, or on a file system without user extended attributes):
  // unwritten ones (an empty directory, an empty file, a file saying "."). The call holds them
  // (HoldReadOnly) so that their maker leaves them in place.
  std::vector<std::string> held_read_only;
};

// `writable_roots` and `protected_paths` are canonical absolute paths (a protected path need
// not exist). FailedPrecondition (rule protected-scan-limit) when the scan bound is passed.
// `home` is the sandbox's HOME (canonical), where a missing `.gitconfig` is masked with a file
// (git reads it); everywhere else missing names get directories.
[[nodiscard]] absl::StatusOr<ProtectionPlan> PlanProtection(
    const std::vector<std::string>& writable_roots,
    const std::vector<std::string>& protected_paths, const ProtectionLimits& limits = {},
    const std::string& home = std::string());

}  // namespace airlock::broker

#endif  // BROKER_EXEC_PROTECTION_PLAN_H_
