#ifndef BROKER_CONTROL_CTL_COMMAND_H_
#define BROKER_CONTROL_CTL_COMMAND_H_

#include "CLI/CLI.hpp"

namespace airlock::broker {

// Registers `airlock ctl --socket PATH preset NAME | status`. Exit 0 done, 3 refused by the
// broker (BUSY, invalid value), 2 any other failure (no broker, persisting failed).
void AddCtlCommand(CLI::App& app, int& exit_code);

}  // namespace airlock::broker

#endif  // BROKER_CONTROL_CTL_COMMAND_H_
