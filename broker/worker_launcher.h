// Starts the agent command as the worker: its own session, a parent-death signal, and no
// descriptors but 0, 1, 2 and the connector (as descriptor 3, named by AIRLOCK_FD).
#ifndef BROKER_WORKER_LAUNCHER_H_
#define BROKER_WORKER_LAUNCHER_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace airlock::broker {

// The descriptor number the worker finds its connector at.
inline constexpr int kWorkerConnectorFd = 3;

struct WorkerLaunchOptions {
  std::vector<std::string> argv;         // the agent command; argv[0] looked up in PATH
  std::vector<std::string> environment;  // the broker's environment ("NAME=value")
  int connector_fd = -1;                 // the worker end of the connector
  std::string session_id;
  std::string working_directory;         // the workspace
};

// The worker's environment: the broker's, without anything that carries broker secrets
// (AIRLOCK_AUDIT_KEY) or a stale channel, plus AIRLOCK_FD and AIRLOCK_SESSION.
std::vector<std::string> WorkerEnvironment(const WorkerLaunchOptions& options);

[[nodiscard]] absl::StatusOr<pid_t> LaunchWorker(const WorkerLaunchOptions& options);

}  // namespace airlock::broker

#endif  // BROKER_WORKER_LAUNCHER_H_
