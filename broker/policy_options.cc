#include "broker/policy_options.h"

namespace airlock::broker {

void AddPolicyOptions(CLI::App* command, PolicyOptions* options) {
  command->add_option("--workspace", options->workspace,
                      "Workspace directory (default: the current directory)");
  // Repeatable options take one value each, so that `--` still starts the command.
  command->add_option("--root", options->roots, "Extra file-tool root (repeatable)")
      ->allow_extra_args(false);
  command->add_option("--preset,--permission-preset", options->preset,
                      "read-only | workspace-write | danger-full-access")
      ->check(CLI::IsMember({"read-only", "workspace-write", "danger-full-access"}));
  command->add_option("--mode", options->mode, "default | accept-edits | on-request | never")
      ->check(CLI::IsMember({"default", "accept-edits", "on-request", "never"}));
  command->add_option("--edit-tools", options->edit_tools,
                      "Tools that accept-edits runs without asking (default write,edit)");
  command->add_option("--outside-workspace", options->outside_workspace, "deny | ask")
      ->check(CLI::IsMember({"deny", "ask"}));
  command->add_option("--protect", options->protect, "Extra protected path (repeatable)")
      ->allow_extra_args(false);
  command->add_option("--read-scope", options->read_scope, "workspace | any")
      ->check(CLI::IsMember({"workspace", "any"}));
  command->add_flag("--allow-unix-sockets", options->allow_unix_sockets,
                    "Let shell sandboxes create AF_UNIX sockets (weakens isolation)");
}

}  // namespace airlock::broker
