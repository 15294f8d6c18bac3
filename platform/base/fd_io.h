// Whole-buffer reads and writes on descriptors, retrying EINTR and short transfers.
#ifndef PLATFORM_BASE_FD_IO_H_
#define PLATFORM_BASE_FD_IO_H_

#include <sys/types.h>

#include <cstddef>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace airlock {

// Writes all of `data`; `what` names the destination in errors.
[[nodiscard]] absl::Status WriteFully(int fd, absl::string_view data, absl::string_view what);

// One write(2) to a pipe whose reader may be gone, without a SIGPIPE killing the process
// when it does not ignore the signal: SIGPIPE is blocked in this thread meanwhile and a
// pending one the write raised is consumed. A gone reader is -1 with errno EPIPE.
ssize_t WriteWithoutSigpipe(int fd, const char* data, size_t size);

// Reads until EOF. More than `max_bytes` is ResourceExhausted (nothing beyond that is kept).
[[nodiscard]] absl::StatusOr<std::string> ReadToEnd(int fd, size_t max_bytes,
                                                    absl::string_view what);

}  // namespace airlock

#endif  // PLATFORM_BASE_FD_IO_H_
