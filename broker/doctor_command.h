#ifndef BROKER_DOCTOR_COMMAND_H_
#define BROKER_DOCTOR_COMMAND_H_

#include "CLI/CLI.hpp"

namespace airlock::broker {

// Registers `airlock doctor`; its callback stores the process exit status in `exit_code`.
void AddDoctorCommand(CLI::App& app, int& exit_code);

}  // namespace airlock::broker

#endif  // BROKER_DOCTOR_COMMAND_H_
