// The `command:PROG` approver: runs PROG — one executable path, no shell, no arguments — with
// one JSON request object (RequestToJson, broker/approval/prompt.h) and a newline on stdin.
// It approves only when PROG exits 0 AND its stdout, trimmed, is exactly "allow". Anything
// else denies: another exit status, a signal, other output, more than kMaxOutput bytes of
// output, or no exit within the timeout (PROG's whole process group is killed). PROG inherits
// the broker's environment and stderr, and runs in its own process group.
#ifndef BROKER_APPROVAL_COMMAND_APPROVER_H_
#define BROKER_APPROVAL_COMMAND_APPROVER_H_

#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "broker/approval/approver.h"

namespace airlock::broker {

class CommandApprover final : public Approver {
 public:
  static constexpr size_t kMaxOutput = 4096;

  // `program` must be a path (holding '/') to an executable file.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<CommandApprover>> Create(
      std::string program);

  Answer Ask(const ApprovalRequest& request, absl::Duration timeout) override;
  std::string Describe() const override { return "command:" + program_; }

 private:
  explicit CommandApprover(std::string program) : program_(std::move(program)) {}

  const std::string program_;
  std::timed_mutex mutex_;
};

}  // namespace airlock::broker

#endif  // BROKER_APPROVAL_COMMAND_APPROVER_H_
