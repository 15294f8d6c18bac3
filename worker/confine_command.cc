#include "worker/confine_command.h"

#include <iostream>

namespace airlock::worker {

void AddConfineCommand(CLI::App& app, int& exit_code) {
  CLI::App* command = app.add_subcommand("__confine", "");
  command->group("");  // hidden
  command->allow_extras();
  command->callback([&exit_code] {
    std::cerr << "airlock __confine: refused: worker self-confinement is not part of this build yet\n";
    exit_code = 2;
  });
}

}  // namespace airlock::worker
