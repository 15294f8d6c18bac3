#include "broker/audit/audit_command.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "broker/audit/audit_format.h"
#include "broker/audit/audit_json.h"
#include "broker/audit/audit_key.h"
#include "broker/audit/audit_verifier.h"
#include "platform/base/errno_status.h"
#include "platform/base/fd_io.h"
#include "platform/base/scoped_fd.h"

namespace airlock::broker {
namespace {

constexpr int kIntact = 0;
constexpr int kNotIntact = 1;
constexpr int kUnusable = 2;
constexpr size_t kMaxLogBytes = size_t{1} << 30;

struct AuditOptions {
  std::string log;
  std::string key_file;
};

// Opens and reads a log; the descriptor stays open for the liveness check.
absl::StatusOr<std::string> ReadLog(const std::string& path, ScopedFd* fd) {
  fd->reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!*fd) return LastErrnoStatus("open", path);
  struct stat st;
  if (::fstat(fd->get(), &st) != 0) return LastErrnoStatus("stat", path);
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is not a regular file"));
  }
  return ReadToEnd(fd->get(), kMaxLogBytes, path);
}

// A broker holds an exclusive lock on the log it writes.
bool HeldByRunningBroker(int fd) {
  if (::flock(fd, LOCK_SH | LOCK_NB) == 0) {
    ::flock(fd, LOCK_UN);
    return false;
  }
  return errno == EWOULDBLOCK;
}

int Verify(const AuditOptions& options) {
  audit::AuditKeyOptions key_options;
  key_options.key_file = options.key_file;
  if (const char* env = std::getenv(audit::kAuditKeyEnvironmentVariable); env != nullptr) {
    key_options.env_key = std::string(env);
  }
  key_options.create_default = false;
  absl::StatusOr<audit::AuditKey> key = audit::LoadOrCreateAuditKey(key_options);
  if (!key.ok()) {
    std::cerr << "airlock audit verify: unusable key: " << key.status().message() << "\n";
    return kUnusable;
  }
  ScopedFd fd;
  absl::StatusOr<std::string> content = ReadLog(options.log, &fd);
  if (!content.ok()) {
    std::cerr << "airlock audit verify: unusable log: " << content.status().message() << "\n";
    return kUnusable;
  }
  absl::StatusOr<audit::VerifyResult> result = audit::VerifyAuditLog(*content, key->master);
  if (!result.ok()) {
    std::cerr << "airlock audit verify: " << result.status().message() << "\n";
    return kUnusable;
  }
  const std::string log = audit::EscapeForDisplay(options.log);
  const std::string summary = absl::StrFormat(
      "  session %s: %d records verified (seq 1..%d), %d key epochs closed, %d seal(s), "
      "%d recovery record(s)%s\n",
      audit::EscapeForDisplay(result->session), result->records, result->last_seq,
      result->epochs_closed, result->seals, result->recoveries,
      result->first_time.empty()
          ? std::string()
          : absl::StrCat(", ", result->first_time, " to ", result->last_time));
  std::string notes;
  for (const std::string& note : result->notes) absl::StrAppend(&notes, "  ", note, "\n");

  if (result->intact()) {
    std::cout << "intact: " << log << "\n" << summary << notes;
    return kIntact;
  }
  // A running broker has not sealed yet, and may be writing the last line right now.
  const bool incomplete_tail =
      result->problem == audit::AuditProblem::kUnsealed ||
      (result->problem == audit::AuditProblem::kTruncated && result->records > 0 &&
       result->verified_bytes < content->size() &&
       content->find('\n', result->verified_bytes) == std::string::npos);
  if (incomplete_tail && HeldByRunningBroker(fd.get())) {
    std::cout << "intact so far: " << log
              << " is still being written by a running broker (not sealed yet)\n"
              << summary << notes;
    return kIntact;
  }
  std::cout << "NOT INTACT: " << log << ": ";
  if (result->problem == audit::AuditProblem::kUnsealed) {
    std::cout << "after line " << result->line << ": ";
  } else {
    std::cout << "line " << result->line;
    if (result->seq.has_value()) std::cout << " (seq " << *result->seq << ")";
    std::cout << ": ";
  }
  std::cout << audit::AuditProblemName(result->problem) << ": "
            << audit::EscapeForDisplay(result->detail) << "\n";
  if (result->records == 0) {
    std::cout << "  nothing verified before it\n";
  } else {
    std::cout << "  verified" << (result->problem == audit::AuditProblem::kUnsealed ? "" : " before it")
              << ":\n" << summary << notes;
  }
  return kNotIntact;
}

