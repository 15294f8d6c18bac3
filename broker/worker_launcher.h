// Starts the agent command as the confined worker (SPEC §7).
//
// The worker process: its own session (no controlling terminal shared with the broker), a
// parent-death signal, no_new_privs, no capabilities (all five sets empty), and no
// descriptors but 0, 1, 2 and the connector (descriptor 3, named by AIRLOCK_FD). Three
// independent layers each block direct writes:
//
//  1. mount   bwrap (/usr/bin/bwrap or /bin/bwrap, empty environment, options via --args):
//             the host root read-only (the host's /tmp included), a private /dev (read-only
//             but for its devices), a private in-memory scratch directory at /dev/shm given
//             as TMPDIR/TMP/TEMP (a tmpfs that vanishes with the run), a fresh /proc in new
//             user, pid, ipc, uts and cgroup namespaces (the broker is invisible and cannot be
//             signalled or traced), no nested user namespaces, --new-session,
//             --die-with-parent, --cap-drop ALL; the broker's state ($AIRLOCK_HOME with the
//             audit key, sessions and logs; the runtime directory; every hidden path) masked
//             by empty read-only tmpfs mounts or /dev/null. Network shared unless
//             --worker-network none (--unshare-net).
//             Why /dev/shm: a tmpfs needs an existing mount point, and in a read-only host root
//             only the view's own /dev has one to offer; it is also where POSIX shared memory
//             belongs, so the worker's shm_open works in the same private place.
//  2. landlock `airlock __confine` (the worker's first program): read and execute
//             everywhere, every write right only beneath the scratch directory, write to the
//             sink devices; signals and abstract Unix sockets scoped to the worker's domain.
//  3. seccomp `airlock __confine`: see platform/linux/worker_seccomp.h for the exact list.
//
// What each layer alone blocks (tested by integration/worker_confinement_test.cc):
//  - mount alone: every write to the host filesystem (create, truncate, unlink, rename,
//    mkdir, symlink, link, chmod, chown, xattrs, times): EROFS.
//  - landlock alone: create, open-for-write, truncate, unlink, rename, mkdir, rmdir, symlink,
//    link, mknod outside the scratch directory: EACCES. Landlock has no right for chmod,
//    chown, xattrs or timestamps; those are blocked by layers 1 and 3 only.
//  - seccomp alone: chmod, chown, xattr writes, link, symlink, mknod, truncate(2), creat(2)
//    everywhere (scratch included): EPERM. It cannot see paths, so it does not block opening,
//    creating, renaming, unlinking or mkdir (the scratch needs them): layers 1 and 2 do.
// Together: no write anywhere but the scratch directory.
//
// A layer the machine cannot provide makes the launch fail (exit 125, the layer and the
// reason named) unless the user accepted that weaker setup by name
// (--accept-weaker-worker LAYER). The hidden --test-disable-worker-layer LAYER switches a
// layer off for tests only, and is announced loudly on stderr.
#ifndef BROKER_WORKER_LAUNCHER_H_
#define BROKER_WORKER_LAUNCHER_H_

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"

namespace airlock::broker {

// The descriptor number the worker finds its connector at.
inline constexpr int kWorkerConnectorFd = 3;

// The worker's private scratch directory inside the mount view (TMPDIR).
inline constexpr char kWorkerScratchDir[] = "/dev/shm";

// Layer names as the command line spells them.
inline constexpr char kLayerMount[] = "mount";
inline constexpr char kLayerLandlock[] = "landlock";
inline constexpr char kLayerSeccomp[] = "seccomp";

struct WorkerConfinementOptions {
  // --accept-weaker-worker LAYER (repeatable): run without LAYER when the machine lacks it.
  std::vector<std::string> accept_weaker;
  // --test-disable-worker-layer LAYER (hidden, repeatable): for tests that show each layer
  // blocking writes on its own.
  std::vector<std::string> test_disable;
  // --allow-unix-sockets: let the worker create AF_UNIX sockets (seccomp).
  bool allow_unix_sockets = false;
};

// Registers --accept-weaker-worker and the hidden --test-disable-worker-layer on `command`.
void AddWorkerConfinementOptions(CLI::App* command, WorkerConfinementOptions* options);

struct WorkerLaunchOptions {
  std::vector<std::string> argv;         // the agent command; argv[0] looked up in PATH
  std::vector<std::string> environment;  // the broker's environment ("NAME=value")
  int connector_fd = -1;                 // the worker end of the connector
  std::string session_id;
  std::string working_directory;         // the workspace
  bool isolate_network = false;          // --worker-network none
  // Broker state the worker must not read, beyond the defaults ($AIRLOCK_HOME, or
  // ~/.airlock, and $XDG_RUNTIME_DIR/airlock): the audit key and log when given explicitly,
  // the control socket's directory, the runtime directory.
  std::vector<std::string> hidden_paths;
  WorkerConfinementOptions confinement;
  // The `airlock` binary that runs `__confine` (default: this process's executable).
  std::string airlock_binary;
  // How long the confinement may take to report (bwrap and `__confine` need milliseconds);
  // past it the launch is refused and the tree killed.
  std::chrono::milliseconds status_timeout{std::chrono::seconds(30)};
};

// The worker's environment: the broker's, without anything that carries broker secrets
// (AIRLOCK_AUDIT_KEY) or a stale channel, plus AIRLOCK_FD and AIRLOCK_SESSION.
std::vector<std::string> WorkerEnvironment(const WorkerLaunchOptions& options);

// One layer as `airlock doctor` reports it.
struct LayerReport {
  std::string name;       // "mount", "landlock", "seccomp"
  bool available = false;
  std::string detail;     // what works ("Landlock ABI 7"), or why not
};

// Probes the three layers on this machine without starting anything lasting.
std::vector<LayerReport> ProbeWorkerLayers();

// Launches `true` as a fully confined worker (all three layers, no weakening) and waits for
// it: the whole chain end to end. Returns the summary `__confine` confirmed, or why not.
[[nodiscard]] absl::StatusOr<std::string> ProbeWorkerLaunch();

// What a launch put in force, for the run's stderr line and the audit log.
struct WorkerLaunch {
  pid_t pid = -1;
  std::vector<std::string> active;     // layers in force, e.g. {"mount", "landlock", "seccomp"}
  std::vector<std::string> accepted_missing;  // unavailable, accepted by --accept-weaker-worker
  std::vector<std::string> disabled_for_testing;
  std::string summary;  // one line, as `__confine` confirmed it
};

// Launches the confined worker and waits until `__confine` confirms that every layer is in
// force (or reports why not). FailedPrecondition names the layer and the reason.
[[nodiscard]] absl::StatusOr<WorkerLaunch> LaunchConfinedWorker(const WorkerLaunchOptions& options);

// "worker confined: <layers> (accepted missing: …) (DISABLED for testing: …)", for stderr and
// the audit log.
std::string DescribeWorkerLaunch(const WorkerLaunch& launch);

// LaunchConfinedWorker, printing the summary line on stderr; returns the worker's pid.
[[nodiscard]] absl::StatusOr<pid_t> LaunchWorker(const WorkerLaunchOptions& options);

}  // namespace airlock::broker

#endif  // BROKER_WORKER_LAUNCHER_H_
