// Canonical absolute paths for what the broker protects or hides, which need not exist yet:
// bwrap mounts and the file tools' fences compare canonical paths, so a path given through a
// link or relative to somewhere else would silently protect nothing.
#ifndef PLATFORM_BASE_CANONICAL_PATH_H_
#define PLATFORM_BASE_CANONICAL_PATH_H_

#include <string>

#include "absl/status/statusor.h"

namespace airlock {

// `path` made absolute (a relative one is taken against `base`, an absolute directory), the
// links and dots of its longest existing prefix resolved, the missing rest appended as
// written. InvalidArgument when the missing rest holds "." or ".." (it cannot be resolved
// before it exists) or `base` is needed and not absolute.
[[nodiscard]] absl::StatusOr<std::string> CanonicalMaybeMissing(const std::string& path,
                                                                const std::string& base);

}  // namespace airlock

#endif  // PLATFORM_BASE_CANONICAL_PATH_H_
