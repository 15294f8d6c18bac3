#ifndef WORKER_CONFINE_COMMAND_H_
#define WORKER_CONFINE_COMMAND_H_

#include "CLI/CLI.hpp"

namespace airlock::worker {

// Registers the hidden `airlock __confine -- CMD…`, which applies the worker's own
// confinement layers and then execs CMD.
void AddConfineCommand(CLI::App& app, int& exit_code);

}  // namespace airlock::worker

#endif  // WORKER_CONFINE_COMMAND_H_
