// The startup sweep (SPEC §5, §12): removes the temp files (atomic_replace.h) that a crashed
// broker left in the roots. The scan is bounded so a huge tree cannot stall the start:
// at most kSweepMaxDepth directory levels below each root and kSweepMaxEntries directory
// entries in all; it never follows links and never leaves the root's file system. Temp files
// left outside the roots (approved outside writes) are not swept.
#ifndef BROKER_FS_TEMP_SWEEP_H_
#define BROKER_FS_TEMP_SWEEP_H_

#include <cstdint>

#include "absl/status/statusor.h"

namespace airlock::broker {

inline constexpr int kSweepMaxDepth = 32;
inline constexpr uint64_t kSweepMaxEntries = 200000;

struct SweepReport {
  uint64_t removed = 0;
  uint64_t entries_seen = 0;
  bool truncated = false;  // a bound was reached before the whole tree was seen
};

// Sweeps the tree below the directory `root_fd` (any descriptor of it, O_PATH included).
[[nodiscard]] absl::StatusOr<SweepReport> SweepTemporaryFiles(int root_fd);

}  // namespace airlock::broker

#endif  // BROKER_FS_TEMP_SWEEP_H_
