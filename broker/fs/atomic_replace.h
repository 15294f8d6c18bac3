// Atomic, durable replacement of one directory entry (SPEC §5): a new temp file in the
// target's directory (O_EXCL|O_NOFOLLOW, 0600), written, fsynced, renamed over the target,
// the directory fsynced. A caller's barrier (ReplaceOptions::before_rename — the audit intent
// becoming durable) is awaited after the temp file is synced and before the rename, so the
// two overlap. The existing inode is never opened for writing, so other hard links
// keep the old content; on any failure the target is untouched and the temp file is removed.
#ifndef BROKER_FS_ATOMIC_REPLACE_H_
#define BROKER_FS_ATOMIC_REPLACE_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace airlock::broker {

// Temp files are named kTempFilePrefix + 16 random hex digits; the startup sweep
// (temp_sweep.h) removes what a crash left behind by this name.
inline constexpr char kTempFilePrefix[] = ".airlock-tmp-";

// What the target entry must still be right before the rename. Anything else (a link, a
// directory, another inode, an entry where there was none) → APPROVAL_STALE, nothing written.
struct ExpectedTarget {
  bool exists = false;
  uint64_t device = 0;
  uint64_t inode = 0;
};

enum class ReplaceStep { kWrite, kSync, kRecheck, kRename, kSyncDirectory };

struct ReplaceOptions {
  // Permission bits of the result. Only 0777 is kept: never setuid, setgid or sticky. New
  // files are 0600; a replaced file keeps its ordinary bits.
  mode_t mode = 0600;
  // Tests inject failures: called before each step; a non-OK status fails the call there.
  std::function<absl::Status(ReplaceStep)> fault_for_testing;
  // Called after the temp file is written and synced, right before the target is rechecked
  // and renamed: what must hold before the replacement becomes visible (the audit intent on
  // disk). A non-OK status fails the call with the target untouched and the temp file removed.
  std::function<absl::Status()> before_rename;
};

// Replaces entry `name` of the directory `dir_fd` (opened O_RDONLY|O_DIRECTORY, so that it
// can be fsynced) with `content`. `what` names the target in errors.
[[nodiscard]] absl::Status ReplaceAtomically(int dir_fd, const std::string& name,
                                             absl::string_view content,
                                             const ExpectedTarget& expected,
                                             const ReplaceOptions& options,
                                             absl::string_view what);

}  // namespace airlock::broker

#endif  // BROKER_FS_ATOMIC_REPLACE_H_
