#include "broker/approval/tty_approver.h"

#include <fcntl.h>
#include <poll.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "broker/approval/deadline.h"
#include "broker/approval/prompt.h"
#include "platform/base/errno_status.h"
#include "platform/base/fd_io.h"
#include "platform/base/scoped_fd.h"

namespace airlock::broker {
namespace {

constexpr size_t kMaxAnswerBytes = 256;

std::chrono::system_clock::time_point ToChrono(absl::Time t) { return absl::ToChronoTime(t); }

}  // namespace

absl::StatusOr<std::string> ReadLineUntil(int fd, absl::Time deadline, size_t max_bytes) {
  std::string line;
  for (;;) {
    const int wait = PollTimeoutMillis(deadline);
    if (wait == 0) return absl::DeadlineExceededError("no answer before the timeout");
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, wait);
    if (ready < 0) {
      if (errno == EINTR) continue;
      return LastErrnoStatus("poll");
    }
    if (ready == 0) continue;  // re-checks the deadline
    char buffer[64];
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      if (errno == EIO) return absl::OutOfRangeError("end of input (terminal hung up)");
      return LastErrnoStatus("read answer");
    }
    if (n == 0) return absl::OutOfRangeError("end of input");
    for (ssize_t i = 0; i < n; ++i) {
      if (buffer[i] == '\n') return line;  // anything after the newline is ignored
      line.push_back(buffer[i]);
      if (line.size() > max_bytes) return absl::ResourceExhaustedError("answer too long");
    }
  }
}

Answer TtyApprover::Ask(const ApprovalRequest& request, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::unique_lock<std::timed_mutex> lock(prompt_mutex_, std::defer_lock);
  if (!lock.try_lock_until(ToChrono(deadline))) {
    return Answer::No("timeout while another prompt held the terminal");
  }
  ScopedFd tty(::open(terminal_path_.c_str(), O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!tty) {
    return Answer::No(std::string(LastErrnoStatus("open", terminal_path_).message()));
  }
  // Typeahead must not answer a prompt the human has not seen.
  ::tcflush(tty.get(), TCIFLUSH);
  const std::string prompt = absl::StrCat("\n", RenderPrompt(request), QuestionFor(request));
  if (!WriteFully(tty.get(), prompt, terminal_path_).ok()) {
    return Answer::No("cannot write the prompt to the terminal");
  }
  absl::StatusOr<std::string> line = ReadLineUntil(tty.get(), deadline, kMaxAnswerBytes);
  Answer answer;
  if (!line.ok()) {
    answer = Answer::No(absl::IsDeadlineExceeded(line.status())
                            ? absl::StrCat("timeout after ", absl::FormatDuration(timeout))
                            : std::string(line.status().message()));
  } else {
    answer = AnswerFromTypedLine(*line, request, "on the terminal");
  }
  const std::string verdict = answer.approved ? std::string("approved\n")
                                              : absl::StrCat("\ndenied: ", answer.reason, "\n");
  (void)WriteFully(tty.get(), verdict, terminal_path_);
  return answer;
}

}  // namespace airlock::broker
