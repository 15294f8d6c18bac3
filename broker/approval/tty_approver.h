// The `tty` approver: asks on the broker's controlling terminal (/dev/tty), never on the
// worker's stdin (the worker runs in its own session without a terminal). One prompt at a
// time; typeahead is discarded before each prompt so a keystroke sent early cannot answer it.
#ifndef BROKER_APPROVAL_TTY_APPROVER_H_
#define BROKER_APPROVAL_TTY_APPROVER_H_

#include <mutex>
#include <string>

#include "broker/approval/approver.h"

namespace airlock::broker {

class TtyApprover final : public Approver {
 public:
  // `terminal_path` is opened afresh for each prompt; tests pass a pseudo-terminal's path.
  explicit TtyApprover(std::string terminal_path = "/dev/tty")
      : terminal_path_(std::move(terminal_path)) {}

  Answer Ask(const ApprovalRequest& request, absl::Duration timeout) override;
  std::string Describe() const override { return "tty"; }

 private:
  const std::string terminal_path_;
  std::timed_mutex prompt_mutex_;
};

// Reads one line (without its newline) from `fd` until `deadline`: DeadlineExceeded on
// timeout, OutOfRange on EOF, ResourceExhausted past `max_bytes`. Bytes after the newline are
// dropped (one answer per read). Shared by the approvers and `airlock approve`.
[[nodiscard]] absl::StatusOr<std::string> ReadLineUntil(int fd, absl::Time deadline,
                                                        size_t max_bytes);

}  // namespace airlock::broker

#endif  // BROKER_APPROVAL_TTY_APPROVER_H_
