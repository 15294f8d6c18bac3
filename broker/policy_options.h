// The policy options shared by `airlock run` and `airlock exec` (SPEC §3), as parsed from the
// command line. Validation into a Policy happens in broker/policy.
#ifndef BROKER_POLICY_OPTIONS_H_
#define BROKER_POLICY_OPTIONS_H_

#include <string>
#include <vector>

#include "CLI/CLI.hpp"

namespace airlock::broker {

struct PolicyOptions {
  std::string workspace;                 // default: the current directory
  std::vector<std::string> roots;        // extra file-tool roots
  std::string preset;                    // empty: settings / session / read-only
  std::string mode;                      // empty: the preset's default
  // Empty strings mean "not given": settings.json, then the built-in default, decide.
  std::string edit_tools;                // built-in default write,edit
  std::string outside_workspace;         // built-in default deny
  std::vector<std::string> protect;
  std::string read_scope;                // built-in default any
  bool allow_unix_sockets = false;
};

// Registers --workspace, --root, --preset/--permission-preset, --mode, --edit-tools,
// --outside-workspace, --protect, --read-scope and --allow-unix-sockets on `command`.
void AddPolicyOptions(CLI::App* command, PolicyOptions* options);

}  // namespace airlock::broker

#endif  // BROKER_POLICY_OPTIONS_H_
