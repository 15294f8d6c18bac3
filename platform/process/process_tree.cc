#include "platform/process/process_tree.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "platform/base/errno_status.h"
#include "platform/base/fd_io.h"
#include "platform/base/logging.h"
#include "platform/base/status_macros.h"

namespace airlock {
namespace {

using Clock = std::chrono::steady_clock;

// After the main process is gone, how long stragglers may keep the pipes open.
constexpr std::chrono::milliseconds kDrainGrace{200};
constexpr size_t kMaxStatusBytes = 256;

// Output bookkeeping: the first `limit` bytes of each stream, and the whole interleaved
// output — in memory until a stream passes its limit, then in the spill file.
class OutputSink {
 public:
  OutputSink(size_t limit, std::string dir, size_t file_limit)
      : limit_(limit), dir_(std::move(dir)), file_limit_(file_limit) {}

  void Add(int stream, const char* data, size_t size, TreeRunResult& result) {
    std::string& kept = stream == 1 ? result.stdout_data : result.stderr_data;
    const size_t room = kept.size() < limit_ ? limit_ - kept.size() : 0;
    kept.append(data, size < room ? size : room);
    if (size > room && !result.truncated) {
      result.truncated = true;
      Spill(result);
    }
    if (spill_) {
      Append(absl::string_view(data, size), result);
    } else if (!result.truncated) {
      combined_.append(data, size);
    }
  }

 private:
  void Spill(TreeRunResult& result) {
    if (dir_.empty()) return;
    std::string path = absl::StrCat(dir_, "/output-", ::getpid(), "-XXXXXX");
    // mkostemp creates the file 0600, exclusively.
    ScopedFd fd(::mkostemp(path.data(), O_CLOEXEC));
    if (!fd) {
      AIRLOCK_LOG(kWarning, "cannot create the full-output file in ", dir_);
      return;
    }
    spill_ = std::move(fd);
    result.full_output_path = path;
    // combined_ holds everything before this chunk; the chunk itself follows in Add().
    Append(combined_, result);
    combined_.clear();
    combined_.shrink_to_fit();
  }

  void Append(absl::string_view data, TreeRunResult& result) {
    if (!spill_ || capped_) return;
    const size_t room = file_limit_ > written_ ? file_limit_ - written_ : 0;
    const bool fits = data.size() <= room;
    if (!WriteFully(spill_.get(), fits ? data : data.substr(0, room), "full output").ok()) {
      Abandon(result);
      return;
    }
    written_ += fits ? data.size() : room;
    if (!fits) {
      capped_ = true;
      const std::string note =
          absl::StrCat("\n[airlock: output beyond ", file_limit_, " bytes was dropped]\n");
      if (!WriteFully(spill_.get(), note, "full output").ok()) Abandon(result);
    }
  }

  void Abandon(TreeRunResult& result) {
    AIRLOCK_LOG(kWarning, "writing the full-output file ", result.full_output_path, " failed");
    ::unlink(result.full_output_path.c_str());
    result.full_output_path.clear();
    spill_.reset();
  }

  size_t limit_;
  std::string dir_;
  size_t file_limit_;
  size_t written_ = 0;
  bool capped_ = false;
  std::string combined_;
  ScopedFd spill_;
};

void KillTree(pid_t pid) {
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
}

}  // namespace

CancelToken::CancelToken() : event_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

void CancelToken::Cancel() {
  cancelled_.store(true);
  if (event_) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(event_.get(), &one, sizeof(one));
  }
}

