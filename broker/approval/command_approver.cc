#include "broker/approval/command_approver.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "broker/approval/deadline.h"
#include "broker/approval/prompt.h"
#include "platform/base/errno_status.h"
#include "platform/base/fd_io.h"
#include "platform/base/scoped_fd.h"
#include "platform/process/spawn.h"

extern char** environ;

namespace airlock::broker {
namespace {

void KillGroup(pid_t pid) {
  ::kill(-pid, SIGKILL);  // the group (PROG called setpgid(0, 0) before exec)
  ::kill(pid, SIGKILL);   // and PROG itself, should it not have got that far
}

absl::Status MakePipe(ScopedFd* read_end, ScopedFd* write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return LastErrnoStatus("pipe2");
  read_end->reset(fds[0]);
  write_end->reset(fds[1]);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<CommandApprover>> CommandApprover::Create(std::string program) {
  if (program.find('/') == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--approver command:", program, ": PROG must be a path to an executable (no shell, no "
                                        "arguments)"));
  }
  if (::access(program.c_str(), X_OK) != 0) {
    return LastErrnoStatus("--approver command: cannot execute", program);
  }
  return std::unique_ptr<CommandApprover>(new CommandApprover(std::move(program)));
}

Answer CommandApprover::Ask(const ApprovalRequest& request, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::unique_lock<std::timed_mutex> lock(mutex_, std::defer_lock);
  if (!lock.try_lock_until(absl::ToChronoTime(deadline))) {
    return Answer::No("timeout while another request held the approver program");
  }
  ScopedFd stdin_read, stdin_write, stdout_read, stdout_write;
  if (!MakePipe(&stdin_read, &stdin_write).ok() || !MakePipe(&stdout_read, &stdout_write).ok()) {
    return Answer::No("cannot create pipes for the approver program");
  }
  SpawnOptions spawn;
  spawn.argv = {program_};
  for (char** entry = environ; *entry != nullptr; ++entry) spawn.env.emplace_back(*entry);
  spawn.descriptors = {{0, stdin_read.get()}, {1, stdout_write.get()}, {2, 2}};
  spawn.new_process_group = true;
  spawn.parent_death_signal = SIGKILL;
  absl::StatusOr<pid_t> pid = Spawn(spawn);
  if (!pid.ok()) return Answer::No(absl::StrCat("cannot start ", program_, ": ",
                                                pid.status().message()));
  stdin_read.reset();
  stdout_write.reset();
  ScopedFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, *pid, 0)));
  if (!pidfd) {
    KillGroup(*pid);
    (void)WaitForExit(*pid);
    return Answer::No("pidfd_open failed for the approver program");
  }
  ::fcntl(stdin_write.get(), F_SETFL, O_NONBLOCK);
  ::fcntl(stdout_read.get(), F_SETFL, O_NONBLOCK);

  const std::string input = RequestToJson(request) + "\n";
  size_t written = 0;
  std::string output;
  bool exited = false;
  std::string failure;
  while (!exited && failure.empty()) {
    const int wait = PollTimeoutMillis(deadline);
    if (wait == 0) {
      failure = absl::StrCat("timeout after ", absl::FormatDuration(timeout),
                             " (the approver program was killed)");
      break;
    }
    std::vector<pollfd> fds;
    fds.push_back({pidfd.get(), POLLIN, 0});
    if (stdout_read) fds.push_back({stdout_read.get(), POLLIN, 0});
    if (stdin_write) fds.push_back({stdin_write.get(), POLLOUT, 0});
    if (::poll(fds.data(), fds.size(), wait) < 0 && errno != EINTR) {
      failure = "poll failed while waiting for the approver program";
      break;
    }
    if (stdin_write) {
      const ssize_t n =
          WriteWithoutSigpipe(stdin_write.get(), input.data() + written, input.size() - written);
      if (n > 0) written += static_cast<size_t>(n);
      if ((n < 0 && errno != EAGAIN && errno != EINTR) || written == input.size()) {
        stdin_write.reset();  // all sent, or PROG closed its stdin (EPIPE): it decides anyway
      }
    }
    if (stdout_read) {
      char buffer[1024];
      const ssize_t n = ::read(stdout_read.get(), buffer, sizeof(buffer));
      if (n > 0) {
        output.append(buffer, static_cast<size_t>(n));
        if (output.size() > kMaxOutput) {
          failure = absl::StrCat("the approver program printed more than ", kMaxOutput, " bytes");
        }
      } else if (n == 0) {
        stdout_read.reset();
      }
    }
    if (!failure.empty()) break;
    pollfd exit_poll{pidfd.get(), POLLIN, 0};
    if (::poll(&exit_poll, 1, 0) > 0) {
      exited = true;
      // Whatever PROG wrote before exiting is in the pipe: drain it (without waiting for
      // descendants that may still hold the pipe open).
      while (stdout_read && output.size() <= kMaxOutput) {
        char buffer[1024];
        const ssize_t n = ::read(stdout_read.get(), buffer, sizeof(buffer));
        if (n <= 0) break;
        output.append(buffer, static_cast<size_t>(n));
      }
      if (output.size() > kMaxOutput) {
        failure = absl::StrCat("the approver program printed more than ", kMaxOutput, " bytes");
      }
    }
  }
  // PROG's group goes down with it; its zombie keeps the pid from being reused until reaped.
  KillGroup(*pid);
  absl::StatusOr<ExitStatus> status = WaitForExit(*pid);
  if (!failure.empty()) return Answer::No(failure);
  if (!status.ok()) return Answer::No("cannot collect the approver program's exit status");
  if (!status->exited) {
    return Answer::No(absl::StrCat("the approver program was killed by signal ",
                                   status->term_signal));
  }
  if (status->code != 0) {
    return Answer::No(absl::StrCat("the approver program exited with status ", status->code));
  }
  const absl::string_view said = absl::StripAsciiWhitespace(output);
  if (said == "allow-session" && request.session_grant_offered) {
    return Answer::YesForSession(
        absl::StrCat("allowed by ", program_, " for the rest of the session"));
  }
  if (said != "allow") {
    return Answer::No(request.session_grant_offered
                          ? "the approver program exited 0 without printing exactly 'allow' or "
                            "'allow-session'"
                          : "the approver program exited 0 without printing exactly 'allow'");
  }
  return Answer::Yes(absl::StrCat("allowed by ", program_));
}

}  // namespace airlock::broker
