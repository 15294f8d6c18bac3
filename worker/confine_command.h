// The hidden `airlock __confine`: the first program of the worker, run by the broker's
// launcher inside the worker's mount view (layer 1, bwrap). It applies the layers a process
// can only apply to itself — no_new_privs, no capabilities, Landlock (layer 2) and seccomp
// (layer 3) — verifies them, reports to the broker on a private status descriptor, closes
// every descriptor but 0, 1, 2 and the connector (3), and execs the agent command.
//
//   airlock __confine --status-fd N --scratch DIR [--landlock] [--seccomp] [--private-dev]
//                     [--allow-unix-sockets] -- PROGRAM [ARGS…]
//
// Status protocol (one line, then EOF at exec): "ok <what was applied>" or "error <why>".
// Any failure refuses: exit 125, nothing is exec'd, nothing runs with less confinement.
#ifndef WORKER_CONFINE_COMMAND_H_
#define WORKER_CONFINE_COMMAND_H_

#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"

namespace airlock::worker {

// Exit status of `__confine` when a layer cannot be applied (nothing was exec'd).
inline constexpr int kConfineRefused = 125;

struct ConfineOptions {
  int status_fd = -1;
  std::string scratch;  // the worker's private writable directory (TMPDIR)
  bool landlock = false;
  bool seccomp = false;
  bool private_dev = false;  // /dev is the mount view's own (terminals may be granted)
  bool allow_unix_sockets = false;
  std::vector<std::string> command;  // command[0] is an absolute path
};

// Applies no_new_privs, drops every capability, then Landlock and seccomp as requested, and
// verifies the result. Returns a one-line summary of what is in force.
[[nodiscard]] absl::StatusOr<std::string> ConfineSelf(const ConfineOptions& options);

// Registers the hidden `airlock __confine -- CMD…`.
void AddConfineCommand(CLI::App& app, int& exit_code);

}  // namespace airlock::worker

#endif  // WORKER_CONFINE_COMMAND_H_
