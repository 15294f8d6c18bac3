// Starts a program with an exact environment and an exact descriptor layout. Everything the
// child needs is prepared before fork(); the child only makes async-signal-safe calls and
// reports failure with a raw message and exit status 127.
#ifndef PLATFORM_PROCESS_SPAWN_H_
#define PLATFORM_PROCESS_SPAWN_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace airlock {

struct SpawnOptions {
  // argv[0] must be a path containing '/'; use FindExecutable first for a bare name.
  std::vector<std::string> argv;
  // The child's whole environment ("NAME=value").
  std::vector<std::string> env;
  // {child descriptor, parent descriptor}: the child has exactly these open, nothing else.
  std::vector<std::pair<int, int>> descriptors = {{0, 0}, {1, 1}, {2, 2}};
  // setsid(): a new session without a controlling terminal (also a new process group).
  bool new_session = false;
  // setpgid(0, 0): a new process group, so the whole tree can be signalled at once.
  bool new_process_group = false;
  // Sent to the child when the spawning thread's process dies (0: none).
  int parent_death_signal = 0;
  std::optional<std::string> working_directory;
  // Set PR_SET_NO_NEW_PRIVS before exec.
  bool no_new_privileges = false;
};

// Starts a process and execs (vfork-like: see spawn.cc). Returns the child's pid; an exec failure shows as exit status 127.
[[nodiscard]] absl::StatusOr<pid_t> Spawn(const SpawnOptions& options);

// The absolute path of `name` found through `search_path` (":"-separated), or `name` itself
// when it contains '/'. NotFound names what was searched.
[[nodiscard]] absl::StatusOr<std::string> FindExecutable(const std::string& name,
                                                         const std::string& search_path);

struct ExitStatus {
  bool exited = false;   // normal exit; `code` is valid
  int code = 0;
  int term_signal = 0;   // killed by this signal
  // The shell's convention: the exit code, or 128 + signal.
  int ShellCode() const { return exited ? code : 128 + term_signal; }
};

// Waits for `pid` (retrying EINTR).
[[nodiscard]] absl::StatusOr<ExitStatus> WaitForExit(pid_t pid);

}  // namespace airlock

#endif  // PLATFORM_PROCESS_SPAWN_H_
