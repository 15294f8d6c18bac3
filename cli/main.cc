// The `airlock` executable: one binary, one subcommand per role. Broker-side commands live in
// broker/, worker-side ones in worker/; this file only wires them to CLI11.
#include <csignal>
#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "broker/approve_command.h"
#include "broker/audit/audit_command.h"
#include "broker/control/ctl_command.h"
#include "broker/doctor_command.h"
#include "broker/exec/exec_command.h"
#include "broker/run_command.h"
#include "worker/confine_command.h"
#include "worker/mcp_command.h"
#include "worker/tool_command.h"

int main(int argc, char** argv) {
  // A peer that closes its socket must not kill the broker; writes report EPIPE instead.
  std::signal(SIGPIPE, SIG_IGN);

  CLI::App app{"airlock: a privilege-separated broker for AI coding agents"};
  app.require_subcommand(1);
  int exit_code = 0;
  airlock::broker::AddRunCommand(app, exit_code);
  airlock::broker::AddExecCommand(app, exit_code);
  airlock::broker::AddDoctorCommand(app, exit_code);
  airlock::broker::AddAuditCommand(app, exit_code);
  airlock::broker::AddCtlCommand(app, exit_code);
  airlock::broker::AddApproveCommand(app, exit_code);
  airlock::worker::AddToolCommand(app, exit_code);
  airlock::worker::AddMcpCommand(app, exit_code);
  airlock::worker::AddConfineCommand(app, exit_code);
  // A first word that names no subcommand: say so (CLI11 would only say one is required).
  const auto names_a_subcommand = [&app](const std::string& word) {
    return !app.get_subcommands([&word](const CLI::App* sub) { return sub->check_name(word); })
                .empty();
  };
  if (argc > 1 && argv[1][0] != '-' && !names_a_subcommand(argv[1])) {
    std::cerr << "airlock: unknown command '" << argv[1]
              << "' (commands: run, exec, tool, mcp, audit, ctl, approve, doctor; see --help)\n";
    return 64;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int status = app.exit(error);
    // SPEC §3: usage errors exit 64 (help exits 0).
    return status == 0 ? 0 : 64;
  }
  return exit_code;
}
