// Opening and reading a regular file the broker is about to read or replace, without ever
// blocking: the type is checked before the open (a device is never opened), the open is
// O_NONBLOCK|O_NOFOLLOW, and the descriptor is checked again before anything is read.
#ifndef BROKER_FS_REGULAR_FILE_H_
#define BROKER_FS_REGULAR_FILE_H_

#include <sys/stat.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "platform/base/scoped_fd.h"

namespace airlock::broker {

struct OpenedFile {
  ScopedFd fd;
  struct stat st;
};

// Opens entry `name` of the directory `dir_fd` for reading. Not a regular file →
// INVALID_ARGUMENT; a change between the checks → as WalkFailure (fs_errors.h).
[[nodiscard]] absl::StatusOr<OpenedFile> OpenRegular(int dir_fd, const std::string& name,
                                                     absl::string_view tool,
                                                     absl::string_view canonical, bool mutation);

// The whole content of an opened file; more than `bound` bytes → TOO_LARGE.
[[nodiscard]] absl::StatusOr<std::string> ReadWhole(const OpenedFile& file, uint64_t bound,
                                                    absl::string_view tool,
                                                    absl::string_view canonical);

}  // namespace airlock::broker

#endif  // BROKER_FS_REGULAR_FILE_H_
