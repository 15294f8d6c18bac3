#include "platform/macos/seatbelt_profile.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace airlock::macos {
namespace {

constexpr char kSandboxExec[] = "/usr/bin/sandbox-exec";

absl::Status CheckPath(absl::string_view what, absl::string_view path) {
  if (path.empty() || path[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat("seatbelt: ", what, " '", path,
                                                   "' is not an absolute path"));
  }
  if (path.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("seatbelt: ", what, " contains a NUL byte"));
  }
  return absl::OkStatus();
}

// A protected name as a regular expression matching it as a whole path component sequence at
// any depth: "(^|/)\.git/hooks(/|$)". Names are static data; anything outside a strict set is
// refused rather than escaped.
absl::StatusOr<std::string> NameRegex(absl::string_view name) {
  if (name.empty() || name.front() == '/' || name.back() == '/') {
    return absl::InvalidArgumentError(absl::StrCat("seatbelt: bad protected name '", name, "'"));
  }
  std::string regex = "(^|/)";
  for (char c : name) {
    if (c == '.') {
      regex += "\\.";
    } else if (absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ||
               c == '/') {
      regex += c;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("seatbelt: protected name '", name, "' has a character outside [A-Za-z0-9._-/]"));
    }
  }
  regex += "(/|$)";
  return regex;
}

}  // namespace

absl::StatusOr<SeatbeltProfile> RenderSeatbeltProfile(const SeatbeltPolicy& policy) {
  SeatbeltProfile profile;
  if (policy.temp_dir.empty()) {
    return absl::InvalidArgumentError("seatbelt: the private temp directory is required");
  }
  if (absl::Status s = CheckPath("temp dir", policy.temp_dir); !s.ok()) return s;
  std::string& t = profile.text;
  t = "(version 1)\n"
      "(deny default)\n"
      "; processes: run and fork inside the sandbox; nothing outside it\n"
      "(allow process-exec)\n"
      "(allow process-fork)\n"
      "(allow signal (target same-sandbox))\n"
      "(allow process-info* (target same-sandbox))\n"
      "(deny process-info* (target others))\n"
      "(deny signal (target others))\n"
      "(allow sysctl-read)\n"
      "; reads are not confined (SPEC §1)\n"
      "(allow file-read*)\n"
      "; writes: denied by default, then the temp directory and the roots\n"
      "(deny file-write*)\n"
      "(allow file-write-data (literal \"/dev/null\") (literal \"/dev/zero\")"
      " (literal \"/dev/stdout\") (literal \"/dev/stderr\"))\n";
  profile.parameters.emplace_back("AIRLOCK_TMPDIR", policy.temp_dir);
  t += "(allow file-write* (subpath (param \"AIRLOCK_TMPDIR\")))\n";
  for (size_t i = 0; i < policy.writable_roots.size(); ++i) {
    if (absl::Status s = CheckPath("root", policy.writable_roots[i]); !s.ok()) return s;
    const std::string name = absl::StrCat("AIRLOCK_ROOT_", i);
    profile.parameters.emplace_back(name, policy.writable_roots[i]);
    absl::StrAppend(&t, "(allow file-write* (subpath (param \"", name, "\")))\n");
  }
  // Later rules win in Seatbelt: the protection comes after every allowance.
  t += "; protected storage: denied again, whatever was allowed above\n";
  for (size_t i = 0; i < policy.protected_paths.size(); ++i) {
    if (absl::Status s = CheckPath("protected path", policy.protected_paths[i]); !s.ok()) {
      return s;
    }
    const std::string name = absl::StrCat("AIRLOCK_PROTECTED_", i);
    profile.parameters.emplace_back(name, policy.protected_paths[i]);
    absl::StrAppend(&t, "(deny file-write* (subpath (param \"", name, "\")))\n");
  }
  for (const std::string& protected_name : policy.protected_names) {
    absl::StatusOr<std::string> regex = NameRegex(protected_name);
    if (!regex.ok()) return regex.status();
    absl::StrAppend(&t, "(deny file-write* (regex #\"", *regex, "\"))\n");
  }
  t += "; no network at all, no Mach services\n"
       "(deny network*)\n"
       "(deny mach-lookup)\n";
  return profile;
}

std::vector<std::string> SandboxExecArgv(const SeatbeltProfile& profile,
                                         const std::vector<std::string>& command) {
  std::vector<std::string> argv = {kSandboxExec, "-p", profile.text};
  for (const auto& [name, value] : profile.parameters) {
    argv.push_back("-D");
    argv.push_back(absl::StrCat(name, "=", value));
  }
  argv.push_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

}  // namespace airlock::macos
