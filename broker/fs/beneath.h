// Opening canonical paths relative to a directory descriptor without following any link
// (SPEC §5): openat2 with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS where the
// kernel has it, else a component-by-component O_NOFOLLOW walk. A link that appears after the
// path was checked makes the open fail (ELOOP, ENOTDIR or EXDEV) instead of leading elsewhere.
#ifndef BROKER_FS_BENEATH_H_
#define BROKER_FS_BENEATH_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "platform/base/scoped_fd.h"

namespace airlock::broker {

enum class WalkMode {
  kAuto,           // openat2 when the kernel has it, the component walk otherwise
  kComponentWalk,  // always the component walk (tests; kernels without openat2)
};

// Whether this kernel supports openat2 with RESOLVE_BENEATH (probed once).
bool Openat2Available();

// Opens `components` (canonical names: no "", ".", ".." or '/') beneath `dir_fd` with `flags`
// (O_CLOEXEC and O_NOFOLLOW are added). No component may be a link; an empty list opens
// `dir_fd`'s directory itself. The errno-carrying status names `what`.
[[nodiscard]] absl::StatusOr<ScopedFd> OpenBeneath(int dir_fd,
                                                   const std::vector<std::string>& components,
                                                   int flags, WalkMode mode,
                                                   absl::string_view what);

}  // namespace airlock::broker

#endif  // BROKER_FS_BENEATH_H_
