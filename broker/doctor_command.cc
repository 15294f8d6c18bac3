#include "broker/doctor_command.h"

#include "broker/worker_launcher.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "broker/exec/shell_runner.h"
#include "platform/base/errno_status.h"
#include "platform/base/fd_io.h"
#include "platform/linux/bwrap_launcher.h"
#include "platform/linux/landlock.h"
#include "platform/linux/shell_seccomp.h"
#include "platform/process/process_tree.h"

namespace airlock::broker {
namespace {

// One enforcement layer: OK with a short description of what works, or the reason it does
// not. `required` layers make `airlock doctor` exit 1 when they fail.
struct DoctorCheck {
  std::string name;
  bool required = true;
  std::function<absl::StatusOr<std::string>()> run;
};

std::string ReadSmallFile(const char* path) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::string();
  absl::StatusOr<std::string> content = ReadToEnd(fd, 4096, path);
  ::close(fd);
  return content.ok() ? std::string(absl::StripAsciiWhitespace(*content)) : std::string();
}

absl::StatusOr<std::string> CheckBwrap() {
  absl::StatusOr<std::string> bwrap = linux_sandbox::FindSystemBwrap();
  if (!bwrap.ok()) return bwrap.status();
  TreeRunOptions run;
  run.spawn.argv = {*bwrap, "--version"};
  run.timeout = std::chrono::seconds(10);
  absl::StatusOr<TreeRunResult> version = RunProcessTree(std::move(run));
  if (!version.ok()) return version.status();
  if (version->status.ShellCode() != 0) {
    return absl::UnavailableError(absl::StrCat(*bwrap, " --version failed: ",
                                               version->stderr_data));
  }
  return absl::StrCat(*bwrap, " (", absl::StripAsciiWhitespace(version->stdout_data), ")");
}

absl::StatusOr<std::string> CheckUserNamespaces() {
  const pid_t pid = ::fork();
  if (pid < 0) return LastErrnoStatus("fork");
  if (pid == 0) _exit(::unshare(CLONE_NEWUSER) == 0 ? 0 : (errno & 0x7f));
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return LastErrnoStatus("waitpid");
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    return absl::StrCat("unshare(CLONE_NEWUSER) works (max_user_namespaces ",
                        ReadSmallFile("/proc/sys/user/max_user_namespaces"), ")");
  }
  const int error = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
  std::string reason = absl::StrCat("unshare(CLONE_NEWUSER) failed: ", std::strerror(error));
  const std::string max = ReadSmallFile("/proc/sys/user/max_user_namespaces");
  if (max == "0") absl::StrAppend(&reason, "; user.max_user_namespaces is 0");
  if (ReadSmallFile("/proc/sys/kernel/unprivileged_userns_clone") == "0") {
    absl::StrAppend(&reason, "; kernel.unprivileged_userns_clone is 0");
  }
  if (ReadSmallFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1") {
    absl::StrAppend(&reason, "; AppArmor restricts unprivileged user namespaces");
  }
  return absl::UnavailableError(reason);
}

absl::StatusOr<std::string> CheckShellSeccomp() {
  absl::StatusOr<std::string> program = linux_sandbox::BuildShellSeccompProgram({});
  if (!program.ok()) return program.status();
  const pid_t pid = ::fork();
  if (pid < 0) return LastErrnoStatus("fork");
  if (pid == 0) {
    if (!linux_sandbox::InstallSeccompProgram(*program).ok()) _exit(2);
    _exit(::socket(AF_UNIX, SOCK_STREAM, 0) < 0 && errno == EPERM ? 0 : 3);
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return LastErrnoStatus("waitpid");
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    return absl::StrCat("shell filter loads and refuses (", program->size() / 8,
                        " BPF instructions)");
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 2) {
    return absl::UnavailableError("the kernel refused to load the filter (seccomp disabled?)");
  }
  return absl::UnavailableError("the filter loaded but did not refuse socket(AF_UNIX)");
}

absl::StatusOr<std::string> CheckShellSandbox() {
  absl::StatusOr<std::unique_ptr<ShellRunner>> runner = ShellRunner::Create({});
  if (!runner.ok()) return runner.status();
  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof(cwd)) == nullptr) return LastErrnoStatus("getcwd");
  ShellRequest request;
  request.argv = {"true"};
  request.preset = v1::PRESET_READ_ONLY;
  request.roots = {cwd};
  request.timeout = std::chrono::seconds(30);
  absl::StatusOr<v1::BashResult> result = (*runner)->Run(request);
  if (!result.ok()) return result.status();
  if (result->exit_code() != 0) {
    return absl::UnavailableError(absl::StrCat("`true` exited ", result->exit_code(), ": ",
                                               result->stderr()));
  }
  return std::string("a read-only sandbox ran `true` after its preflight (pid, net, ipc, uts, "
                     "user namespaces; no capabilities; no_new_privs; seccomp)");
}

absl::StatusOr<std::string> CheckLandlock() {
  absl::StatusOr<int> abi = linux_sandbox::ProbeLandlockAbi();
  if (!abi.ok()) return abi.status();
  return absl::StrCat("ABI ", *abi);
}

std::vector<DoctorCheck> Checks() {
  return {
      {"bwrap", true, CheckBwrap},
      {"user namespaces", true, CheckUserNamespaces},
      {"seccomp", true, CheckShellSeccomp},
      {"shell sandbox", true, CheckShellSandbox},
      {"landlock", false, CheckLandlock},
      // A fully confined `true` through the whole worker chain; not required, since the
      // broker itself refuses to start a worker without its layers unless told otherwise.
      {"worker confinement", false, ProbeWorkerLaunch},
  };
}

int RunDoctor() {
  bool all_required_ok = true;
  for (const DoctorCheck& check : Checks()) {
    absl::StatusOr<std::string> outcome = check.run();
    if (outcome.ok()) {
      std::cout << "ok    " << check.name << ": " << *outcome << "\n";
    } else {
      all_required_ok &= !check.required;
      std::cout << (check.required ? "FAIL  " : "warn  ") << check.name << ": "
                << outcome.status().message() << "\n";
    }
  }
  for (const LayerReport& layer : ProbeWorkerLayers()) {
    std::cout << (layer.available ? "ok    " : "FAIL  ") << "worker " << layer.name << ": "
              << layer.detail << "\n";
  }
  std::cout << (all_required_ok ? "shell sandbox: available\n"
                                : "shell sandbox: UNAVAILABLE (restricted shell calls are "
                                  "refused with SANDBOX_UNAVAILABLE)\n");
  return all_required_ok ? 0 : 1;
}

}  // namespace

void AddDoctorCommand(CLI::App& app, int& exit_code) {
  CLI::App* command =
      app.add_subcommand("doctor", "Report which enforcement layers work here, and why not");
  command->callback([&exit_code] { exit_code = RunDoctor(); });
}

}  // namespace airlock::broker