absl::StatusOr<TreeRunResult> RunProcessTree(TreeRunOptions options) {
  TreeRunResult result;
  if (options.cancel != nullptr && options.cancel->cancelled()) {
    result.cancelled = true;
    return result;
  }
  ScopedFd out_read, out_write, err_read, err_write;
  if (options.capture_output) {
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0) return LastErrnoStatus("pipe2", "stdout");
    out_read.reset(out[0]);
    out_write.reset(out[1]);
    if (::pipe2(err, O_CLOEXEC) != 0) return LastErrnoStatus("pipe2", "stderr");
    err_read.reset(err[0]);
    err_write.reset(err[1]);
    std::vector<std::pair<int, int>> descriptors;
    for (const auto& mapping : options.spawn.descriptors) {
      if (mapping.first != 1 && mapping.first != 2) descriptors.push_back(mapping);
    }
    descriptors.emplace_back(1, out_write.get());
    descriptors.emplace_back(2, err_write.get());
    options.spawn.descriptors = std::move(descriptors);
  }
  options.spawn.new_process_group = true;

  AIRLOCK_ASSIGN_OR_RETURN(const pid_t pid, Spawn(options.spawn));
  out_write.reset();
  err_write.reset();
  options.close_after_spawn.clear();
  ScopedFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd) {
    const absl::Status error = LastErrnoStatus("pidfd_open", absl::StrCat(pid));
    KillTree(pid);
    (void)WaitForExit(pid);
    return error;
  }

  OutputSink sink(options.stream_limit, options.full_output_dir, options.full_output_limit);
  bool has_deadline = options.timeout.count() > 0;
  const Clock::time_point deadline = Clock::now() + options.timeout;
  bool exited = false;
  Clock::time_point drain_deadline;
  // Poll slots: 0 pidfd, 1 stdout, 2 stderr, 3 status, 4 cancel.
  pollfd fds[5] = {
      {pidfd.get(), POLLIN, 0},
      {out_read.get(), POLLIN, 0},
      {err_read.get(), POLLIN, 0},
      {options.status_fd, POLLIN, 0},
      {options.cancel != nullptr ? options.cancel->wait_fd() : -1, POLLIN, 0},
  };
  auto pipes_open = [&fds] { return fds[1].fd >= 0 || fds[2].fd >= 0 || fds[3].fd >= 0; };

  while (!exited || pipes_open()) {
    const Clock::time_point now = Clock::now();
    int wait_ms = -1;
    if (exited) {
      if (now >= drain_deadline) break;
      wait_ms = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(drain_deadline - now).count()) + 1;
    } else if (has_deadline) {
      if (now >= deadline) {
        // Killed: the pidfd becomes readable once the tree's leader is gone.
        result.timed_out = true;
        has_deadline = false;
        KillTree(pid);
      } else {
        wait_ms = static_cast<int>(
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count()) + 1;
      }
    }
    if (options.cancel != nullptr && options.cancel->wait_fd() < 0 && !exited) {
      wait_ms = wait_ms < 0 || wait_ms > 50 ? 50 : wait_ms;
    }
    const int ready = ::poll(fds, 5, wait_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      const absl::Status error = LastErrnoStatus("poll", "process tree");
      KillTree(pid);
      (void)WaitForExit(pid);
      return error;
    }
    if (options.cancel != nullptr && options.cancel->cancelled() && !exited &&
        !result.cancelled) {
      result.cancelled = true;
      KillTree(pid);
      fds[4].fd = -1;
    }
    for (int slot = 1; slot <= 3; ++slot) {
      if (fds[slot].fd < 0 || fds[slot].revents == 0) continue;
      char buffer[65536];
      const ssize_t n = ::read(fds[slot].fd, buffer, sizeof(buffer));
      if (n > 0) {
        if (slot == 3) {
          const size_t room = kMaxStatusBytes - result.status_bytes.size();
          result.status_bytes.append(buffer, static_cast<size_t>(n) < room ? n : room);
          if (options.on_status) {
            if (absl::Status refused = options.on_status(result.status_bytes); !refused.ok()) {
              KillTree(pid);
              (void)WaitForExit(pid);
              return refused;
            }
          }
        } else {
          sink.Add(slot, buffer, static_cast<size_t>(n), result);
        }
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        fds[slot].fd = -1;
      }
    }
    if (!exited && fds[0].revents != 0) {
      AIRLOCK_ASSIGN_OR_RETURN(result.status, WaitForExit(pid));
      exited = true;
      fds[0].fd = -1;
      fds[4].fd = -1;
      // Whatever the main process left behind in its group goes with it.
      ::kill(-pid, SIGKILL);
      drain_deadline = Clock::now() + kDrainGrace;
    }
  }
  return result;
}

}  // namespace airlock
