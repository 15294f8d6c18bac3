// MakeApprover: the --approver spec → an Approver (broker/approval/approver.h).
#include <fcntl.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "broker/approval/approver.h"
#include "broker/approval/command_approver.h"
#include "broker/approval/socket_approver.h"
#include "broker/approval/tty_approver.h"

namespace airlock::broker {

bool HasControllingTerminal() {
  const int fd = ::open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

absl::StatusOr<std::unique_ptr<Approver>> MakeApprover(absl::string_view spec) {
  if (spec.empty()) {
    if (HasControllingTerminal()) return std::unique_ptr<Approver>(new TtyApprover());
    return std::unique_ptr<Approver>(new NoneApprover());
  }
  if (spec == "none") return std::unique_ptr<Approver>(new NoneApprover());
  if (spec == "tty") {
    if (!HasControllingTerminal()) {
      return absl::FailedPreconditionError(
          "--approver tty: the broker has no controlling terminal (open /dev/tty failed); use "
          "socket:PATH, command:PROG or none");
    }
    return std::unique_ptr<Approver>(new TtyApprover());
  }
  if (absl::ConsumePrefix(&spec, "socket:")) {
    auto approver = SocketApprover::Listen(std::string(spec));
    if (!approver.ok()) return approver.status();
    return std::unique_ptr<Approver>(std::move(*approver));
  }
  if (absl::ConsumePrefix(&spec, "command:")) {
    auto approver = CommandApprover::Create(std::string(spec));
    if (!approver.ok()) return approver.status();
    return std::unique_ptr<Approver>(std::move(*approver));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown --approver '", spec, "' (tty, socket:PATH, command:PROG or none)"));
}

}  // namespace airlock::broker
