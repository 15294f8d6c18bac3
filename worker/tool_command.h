#ifndef WORKER_TOOL_COMMAND_H_
#define WORKER_TOOL_COMMAND_H_

#include "CLI/CLI.hpp"

namespace airlock::worker {

// Registers `airlock tool read|write|edit|ls|bash|list|call`: one call to the broker through
// AIRLOCK_FD, one JSON object on stdout, exit status per SPEC §3.
void AddToolCommand(CLI::App& app, int& exit_code);

}  // namespace airlock::worker

#endif  // WORKER_TOOL_COMMAND_H_
