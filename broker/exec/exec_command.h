#ifndef BROKER_EXEC_EXEC_COMMAND_H_
#define BROKER_EXEC_EXEC_COMMAND_H_

#include "CLI/CLI.hpp"

namespace airlock::broker {

// Registers `airlock exec`; its callback stores the process exit status in `exit_code`.
void AddExecCommand(CLI::App& app, int& exit_code);

}  // namespace airlock::broker

#endif  // BROKER_EXEC_EXEC_COMMAND_H_
