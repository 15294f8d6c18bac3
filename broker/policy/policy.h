// The broker's policy (SPEC §4): which preset grants authority, which mode decides when to ask,
// and the fences around the roots. A Policy is immutable; only a PolicyBuilder makes one, and a
// change (an operator's preset switch) makes a new Policy with a higher epoch.
#ifndef BROKER_POLICY_POLICY_H_
#define BROKER_POLICY_POLICY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "airlock/v1/wire.pb.h"
#include "broker/policy_options.h"

namespace airlock::broker {

enum class OutsideWorkspace { kDeny, kAsk };
enum class ReadScope { kAny, kWorkspace };

class PolicyBuilder;

class Policy {
 public:
  Policy(const Policy&) = default;
  Policy& operator=(const Policy&) = default;
  Policy(Policy&&) = default;
  Policy& operator=(Policy&&) = default;

  v1::Preset preset() const { return preset_; }
  v1::Mode mode() const { return mode_; }
  // True when --mode was given; a preset change then keeps the mode instead of taking the
  // new preset's default.
  bool mode_explicit() const { return mode_explicit_; }
  const std::vector<std::string>& edit_tools() const { return edit_tools_; }
  bool IsEditTool(absl::string_view tool) const;
  OutsideWorkspace outside_workspace() const { return outside_workspace_; }
  // Canonical absolute directories; the first is the workspace.
  const std::vector<std::string>& roots() const { return roots_; }
  const std::vector<std::string>& protected_paths() const { return protected_paths_; }
  ReadScope read_scope() const { return read_scope_; }
  bool allow_unix_sockets() const { return allow_unix_sockets_; }
  // Increases with every change; approvals bind it.
  uint64_t epoch() const { return epoch_; }

  // "preset read-only, mode on-request" for messages.
  std::string Describe() const;

 private:
  friend class PolicyBuilder;
  Policy() = default;

  v1::Preset preset_ = v1::PRESET_READ_ONLY;
  v1::Mode mode_ = v1::MODE_ON_REQUEST;
  bool mode_explicit_ = false;
  std::vector<std::string> edit_tools_ = {"write", "edit"};
  OutsideWorkspace outside_workspace_ = OutsideWorkspace::kDeny;
  std::vector<std::string> roots_;
  std::vector<std::string> protected_paths_;
  ReadScope read_scope_ = ReadScope::kAny;
  bool allow_unix_sockets_ = false;
  uint64_t epoch_ = 1;
};

// The mode a preset implies when none is given: on-request for read-only and workspace-write,
// never for danger-full-access (the seed's approvalPolicyFor).
v1::Mode DefaultModeFor(v1::Preset preset);

[[nodiscard]] absl::StatusOr<v1::Preset> ParsePresetName(absl::string_view name);
[[nodiscard]] absl::StatusOr<v1::Mode> ParseModeName(absl::string_view name);

// Collects settings; the first invalid one is remembered and returned by Build(), later
// setters are then ignored (Sandbox2's PolicyBuilder).
class PolicyBuilder {
 public:
  // A fresh policy: read-only, the preset's default mode, edit tools write,edit, outside
  // deny, read scope any, epoch 1.
  PolicyBuilder() = default;
  // A change of `previous`: every setting copied, epoch previous.epoch() + 1.
  explicit PolicyBuilder(const Policy& previous);

  PolicyBuilder& SetPreset(v1::Preset preset);
  PolicyBuilder& SetPresetName(absl::string_view name);  // empty: keep the current preset
  PolicyBuilder& SetMode(v1::Mode mode);
  PolicyBuilder& SetModeName(absl::string_view name);  // empty: the preset's default
  // "write,edit": comma-separated tool names; empty entries are an error, an empty string
  // keeps the current list (the option was not given).
  PolicyBuilder& SetEditTools(absl::string_view comma_separated);
  PolicyBuilder& SetOutsideWorkspace(OutsideWorkspace rule);
  PolicyBuilder& SetOutsideWorkspaceName(absl::string_view name);  // deny | ask; empty: keep
  // Canonical absolute paths (the caller resolves them); the first root is the workspace.
  PolicyBuilder& AddRoot(absl::string_view canonical_dir);
  PolicyBuilder& AddProtectedPath(absl::string_view path);
  PolicyBuilder& SetReadScope(ReadScope scope);
  PolicyBuilder& SetReadScopeName(absl::string_view name);  // workspace | any; empty: keep
  PolicyBuilder& AllowUnixSockets(bool allow);

  // The command line's --preset, --mode, --edit-tools, --outside-workspace, --read-scope and
  // --allow-unix-sockets (empty strings: not given, keep). Roots and --protect paths are not
  // taken from here: the caller canonicalizes them and calls AddRoot / AddProtectedPath.
  PolicyBuilder& ApplyOptions(const PolicyOptions& options);

  // The policy, or the first error. At least one root is required.
  [[nodiscard]] absl::StatusOr<Policy> Build() const;

 private:
  void SetError(absl::Status status);
  bool failed() const { return !status_.ok(); }

  Policy policy_;
  absl::Status status_;
};

}  // namespace airlock::broker

#endif  // BROKER_POLICY_POLICY_H_
