#include "broker/audit/audit_command.h"

#include <iostream>

namespace airlock::broker {

void AddAuditCommand(CLI::App& app, int& exit_code) {
  CLI::App* command = app.add_subcommand("audit", "(not yet available: the audit verifier)");
  command->allow_extras();
  command->callback([&exit_code] {
    std::cerr << "airlock audit: refused: the audit verifier is not part of this build yet\n";
    exit_code = 2;
  });
}

}  // namespace airlock::broker
