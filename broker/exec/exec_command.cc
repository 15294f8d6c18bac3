#include "broker/exec/exec_command.h"

#include <iostream>

namespace airlock::broker {

void AddExecCommand(CLI::App& app, int& exit_code) {
  CLI::App* command = app.add_subcommand("exec", "(not yet available: the shell sandbox)");
  command->allow_extras();
  command->callback([&exit_code] {
    std::cerr << "airlock exec: refused: the shell sandbox is not part of this build yet\n";
    exit_code = 2;
  });
}

}  // namespace airlock::broker
