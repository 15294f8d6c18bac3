#include "platform/base/scoped_fd.h"

#include <unistd.h>

namespace airlock {

void ScopedFd::reset(int fd) {
  // close() is not retried on EINTR: on Linux the descriptor is released either way.
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

}  // namespace airlock
