// Turns an errno value into an absl::Status that names the failed operation and its path.
#ifndef PLATFORM_BASE_ERRNO_STATUS_H_
#define PLATFORM_BASE_ERRNO_STATUS_H_

#include "absl/strings/string_view.h"

#include "absl/status/status.h"

namespace airlock {

// "open /work/a.txt: No such file or directory" with a code chosen from the errno
// (ENOENT → NotFound, EACCES/EPERM → PermissionDenied, EEXIST → AlreadyExists, …).
[[nodiscard]] absl::Status ErrnoToStatus(int error_number, absl::string_view operation,
                                         absl::string_view path = {});

// The same with errno read right now.
[[nodiscard]] absl::Status LastErrnoStatus(absl::string_view operation,
                                           absl::string_view path = {});

// The errno a status was made from, or 0 when it carries none.
int ErrnoOf(const absl::Status& status);

}  // namespace airlock

#endif  // PLATFORM_BASE_ERRNO_STATUS_H_
