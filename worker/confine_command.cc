#include "worker/confine_command.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <iostream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "platform/base/errno_status.h"
#include "platform/base/fd_io.h"
#include "platform/base/status_macros.h"
#include "platform/linux/capabilities.h"
#include "platform/linux/landlock.h"
#include "platform/linux/worker_seccomp.h"

extern char** environ;

namespace airlock::worker {
namespace {

// The connector's descriptor number; everything above it is closed before the exec.
constexpr int kConnectorFd = 3;

void Report(int status_fd, absl::string_view line) {
  if (status_fd < 0) return;
  std::string message(line.data(), line.size());
  message.push_back('\n');
  (void)WriteFully(status_fd, message, "status descriptor");
}

absl::Status DropCapabilities() {
  AIRLOCK_ASSIGN_OR_RETURN(linux_sandbox::CapabilitySets caps, linux_sandbox::ReadCapabilities());
  // Inside the mount view the bounding set is already empty (bwrap --cap-drop ALL). Started
  // without it by an unprivileged user, the set is full and only a user namespace of our own
  // lets us drop it.
  if (caps.bounding != 0 && !linux_sandbox::CanDropBoundingSet()) {
    AIRLOCK_RETURN_IF_ERROR(linux_sandbox::EnterOwnUserNamespace());
  }
  return linux_sandbox::DropAllCapabilities();
}

[[noreturn]] void ExecCommand(const std::vector<std::string>& command) {
  // main() ignores SIGPIPE for the broker's sake; an ignored signal survives exec (and a
  // shell cannot un-ignore it), so the agent gets the default back, and an empty mask.
  ::signal(SIGPIPE, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  std::vector<char*> argv;
  for (const std::string& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  ::execve(argv[0], argv.data(), environ);
  std::cerr << "airlock __confine: cannot execute " << command[0] << ": "
            << LastErrnoStatus("execve").message() << "\n";
  _exit(127);
}

}  // namespace

absl::StatusOr<std::string> ConfineSelf(const ConfineOptions& options) {
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return LastErrnoStatus("prctl(PR_SET_NO_NEW_PRIVS)");
  }
  absl::Status caps = DropCapabilities();
  if (!caps.ok()) return absl::FailedPreconditionError(absl::StrCat("capabilities: ", caps.message()));

  std::string summary = "no_new_privs, no capabilities";
  if (options.landlock) {
    if (options.scratch.empty() || options.scratch[0] != '/') {
      return absl::InvalidArgumentError("landlock: the scratch directory must be absolute");
    }
    absl::StatusOr<int> abi = linux_sandbox::ApplyLandlock(
        linux_sandbox::WorkerLandlockPolicy(options.scratch, options.private_dev));
    if (!abi.ok()) {
      return absl::FailedPreconditionError(absl::StrCat("landlock: ", abi.status().message()));
    }
    absl::StrAppend(&summary, ", landlock (ABI ", *abi, ")");
  }
  if (options.seccomp) {
    linux_sandbox::WorkerSeccompOptions seccomp;
    seccomp.allow_unix_sockets = options.allow_unix_sockets;
    absl::Status applied = linux_sandbox::ApplyWorkerSeccomp(seccomp);
    if (!applied.ok()) {
      return absl::FailedPreconditionError(absl::StrCat("seccomp: ", applied.message()));
    }
    absl::StrAppend(&summary, ", seccomp");
  }

  // Verify what is in force, not what was asked for.
  AIRLOCK_ASSIGN_OR_RETURN(linux_sandbox::CapabilitySets left, linux_sandbox::ReadCapabilities());
  if (!left.AllEmpty()) {
    return absl::InternalError(absl::StrCat("capabilities remain: ", left.DebugString()));
  }
  if (::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) {
    return absl::InternalError("no_new_privs is not set");
  }
  if (options.seccomp && ::prctl(PR_GET_SECCOMP, 0, 0, 0, 0) != 2) {
    return absl::InternalError("seccomp filter mode is not in force");
  }
  return summary;
}

void AddConfineCommand(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<ConfineOptions>();
  CLI::App* command = app.add_subcommand("__confine", "");
  command->group("");  // hidden: only the broker's worker launcher runs it
  command->add_option("--status-fd", options->status_fd)->required();
  command->add_option("--scratch", options->scratch);
  command->add_flag("--landlock", options->landlock);
  command->add_flag("--seccomp", options->seccomp);
  command->add_flag("--private-dev", options->private_dev);
  command->add_flag("--allow-unix-sockets", options->allow_unix_sockets);
  command->add_option("command", options->command, "The agent command, after --")->required();
  command->callback([options, &exit_code] {
    const int status_fd = options->status_fd;
    if (status_fd <= kConnectorFd || ::fcntl(status_fd, F_SETFD, FD_CLOEXEC) != 0) {
      std::cerr << "airlock __confine: refused: bad --status-fd\n";
      exit_code = kConfineRefused;
      return;
    }
    if (options->command.empty() || options->command[0].empty() ||
        options->command[0][0] != '/') {
      Report(status_fd, "error the agent command must be an absolute path");
      exit_code = kConfineRefused;
      return;
    }
    absl::StatusOr<std::string> summary = ConfineSelf(*options);
    if (!summary.ok()) {
      std::cerr << "airlock __confine: refused: " << summary.status().message() << "\n";
      Report(status_fd, absl::StrCat("error ", summary.status().message()));
      exit_code = kConfineRefused;
      return;
    }
    Report(status_fd, absl::StrCat("ok ", *summary));
    // The agent inherits 0, 1, 2 and the connector, nothing else (the status descriptor and
    // bwrap's --args descriptor included).
    if (::syscall(SYS_close_range, kConnectorFd + 1, ~0U, 0) != 0) {
      std::cerr << "airlock __confine: close_range failed\n";
      _exit(kConfineRefused);
    }
    ExecCommand(options->command);
  });
}

}  // namespace airlock::worker
