// `airlock approve --socket PATH`: the interactive client of the socket:PATH approver. It
// connects, shows each request escaped exactly like the tty approver, reads y/n from its
// terminal (/dev/tty; stdin/stdout when it has none), answers, and reconnects for the next
// request until the broker goes away or input ends.
#ifndef BROKER_APPROVE_COMMAND_H_
#define BROKER_APPROVE_COMMAND_H_

#include "CLI/CLI.hpp"

namespace airlock::broker {

// Registers `airlock approve`; its callback stores the process exit status in `exit_code`
// (0: the broker went away or input ended; 2: could not connect at all).
void AddApproveCommand(CLI::App& app, int& exit_code);

}  // namespace airlock::broker

#endif  // BROKER_APPROVE_COMMAND_H_