void AppendField(std::string* out, const std::string& key, const audit::JsonValue& value) {
  if (value.is_string) {
    std::string shown = audit::EscapeForDisplay(value.string_value);
    if (shown.empty() || shown.find_first_of(" \"=") != std::string::npos) {
      // Quote values that would otherwise run into the next field.
      std::string quoted = "\"";
      for (char c : shown) {
        if (c == '"') quoted.push_back('\\');
        quoted.push_back(c);
      }
      shown = quoted + "\"";
    }
    absl::StrAppend(out, " ", key, "=", shown);
  } else {
    absl::StrAppend(out, " ", key, "=", value.int_value);
  }
}

int Show(const AuditOptions& options) {
  ScopedFd fd;
  absl::StatusOr<std::string> content = ReadLog(options.log, &fd);
  if (!content.ok()) {
    std::cerr << "airlock audit show: unusable log: " << content.status().message() << "\n";
    return kUnusable;
  }
  std::cout << "# " << audit::EscapeForDisplay(options.log)
            << " (listing only; `airlock audit verify` checks the signatures)\n";
  int status = kIntact;
  absl::string_view rest = *content;
  size_t line_number = 0;
  while (!rest.empty()) {
    ++line_number;
    const size_t newline = rest.find('\n');
    const bool terminated = newline != absl::string_view::npos;
    const absl::string_view line = terminated ? rest.substr(0, newline) : rest;
    rest.remove_prefix(terminated ? newline + 1 : rest.size());
    std::string out = absl::StrFormat("%6d ", line_number);
    absl::string_view prefix, mac;
    absl::StatusOr<audit::FlatJsonObject> body =
        audit::SplitSignedLine(line, &prefix, &mac)
            ? audit::ParseFlatJsonObject(absl::StrCat(prefix, "}"))
            : absl::InvalidArgumentError("no mac field");
    if (!terminated || !body.ok()) {
      status = kNotIntact;
      absl::StrAppend(&out, terminated ? "(not a record) " : "(incomplete last line) ",
                      audit::EscapeForDisplay(line.substr(0, 160)),
                      line.size() > 160 ? "…" : "");
      std::cout << out << "\n";
      continue;
    }
    const audit::JsonValue* seq = body->Find("seq");
    const audit::JsonValue* time = body->Find("time");
    const audit::JsonValue* event = body->Find("event");
    absl::StrAppend(&out, "seq=", seq != nullptr && !seq->is_string ? seq->int_value : -1, " ",
                    time != nullptr ? audit::EscapeForDisplay(time->string_value) : "?", " ",
                    event != nullptr ? audit::EscapeForDisplay(event->string_value) : "?");
    for (const auto& [key, value] : body->fields()) {
      if (key == "v" || key == "seq" || key == "time" || key == "event" || key == "session" ||
          key == "prev") {
        continue;
      }
      AppendField(&out, audit::EscapeForDisplay(key), value);
    }
    std::cout << out << "\n";
  }
  return status;
}

}  // namespace

void AddAuditCommand(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<AuditOptions>();
  CLI::App* command = app.add_subcommand("audit", "Verify or list an audit log");
  command->require_subcommand(1);

  CLI::App* verify = command->add_subcommand(
      "verify", "Check an audit log's signatures, chain and seal (exit 0 intact, 1 not, 2 unusable)");
  verify->add_option("log", options->log, "The audit log")->required();
  verify->add_option("--key-file", options->key_file,
                     "The audit key file (mode 0600; default: AIRLOCK_AUDIT_KEY, then "
                     "$AIRLOCK_HOME/audit.key)");
  verify->callback([options, &exit_code] { exit_code = Verify(*options); });

  CLI::App* show = command->add_subcommand("show", "List an audit log, one line per record");
  show->add_option("log", options->log, "The audit log")->required();
  show->callback([options, &exit_code] { exit_code = Show(*options); });
}

}  // namespace airlock::broker
