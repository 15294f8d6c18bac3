// Whole-buffer reads and writes on descriptors, retrying EINTR and short transfers.
#ifndef PLATFORM_BASE_FD_IO_H_
#define PLATFORM_BASE_FD_IO_H_

#include <cstddef>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace airlock {

// Writes all of `data`; `what` names the destination in errors.
[[nodiscard]] absl::Status WriteFully(int fd, absl::string_view data, absl::string_view what);

// Reads until EOF. More than `max_bytes` is ResourceExhausted (nothing beyond that is kept).
[[nodiscard]] absl::StatusOr<std::string> ReadToEnd(int fd, size_t max_bytes,
                                                    absl::string_view what);

}  // namespace airlock

#endif  // PLATFORM_BASE_FD_IO_H_
