// A long-lived child process with pipes for stdin, stdout and stderr (an MCP server).
#ifndef PLATFORM_PROCESS_KEPT_PROCESS_H_
#define PLATFORM_PROCESS_KEPT_PROCESS_H_

#include <sys/types.h>

#include <cstddef>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "platform/base/scoped_fd.h"
#include "platform/process/spawn.h"

namespace airlock {

// A process started to keep running (an MCP server): its stdin, stdout and stderr are pipes,
// it leads a new process group and gets SIGKILL when the broker dies. The parent-death signal
// is tied to the thread that forked, and the thread that asks for a server (a request's) may
// end long before the server should, so the fork happens on a thread of this object's own,
// which lives until the process is reaped. That thread also drains stderr, keeping only the
// last bytes, so a chatty process can neither block on a full pipe nor grow our memory.
class KeptProcess {
 public:
  struct Options {
    // Descriptors 0, 1 and 2 are replaced by the pipes; a new process group and
    // parent_death_signal SIGKILL are forced.
    SpawnOptions spawn;
    // Closed in this process right after the fork (ends only the child may hold).
    std::vector<ScopedFd> close_after_spawn;
    size_t stderr_keep = 8 * 1024;
  };

  [[nodiscard]] static absl::StatusOr<std::unique_ptr<KeptProcess>> Start(Options options);
  ~KeptProcess();  // Kill()
  KeptProcess(const KeptProcess&) = delete;
  KeptProcess& operator=(const KeptProcess&) = delete;

  pid_t pid() const { return pid_; }
  int stdin_fd() const { return stdin_write_.get(); }   // write end, close-on-exec
  int stdout_fd() const { return stdout_read_.get(); }  // read end, close-on-exec
  // The last bytes of stderr (at most stderr_keep), removed from the buffer.
  std::string TakeStderr();
  // True once the process has exited (it is not reaped until Kill()). Never blocks.
  bool Exited() const;
  // SIGKILL to the process group and the process, reaps it, stops the thread. Idempotent.
  void Kill();

 private:
  explicit KeptProcess(size_t stderr_keep) : stderr_keep_(stderr_keep) {}
  void Keep(Options options, ScopedFd stderr_write, ScopedFd stdin_read, ScopedFd stdout_write,
            std::promise<absl::StatusOr<pid_t>> started);
  // Reads what stderr holds (once, or until it is empty); true at EOF.
  bool DrainStderr(bool until_empty);

  const size_t stderr_keep_;
  pid_t pid_ = -1;
  ScopedFd pidfd_;
  ScopedFd stdin_write_, stdout_read_, stderr_read_;
  ScopedFd stop_;  // eventfd: the keeper thread returns once it is readable
  std::thread keeper_;
  std::mutex mutex_;  // guards stderr_tail_ and killed_
  std::string stderr_tail_;
  bool killed_ = false;
};

}  // namespace airlock

#endif  // PLATFORM_PROCESS_KEPT_PROCESS_H_
