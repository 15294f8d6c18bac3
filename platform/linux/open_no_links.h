// Opening an absolute host path with no link in any component, for the broker's changes to
// entries a sandbox can reach: a sandbox may swap a directory of its workspace for a link to
// anywhere at any moment, and a path opened normally would follow it.
#ifndef PLATFORM_LINUX_OPEN_NO_LINKS_H_
#define PLATFORM_LINUX_OPEN_NO_LINKS_H_

#include <string>

#include "platform/base/scoped_fd.h"

namespace airlock::linux_sandbox {

enum class NoLinksWalk {
  kAuto,           // openat2 (RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS) where the kernel has it
  kComponentWalk,  // one component at a time with O_NOFOLLOW (kernels before 5.6; tests)
};

// Opens the absolute `path` with `flags` (O_NOFOLLOW and O_CLOEXEC are added). A link in any
// component, the last one included, fails the open (ELOOP, or ENOTDIR for a link to a
// directory followed by more components); an O_PATH open of a final link, which O_NOFOLLOW
// alone would allow, fails with ELOOP too. On failure the descriptor is empty and errno says
// why.
ScopedFd OpenNoLinks(const std::string& path, int flags, NoLinksWalk walk = NoLinksWalk::kAuto);

}  // namespace airlock::linux_sandbox

#endif  // PLATFORM_LINUX_OPEN_NO_LINKS_H_
