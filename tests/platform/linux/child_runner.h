// Runs a test body in a forked child, so that irreversible process state (Landlock, seccomp,
// dropped capabilities) never leaks into the test binary. The body returns "" on success or a
// description of what went wrong; a child killed by a signal is reported as such.
#ifndef TESTS_PLATFORM_LINUX_CHILD_RUNNER_H_
#define TESTS_PLATFORM_LINUX_CHILD_RUNNER_H_

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <string>

#include "absl/strings/str_cat.h"

namespace airlock::testing {

inline std::string RunInChild(const std::function<std::string()>& body) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    ::close(fds[0]);
    const std::string failure = body();
    size_t done = 0;
    while (done < failure.size()) {
      const ssize_t n = ::write(fds[1], failure.data() + done, failure.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    _exit(failure.empty() ? 0 : 1);
  }
  ::close(fds[1]);
  std::string output;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    output.append(buffer, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    return absl::StrCat("child killed by signal ", WTERMSIG(status), "; ", output);
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && output.empty()) {
    return absl::StrCat("child exited with ", WEXITSTATUS(status));
  }
  return output;
}

// "" when `result` failed with `expected_errno`, else a description naming `what`.
inline std::string ExpectErrno(const char* what, long result, int expected_errno) {
  if (result >= 0) return absl::StrCat(what, ": succeeded, expected errno ", expected_errno, "\n");
  if (errno != expected_errno) {
    return absl::StrCat(what, ": errno ", errno, " (", std::strerror(errno), "), expected ",
                        expected_errno, " (", std::strerror(expected_errno), ")\n");
  }
  return "";
}

// "" when `result` succeeded, else a description naming `what`.
inline std::string ExpectSuccess(const char* what, long result) {
  if (result >= 0) return "";
  return absl::StrCat(what, ": failed with errno ", errno, " (", std::strerror(errno), ")\n");
}

}  // namespace airlock::testing

#endif  // TESTS_PLATFORM_LINUX_CHILD_RUNNER_H_
