#include "broker/policy/policy.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "broker/wire_error.h"

namespace airlock::broker {
namespace {

constexpr size_t kMaxToolName = 128;
constexpr size_t kMaxPath = 4096;

// A canonical path as the caller promised: absolute, no NUL, no empty, "." or ".." component.
absl::Status CheckCanonical(absl::string_view what, absl::string_view path) {
  if (path.empty() || path.front() != '/') {
    return absl::InvalidArgumentError(absl::StrCat(what, " '", path, "' is not an absolute path"));
  }
  if (path.size() > kMaxPath || path.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is too long or holds a NUL byte"));
  }
  if (path == "/") return absl::OkStatus();
  for (absl::string_view part : absl::StrSplit(path.substr(1), '/')) {
    if (part.empty() || part == "." || part == "..") {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " '", path, "' is not canonical (empty, '.' or '..' component)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

bool Policy::IsEditTool(absl::string_view tool) const {
  return std::find(edit_tools_.begin(), edit_tools_.end(), tool) != edit_tools_.end();
}

std::string Policy::Describe() const {
  return absl::StrCat("preset ", PresetName(preset_), ", mode ", ModeName(mode_), ", epoch ",
                      epoch_);
}

v1::Mode DefaultModeFor(v1::Preset preset) {
  return preset == v1::PRESET_DANGER_FULL_ACCESS ? v1::MODE_NEVER : v1::MODE_ON_REQUEST;
}

absl::StatusOr<v1::Preset> ParsePresetName(absl::string_view name) {
  if (name == "read-only") return v1::PRESET_READ_ONLY;
  if (name == "workspace-write") return v1::PRESET_WORKSPACE_WRITE;
  if (name == "danger-full-access") return v1::PRESET_DANGER_FULL_ACCESS;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown preset '", name, "' (read-only, workspace-write or danger-full-access)"));
}

absl::StatusOr<v1::Mode> ParseModeName(absl::string_view name) {
  if (name == "default") return v1::MODE_DEFAULT;
  if (name == "accept-edits") return v1::MODE_ACCEPT_EDITS;
  if (name == "on-request") return v1::MODE_ON_REQUEST;
  if (name == "never") return v1::MODE_NEVER;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown mode '", name, "' (default, accept-edits, on-request or never)"));
}

PolicyBuilder::PolicyBuilder(const Policy& previous) : policy_(previous) {
  policy_.epoch_ = previous.epoch_ + 1;
}

void PolicyBuilder::SetError(absl::Status status) {
  if (status_.ok()) status_ = std::move(status);
}

PolicyBuilder& PolicyBuilder::SetPreset(v1::Preset preset) {
  if (failed()) return *this;
  if (preset != v1::PRESET_READ_ONLY && preset != v1::PRESET_WORKSPACE_WRITE &&
      preset != v1::PRESET_DANGER_FULL_ACCESS) {
    SetError(absl::InvalidArgumentError(
        absl::StrCat("invalid preset value ", static_cast<int>(preset))));
    return *this;
  }
  policy_.preset_ = preset;
  return *this;
}

PolicyBuilder& PolicyBuilder::SetPresetName(absl::string_view name) {
  if (failed() || name.empty()) return *this;
  absl::StatusOr<v1::Preset> preset = ParsePresetName(name);
  if (!preset.ok()) {
    SetError(preset.status());
    return *this;
  }
  return SetPreset(*preset);
}

PolicyBuilder& PolicyBuilder::SetMode(v1::Mode mode) {
  if (failed()) return *this;
  if (mode != v1::MODE_DEFAULT && mode != v1::MODE_ACCEPT_EDITS && mode != v1::MODE_ON_REQUEST &&
      mode != v1::MODE_NEVER) {
    SetError(absl::InvalidArgumentError(
        absl::StrCat("invalid mode value ", static_cast<int>(mode))));
    return *this;
  }
  policy_.mode_ = mode;
  policy_.mode_explicit_ = true;
  return *this;
}

PolicyBuilder& PolicyBuilder::SetModeName(absl::string_view name) {
  if (failed()) return *this;
  if (name.empty()) {
    policy_.mode_explicit_ = false;
    return *this;
  }
  absl::StatusOr<v1::Mode> mode = ParseModeName(name);
  if (!mode.ok()) {
    SetError(mode.status());
    return *this;
  }
  return SetMode(*mode);
}

PolicyBuilder& PolicyBuilder::SetEditTools(absl::string_view comma_separated) {
  if (failed() || comma_separated.empty()) return *this;
  std::vector<std::string> tools;
  {
    for (absl::string_view raw : absl::StrSplit(comma_separated, ',')) {
      absl::string_view tool = absl::StripAsciiWhitespace(raw);
      if (tool.empty() || tool.size() > kMaxToolName) {
        SetError(absl::InvalidArgumentError(
            absl::StrCat("--edit-tools '", comma_separated, "' holds an empty or over-long name")));
        return *this;
      }
      for (char c : tool) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
        if (!ok) {
          SetError(absl::InvalidArgumentError(absl::StrCat(
              "--edit-tools name '", tool, "' may hold only letters, digits, '_', '-' and '.'")));
          return *this;
        }
      }
      tools.emplace_back(tool);
    }
  }
  policy_.edit_tools_ = std::move(tools);
  return *this;
}

PolicyBuilder& PolicyBuilder::SetOutsideWorkspace(OutsideWorkspace rule) {
  if (!failed()) policy_.outside_workspace_ = rule;
  return *this;
}

PolicyBuilder& PolicyBuilder::SetOutsideWorkspaceName(absl::string_view name) {
  if (failed() || name.empty()) return *this;
  if (name == "deny") return SetOutsideWorkspace(OutsideWorkspace::kDeny);
  if (name == "ask") return SetOutsideWorkspace(OutsideWorkspace::kAsk);
  SetError(absl::InvalidArgumentError(
      absl::StrCat("unknown --outside-workspace value '", name, "' (deny or ask)")));
  return *this;
}

PolicyBuilder& PolicyBuilder::AddRoot(absl::string_view canonical_dir) {
  if (failed()) return *this;
  absl::Status status = CheckCanonical("root", canonical_dir);
  if (!status.ok()) {
    SetError(std::move(status));
    return *this;
  }
  policy_.roots_.emplace_back(canonical_dir);
  return *this;
}

PolicyBuilder& PolicyBuilder::AddProtectedPath(absl::string_view path) {
  if (failed()) return *this;
  absl::Status status = CheckCanonical("protected path", path);
  if (!status.ok()) {
    SetError(std::move(status));
    return *this;
  }
  policy_.protected_paths_.emplace_back(path);
  return *this;
}

PolicyBuilder& PolicyBuilder::SetReadScope(ReadScope scope) {
  if (!failed()) policy_.read_scope_ = scope;
  return *this;
}

PolicyBuilder& PolicyBuilder::SetReadScopeName(absl::string_view name) {
  if (failed() || name.empty()) return *this;
  if (name == "any") return SetReadScope(ReadScope::kAny);
  if (name == "workspace") return SetReadScope(ReadScope::kWorkspace);
  SetError(absl::InvalidArgumentError(
      absl::StrCat("unknown --read-scope value '", name, "' (workspace or any)")));
  return *this;
}

PolicyBuilder& PolicyBuilder::AllowUnixSockets(bool allow) {
  if (!failed()) policy_.allow_unix_sockets_ = allow;
  return *this;
}

PolicyBuilder& PolicyBuilder::ApplyOptions(const PolicyOptions& options) {
  SetPresetName(options.preset);
  if (!options.mode.empty()) SetModeName(options.mode);
  SetEditTools(options.edit_tools);
  SetOutsideWorkspaceName(options.outside_workspace);
  SetReadScopeName(options.read_scope);
  if (options.allow_unix_sockets) AllowUnixSockets(true);
  return *this;
}

absl::StatusOr<Policy> PolicyBuilder::Build() const {
  if (!status_.ok()) return status_;
  if (policy_.roots_.empty()) {
    return absl::InvalidArgumentError("a policy needs at least one root (the workspace)");
  }
  Policy policy = policy_;
  if (!policy.mode_explicit_) policy.mode_ = DefaultModeFor(policy.preset_);
  return policy;
}

}  // namespace airlock::broker
