// Where the audit key comes from, and the audit paths the broker must protect.
//
// Sources, first match wins:
//   1. --audit-key-file K: K must be a regular file (not a symbolic link), mode exactly 0600,
//      owned by the effective user; anything else is refused, never ignored.
//   2. AIRLOCK_AUDIT_KEY: the key itself. Never on the command line (argv is world-readable in
//      /proc). The broker removes it from its environment (TakeAuditKeyFromEnvironment) before
//      anything is launched.
//   3. $AIRLOCK_HOME/audit.key (AIRLOCK_HOME defaults to ~/.airlock, created 0700): used when
//      present (same checks as 1), created with 32 random bytes when absent (broker only).
// Key material, in a file or the variable: text made only of hex digits, of even length and at
// least 32 digits (one trailing newline ignored), is hex-decoded; anything else is the raw
// bytes, at least 16 of them, at most 4096.
#ifndef BROKER_AUDIT_AUDIT_KEY_H_
#define BROKER_AUDIT_AUDIT_KEY_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "broker/audit/audit_crypto.h"

namespace airlock::broker::audit {

inline constexpr char kAuditKeyEnvironmentVariable[] = "AIRLOCK_AUDIT_KEY";

struct AuditKey {
  SecretBytes master;
  std::string source;  // for messages: "key file /x", "AIRLOCK_AUDIT_KEY", …
  std::string path;    // the key file, empty when the key came from the environment
};

struct AuditKeyOptions {
  std::string key_file;                // --audit-key-file / --key-file; empty: not given
  std::optional<std::string> env_key;  // the value of AIRLOCK_AUDIT_KEY, if it was set
  std::string airlock_home;            // empty: ResolveAirlockHome()
  bool create_default = true;          // false for the verifier: never create a key
};

// $AIRLOCK_HOME, else $HOME/.airlock, else the passwd entry's home + /.airlock.
[[nodiscard]] absl::StatusOr<std::string> ResolveAirlockHome();

// Creates `path` 0700 if absent (parents must exist); an existing one must be a directory
// (not a link) owned by the effective user and writable by nobody else.
[[nodiscard]] absl::Status EnsurePrivateDirectory(const std::string& path);

// Reads AIRLOCK_AUDIT_KEY and removes it from this process's environment, so no child
// inherits it. nullopt when unset.
std::optional<std::string> TakeAuditKeyFromEnvironment();

// Applies the order above. The broker calls this once at start; a refusal stops the start.
// With create_default (the broker), it also removes AIRLOCK_AUDIT_KEY from this process's
// environment, so nothing launched later inherits the key.
[[nodiscard]] absl::StatusOr<AuditKey> LoadOrCreateAuditKey(const AuditKeyOptions& options);

// Reads a key file with the checks of source 1.
[[nodiscard]] absl::StatusOr<AuditKey> ReadAuditKeyFile(const std::string& path);

// Decodes key material as described above; `what` names its origin in errors.
[[nodiscard]] absl::StatusOr<SecretBytes> ParseAuditKeyMaterial(absl::string_view text,
                                                                absl::string_view what);

// $AIRLOCK_HOME/audit.key and $AIRLOCK_HOME/audit.
std::string DefaultAuditKeyPath(const std::string& airlock_home);
std::string DefaultAuditLogDirectory(const std::string& airlock_home);

// Session ids become file names: 1-128 of [A-Za-z0-9._-], not starting with '.'.
bool IsValidSessionId(absl::string_view session);

// $AIRLOCK_HOME/audit/<session>.jsonl, creating $AIRLOCK_HOME and its audit directory (0700).
[[nodiscard]] absl::StatusOr<std::string> PrepareDefaultAuditLogPath(
    const std::string& airlock_home, absl::string_view session);

// Everything of the audit trail that restricted writes must never touch and that shells and
// the worker must not read: the log and the key file (if the key is a file). $AIRLOCK_HOME (and
// so the default audit directory) is protected storage on its own account. Pass these to
// FileToolsOptions::protected_paths and to the shell sandbox's masks.
std::vector<std::string> AuditProtectedPaths(const AuditKey& key, const std::string& log_path);

}  // namespace airlock::broker::audit

#endif  // BROKER_AUDIT_AUDIT_KEY_H_
