// `airlock audit verify LOG [--key-file K]` and `airlock audit show LOG`.
//
// verify exits 0 when the log is intact and sealed (or unsealed, its last line possibly still
// being written, while a running broker holds its lock — which is said), 1 when it is not intact (naming the first bad line, its seq and the
// reason: MAC, chain, sequence gap, order, truncated, unsealed, malformed), 2 when the input is
// unusable (no such log, no usable key). The key: --key-file, else AIRLOCK_AUDIT_KEY, else
// $AIRLOCK_HOME/audit.key if it exists (never created here).
//
// show lists every line, one per record, escaped for the terminal; it verifies nothing. It
// exits 0, 1 when some line is not a record, 2 when the log cannot be read.
#ifndef BROKER_AUDIT_AUDIT_COMMAND_H_
#define BROKER_AUDIT_AUDIT_COMMAND_H_

#include "CLI/CLI.hpp"

namespace airlock::broker {

// Registers `airlock audit`; its callback stores the process exit status in `exit_code`.
void AddAuditCommand(CLI::App& app, int& exit_code);

}  // namespace airlock::broker

#endif  // BROKER_AUDIT_AUDIT_COMMAND_H_
