// Runs the real `airlock` binary for integration tests, as the current user and, when the
// suite runs as root, also as an unprivileged user (uid 65534) — so that a denial cannot pass
// for the wrong reason.
#ifndef INTEGRATION_HARNESS_H_
#define INTEGRATION_HARNESS_H_

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace airlock::integration {

enum class RunAs { kCurrentUser, kUnprivileged };

struct CommandResult {
  int exit_code = -1;  // 128 + signal when killed
  std::string out;
  std::string err;
  bool timed_out = false;
};

struct RunOptions {
  RunAs run_as = RunAs::kCurrentUser;
  std::vector<std::string> env;  // added to a small base environment (PATH, HOME, AIRLOCK_HOME)
  std::string stdin_data;
  std::string cwd;
  int timeout_seconds = 60;
  // Called with the child's pid as soon as it runs (samplers, fault injectors).
  std::function<void(pid_t)> started;
};

// The unprivileged uid/gid used when the suite runs as root.
inline constexpr uid_t kUnprivilegedUid = 65534;
inline constexpr gid_t kUnprivilegedGid = 65534;

// Path of an `airlock` binary that `run_as` can execute.
std::string AirlockBinary(RunAs run_as);

// A copy of the program at `path` that `run_as` can execute (the build tree may sit below a
// directory the unprivileged user cannot enter); removed at exit.
std::string ExecutableFor(RunAs run_as, const std::string& path);

// Runs argv (argv[0] resolved through PATH) and collects its output.
CommandResult RunCommand(const std::vector<std::string>& argv, const RunOptions& options);

// Runs `airlock ARGS…`.
CommandResult RunAirlock(const std::vector<std::string>& args, const RunOptions& options);

// A scratch directory owned by the user the test runs as (0700), removed afterwards.
class Scratch {
 public:
  // Under /tmp by default. Shell sandboxes have a private /tmp: what a sandboxed command must
  // see outside the roots belongs in another base (e.g. /var/tmp).
  explicit Scratch(RunAs run_as, const std::string& base = "/tmp");
  ~Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  const std::string& path() const { return path_; }
  std::string Child(const std::string& name) const { return path_ + "/" + name; }
  // Creates a file (and its parents) owned by the scratch's user.
  void Write(const std::string& relative, const std::string& content) const;
  void MakeDir(const std::string& relative) const;

 private:
  RunAs run_as_;
  std::string path_;
};

// Options for running `airlock` (and the worker's `airlock tool`) as `run_as` with its own
// home: AIRLOCK_HOME=HOME/airlock, HOME, and a PATH that starts with the binary's directory.
RunOptions AirlockOptions(RunAs run_as, const Scratch& home);

// `airlock audit verify` of every log in HOME/airlock/audit with HOME/airlock/audit.key; exit 0
// when all verify.
CommandResult VerifyAuditLogs(RunAs run_as, const Scratch& home);

// Both identities when running as root, only the current user otherwise.
std::vector<RunAs> IdentitiesToTest();
std::string RunAsName(const ::testing::TestParamInfo<RunAs>& info);

std::ostream& operator<<(std::ostream& out, const CommandResult& result);

}  // namespace airlock::integration

#endif  // INTEGRATION_HARNESS_H_
