#ifndef BROKER_AUDIT_AUDIT_COMMAND_H_
#define BROKER_AUDIT_AUDIT_COMMAND_H_

#include "CLI/CLI.hpp"

namespace airlock::broker {

// Registers `airlock audit`; its callback stores the process exit status in `exit_code`.
void AddAuditCommand(CLI::App& app, int& exit_code);

}  // namespace airlock::broker

#endif  // BROKER_AUDIT_AUDIT_COMMAND_H_
