#include "broker/worker_launcher.h"

#include <csignal>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "platform/base/status_macros.h"
#include "platform/process/spawn.h"

namespace airlock::broker {
namespace {

constexpr char kDefaultPath[] = "/usr/local/bin:/usr/bin:/bin";

bool IsWithheldVariable(absl::string_view entry) {
  // Broker secrets and broker-owned variables never reach the worker from the environment.
  for (absl::string_view name : {"AIRLOCK_AUDIT_KEY=", "AIRLOCK_FD=", "AIRLOCK_SESSION="}) {
    if (absl::StartsWith(entry, name)) return true;
  }
  return false;
}

std::string PathOf(const std::vector<std::string>& environment) {
  for (const std::string& entry : environment) {
    if (absl::StartsWith(entry, "PATH=")) return entry.substr(5);
  }
  return kDefaultPath;
}

}  // namespace

std::vector<std::string> WorkerEnvironment(const WorkerLaunchOptions& options) {
  std::vector<std::string> env;
  for (const std::string& entry : options.environment) {
    if (!IsWithheldVariable(entry)) env.push_back(entry);
  }
  env.push_back(absl::StrCat("AIRLOCK_FD=", kWorkerConnectorFd));
  env.push_back(absl::StrCat("AIRLOCK_SESSION=", options.session_id));
  return env;
}

absl::StatusOr<pid_t> LaunchWorker(const WorkerLaunchOptions& options) {
  if (options.argv.empty()) return absl::InvalidArgumentError("no agent command given");
  SpawnOptions spawn;
  AIRLOCK_ASSIGN_OR_RETURN(std::string program,
                           FindExecutable(options.argv[0], PathOf(options.environment)));
  spawn.argv = options.argv;
  spawn.argv[0] = program;
  spawn.env = WorkerEnvironment(options);
  spawn.descriptors = {{0, 0}, {1, 1}, {2, 2}, {kWorkerConnectorFd, options.connector_fd}};
  spawn.new_session = true;
  spawn.parent_death_signal = SIGKILL;
  spawn.no_new_privileges = true;
  if (!options.working_directory.empty()) spawn.working_directory = options.working_directory;
  return Spawn(spawn);
}

}  // namespace airlock::broker
