#include "platform/base/fd_io.h"

#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "platform/base/errno_status.h"

namespace airlock {

absl::Status WriteFully(int fd, absl::string_view data, absl::string_view what) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return LastErrnoStatus("write", what);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadToEnd(int fd, size_t max_bytes, absl::string_view what) {
  std::string out;
  char buffer[16384];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      return LastErrnoStatus("read", what);
    }
    if (n == 0) return out;
    if (out.size() + static_cast<size_t>(n) > max_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("read ", what, ": more than ", max_bytes, " bytes"));
    }
    out.append(buffer, static_cast<size_t>(n));
  }
}

}  // namespace airlock
