// The broker's runtime directory (0700, owned by the broker's user) and the per-call
// directories of the shell sandbox inside it: `shell-<broker pid>-XXXXXX/` holding the
// private temp directory `tmp/` and the empty mask sources. A call's directory is removed
// when the call ends; directories of brokers that no longer run are swept at start.
//
// Beside it, the output directory (the runtime directory's path plus "-output"): full shell
// output, `output-<broker pid>-XXXXXX`. It is not broker state — the agent reads those files
// through the read tool — so it is a separate directory, never hidden like the runtime one.
#ifndef BROKER_EXEC_RUNTIME_DIR_H_
#define BROKER_EXEC_RUNTIME_DIR_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace airlock::broker {

// Where the default runtime directory is looked for; tests substitute their own.
struct RuntimeDirDefaults {
  std::string xdg_runtime_dir;  // the value of $XDG_RUNTIME_DIR, empty when unset
  std::string shm = "/dev/shm";
  std::string tmp = "/tmp";
  static RuntimeDirDefaults FromEnvironment();
};

// `requested` if nonempty, strictly: created 0700 when missing, refused unless it is a real
// directory (not a link) owned by this user and closed to everyone else.
//
// Otherwise the first of these that passes the same check: $XDG_RUNTIME_DIR/airlock, only
// when XDG_RUNTIME_DIR is an absolute path that resolves to an existing directory owned by
// this user and not writable by group or others (`su` leaves another user's there); then
// /dev/shm/airlock-<uid> (memory-backed; only when /dev/shm is a sticky directory); then
// /tmp/airlock-<uid>. A candidate that fails is skipped; the error names each.
[[nodiscard]] absl::StatusOr<std::string> EnsureRuntimeDir(const std::string& requested);
[[nodiscard]] absl::StatusOr<std::string> EnsureRuntimeDir(const std::string& requested,
                                                           const RuntimeDirDefaults& defaults);

// `runtime_dir` + "-output", created 0700 when missing and checked like the runtime directory.
[[nodiscard]] absl::StatusOr<std::string> EnsureOutputDir(const std::string& runtime_dir);

struct CallDir {
  std::string path;         // the call's directory
  std::string tmp;          // bound at /tmp inside the sandbox
  std::string empty_dir;    // mask sources
  std::string empty_file;
};

[[nodiscard]] absl::StatusOr<CallDir> MakeCallDir(const std::string& runtime_dir);

// Removes a tree without following links, making directories writable as needed.
[[nodiscard]] absl::Status RemoveTree(const std::string& path);

// Removes call directories left by brokers that are no longer running. Returns how many.
int SweepStaleCallDirs(const std::string& runtime_dir);

// Removes full-output files (`output-<pid>-…`) of brokers that are no longer running. Returns
// how many.
int SweepStaleOutputFiles(const std::string& output_dir);

}  // namespace airlock::broker

#endif  // BROKER_EXEC_RUNTIME_DIR_H_
