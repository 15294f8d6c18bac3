#include "platform/process/kept_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "platform/base/errno_status.h"
#include "platform/base/logging.h"
#include "platform/base/status_macros.h"

namespace airlock {

absl::StatusOr<std::unique_ptr<KeptProcess>> KeptProcess::Start(Options options) {
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return LastErrnoStatus("pipe2", "stdin");
  ScopedFd stdin_read(in[0]), stdin_write(in[1]);
  if (::pipe2(out, O_CLOEXEC) != 0) return LastErrnoStatus("pipe2", "stdout");
  ScopedFd stdout_read(out[0]), stdout_write(out[1]);
  if (::pipe2(err, O_CLOEXEC) != 0) return LastErrnoStatus("pipe2", "stderr");
  ScopedFd stderr_read(err[0]), stderr_write(err[1]);
  // Only our end is non-blocking (the flag belongs to the open file, not to the pipe).
  if (::fcntl(stderr_read.get(), F_SETFL, O_NONBLOCK) != 0) {
    return LastErrnoStatus("fcntl(O_NONBLOCK)", "stderr");
  }
  ScopedFd stop(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!stop) return LastErrnoStatus("eventfd", "kept process");

  std::vector<std::pair<int, int>> descriptors = {
      {0, stdin_read.get()}, {1, stdout_write.get()}, {2, stderr_write.get()}};
  for (const auto& mapping : options.spawn.descriptors) {
    if (mapping.first > 2) descriptors.push_back(mapping);
  }
  options.spawn.descriptors = std::move(descriptors);
  options.spawn.new_process_group = true;
  options.spawn.parent_death_signal = SIGKILL;

  std::unique_ptr<KeptProcess> process(new KeptProcess(options.stderr_keep));
  process->stdin_write_ = std::move(stdin_write);
  process->stdout_read_ = std::move(stdout_read);
  process->stderr_read_ = std::move(stderr_read);
  process->stop_ = std::move(stop);
  std::promise<absl::StatusOr<pid_t>> started;
  std::future<absl::StatusOr<pid_t>> spawned = started.get_future();
  process->keeper_ = std::thread(&KeptProcess::Keep, process.get(), std::move(options),
                                 std::move(stderr_write), std::move(stdin_read),
                                 std::move(stdout_write), std::move(started));
  absl::StatusOr<pid_t> pid = spawned.get();
  if (!pid.ok()) {
    process->Kill();  // stops the thread
    return pid.status();
  }
  process->pid_ = *pid;
  process->pidfd_.reset(static_cast<int>(::syscall(SYS_pidfd_open, *pid, 0)));
  if (!process->pidfd_) {
    const absl::Status error = LastErrnoStatus("pidfd_open", absl::StrCat(*pid));
    process->Kill();
    return error;
  }
  return process;
}

KeptProcess::~KeptProcess() { Kill(); }

void KeptProcess::Keep(Options options, ScopedFd stderr_write, ScopedFd stdin_read,
                       ScopedFd stdout_write, std::promise<absl::StatusOr<pid_t>> started) {
  absl::StatusOr<pid_t> pid = Spawn(options.spawn);
  // Only the child may hold these, or EOF would never come.
  stderr_write.reset();
  stdin_read.reset();
  stdout_write.reset();
  options.close_after_spawn.clear();
  const bool spawned = pid.ok();
  started.set_value(std::move(pid));
  if (!spawned) return;
  // This thread must outlive the process (its parent-death signal is tied to it): it returns
  // only once Kill() has reaped the process and signalled `stop_`.
  pollfd fds[2] = {{stderr_read_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
  for (;;) {
    const int ready = ::poll(fds, 2, -1);
    if (ready < 0) {
      if (errno != EINTR) ::usleep(10000);
      continue;
    }
    if (fds[1].revents != 0) break;
    // At EOF (or on an error) stop watching stderr; keep waiting for stop_.
    if (fds[0].revents != 0 && DrainStderr(false)) fds[0].fd = -1;
  }
  DrainStderr(true);
}

bool KeptProcess::DrainStderr(bool until_empty) {
  char buffer[16384];
  do {
    const ssize_t n = ::read(stderr_read_.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno != EAGAIN;  // EAGAIN: nothing more for now (non-blocking)
    if (n == 0) return true;
    std::lock_guard<std::mutex> lock(mutex_);
    stderr_tail_.append(buffer, static_cast<size_t>(n));
    if (stderr_tail_.size() > 2 * stderr_keep_) {
      stderr_tail_.erase(0, stderr_tail_.size() - stderr_keep_);
    }
  } while (until_empty);
  return false;
}

std::string KeptProcess::TakeStderr() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string tail = std::move(stderr_tail_);
  stderr_tail_.clear();
  if (tail.size() > stderr_keep_) tail.erase(0, tail.size() - stderr_keep_);
  return tail;
}

bool KeptProcess::Exited() const {
  if (!pidfd_) return true;
  pollfd fd = {pidfd_.get(), POLLIN, 0};
  return ::poll(&fd, 1, 0) > 0;
}

void KeptProcess::Kill() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (killed_) return;
    killed_ = true;
  }
  if (pid_ > 0) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    const absl::StatusOr<ExitStatus> status = WaitForExit(pid_);
    if (!status.ok()) AIRLOCK_LOG(kWarning, "cannot reap process ", pid_, ": ", status.status().message());
  }
  if (keeper_.joinable()) {
    const uint64_t one = 1;
    if (::write(stop_.get(), &one, sizeof(one)) != sizeof(one)) {
      AIRLOCK_LOG(kError, "cannot stop the keeper thread of process ", pid_);
    }
    keeper_.join();
  }
}

}  // namespace airlock
