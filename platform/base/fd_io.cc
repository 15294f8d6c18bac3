#include "platform/base/fd_io.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "platform/base/errno_status.h"

namespace airlock {

ssize_t WriteWithoutSigpipe(int fd, const char* data, size_t size) {
  sigset_t pipe_set, old_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  const ssize_t n = ::write(fd, data, size);
  const int saved_errno = errno;
  if (n < 0 && saved_errno == EPIPE && !sigismember(&old_set, SIGPIPE)) {
    sigset_t pending;
    if (::sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE)) {
      const timespec zero{};
      ::sigtimedwait(&pipe_set, nullptr, &zero);
    }
  }
  ::pthread_sigmask(SIG_SETMASK, &old_set, nullptr);
  errno = saved_errno;
  return n;
}

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
