#include "broker/doctor_command.h"

#include <iostream>

namespace airlock::broker {

void AddDoctorCommand(CLI::App& app, int& exit_code) {
  CLI::App* command = app.add_subcommand("doctor", "(not yet available: the enforcement report)");
  command->allow_extras();
  command->callback([&exit_code] {
    std::cerr << "airlock doctor: refused: the enforcement report is not part of this build yet\n";
    exit_code = 2;
  });
}

}  // namespace airlock::broker
