// Runs one process tree to completion: output captured with a per-stream limit (the whole
// output spilled to a host-owned 0600 file once the limit is passed), a timeout and a
// cancellation token that kill the whole tree, and the exit status or signal.
//
// The child is always started in a new process group; a timeout, a cancel, or the main
// process's exit kills that group with SIGKILL, so background jobs do not outlive the call
// (a job that detached into its own session escapes the group; under bwrap the pid namespace
// takes it down instead).
#ifndef PLATFORM_PROCESS_PROCESS_TREE_H_
#define PLATFORM_PROCESS_PROCESS_TREE_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "platform/base/scoped_fd.h"
#include "platform/process/spawn.h"

namespace airlock {

// Triggered from any thread; the runner it is given to kills its tree promptly.
class CancelToken {
 public:
  CancelToken();
  CancelToken(const CancelToken&) = delete;
  CancelToken& operator=(const CancelToken&) = delete;

  void Cancel();
  bool cancelled() const { return cancelled_.load(); }
  // Readable once Cancel() was called (an eventfd); -1 if it could not be created, in which
  // case the runner polls cancelled() at a short interval.
  int wait_fd() const { return event_.get(); }

 private:
  std::atomic<bool> cancelled_{false};
  ScopedFd event_;
};

inline constexpr size_t kDefaultStreamLimit = 256 * 1024;
inline constexpr size_t kDefaultFullOutputLimit = 64 * 1024 * 1024;

struct TreeRunOptions {
  // How to start the tree. new_process_group is forced on. With capture_output, descriptors
  // 1 and 2 are replaced by the runner's pipes.
  SpawnOptions spawn;
  bool capture_output = true;
  // Bytes of each stream kept in the result.
  size_t stream_limit = kDefaultStreamLimit;
  // Where the whole output goes once a stream passes its limit: a new 0600 file named
  // `output-<pid of this process>-XXXXXX`, so that a later sweep can tell whose it is. Empty:
  // the excess is dropped.
  std::string full_output_dir;
  // The full-output file stops growing here (a final line says so), so that a flood cannot
  // fill the disk or the memory-backed runtime directory.
  size_t full_output_limit = kDefaultFullOutputLimit;
  // Zero: no timeout.
  std::chrono::milliseconds timeout{0};
  CancelToken* cancel = nullptr;
  // Read end of a pipe the child writes a short status to (a preflight's "ready"); the runner
  // owns nothing here and only reads it until EOF. -1: none.
  int status_fd = -1;
  // Closed in this process right after the child is started (e.g. the write end of the
  // status pipe, which only the child may hold).
  std::vector<ScopedFd> close_after_spawn;
  // Called with everything read from status_fd so far, each time more arrives. A non-OK
  // status kills the tree, which is reaped, and is returned.
  std::function<absl::Status(const std::string& status_bytes)> on_status;
};

struct TreeRunResult {
  ExitStatus status;
  std::string stdout_data;
  std::string stderr_data;
  bool truncated = false;
  std::string full_output_path;  // set when truncated and the spill file was written
  bool timed_out = false;
  bool cancelled = false;
  std::string status_bytes;  // what arrived on status_fd (at most 256 bytes)
};

[[nodiscard]] absl::StatusOr<TreeRunResult> RunProcessTree(TreeRunOptions options);

}  // namespace airlock

#endif  // PLATFORM_PROCESS_PROCESS_TREE_H_
