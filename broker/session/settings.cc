#include "broker/session/settings.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "broker/session/strict_json.h"
#include "platform/base/errno_status.h"
#include "platform/base/fd_io.h"
#include "platform/base/scoped_fd.h"
#include "platform/base/status_macros.h"

namespace airlock::broker {
namespace {

constexpr size_t kMaxSettingsBytes = 1 << 20;

absl::Status Invalid(absl::string_view origin, absl::string_view field, absl::string_view value,
                     absl::string_view allowed) {
  return absl::InvalidArgumentError(absl::StrCat(origin, ": invalid value \"", value,
                                                 "\" for field ", field, " (allowed: ", allowed,
                                                 ")"));
}

absl::Status Validate(const v1::Settings& settings, absl::string_view origin) {
  if (!settings.permission_preset().empty() && !IsPresetName(settings.permission_preset())) {
    return Invalid(origin, "permissionPreset", settings.permission_preset(),
                   "read-only, workspace-write, danger-full-access");
  }
  if (!settings.mode().empty() && !IsModeName(settings.mode())) {
    return Invalid(origin, "mode", settings.mode(), "default, accept-edits, on-request, never");
  }
  if (!settings.outside_workspace().empty() && settings.outside_workspace() != "deny" &&
      settings.outside_workspace() != "ask") {
    return Invalid(origin, "outsideWorkspace", settings.outside_workspace(), "deny, ask");
  }
  if (!settings.read_scope().empty() && settings.read_scope() != "workspace" &&
      settings.read_scope() != "any") {
    return Invalid(origin, "readScope", settings.read_scope(), "workspace, any");
  }
  const std::string& approver = settings.approver();
  if (!approver.empty() && approver != "tty" && approver != "none" &&
      !(absl::StartsWith(approver, "socket:") && approver.size() > 7) &&
      !(absl::StartsWith(approver, "command:") && approver.size() > 8)) {
    return Invalid(origin, "approver", approver, "tty, none, socket:PATH, command:PROG");
  }
  for (const std::string& tool : settings.edit_tools()) {
    if (tool.empty()) return Invalid(origin, "editTools", tool, "nonempty tool names");
  }
  for (const std::string& path : settings.protect()) {
    if (path.empty() || path.find('\0') != std::string::npos) {
      return Invalid(origin, "protect", path, "nonempty paths");
    }
  }
  return absl::OkStatus();
}

}  // namespace

bool IsPresetName(absl::string_view name) {
  return name == "read-only" || name == "workspace-write" || name == "danger-full-access";
}

bool IsModeName(absl::string_view name) {
  return name == "default" || name == "accept-edits" || name == "on-request" || name == "never";
}

absl::StatusOr<v1::Settings> ParseSettings(absl::string_view json, absl::string_view origin) {
  v1::Settings settings;
  AIRLOCK_RETURN_IF_ERROR(ParseStrictJson(json, &settings, origin));
  AIRLOCK_RETURN_IF_ERROR(Validate(settings, origin));
  return settings;
}

absl::StatusOr<v1::Settings> LoadSettings(const std::string& path) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) {
    if (errno == ENOENT) return v1::Settings();
    return LastErrnoStatus("open settings", path);
  }
  AIRLOCK_ASSIGN_OR_RETURN(std::string json, ReadToEnd(fd.get(), kMaxSettingsBytes, path));
  return ParseSettings(json, path);
}

}  // namespace airlock::broker
