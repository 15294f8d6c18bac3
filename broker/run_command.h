#ifndef BROKER_RUN_COMMAND_H_
#define BROKER_RUN_COMMAND_H_

#include "CLI/CLI.hpp"

namespace airlock::broker {

// Registers `airlock run [options] -- AGENT_CMD…`: the broker serving one confined worker.
void AddRunCommand(CLI::App& app, int& exit_code);

}  // namespace airlock::broker

#endif  // BROKER_RUN_COMMAND_H_
