// The broker's file tools (SPEC §5): read, list, write and edit on behalf of the worker.
// Every path the worker sends is untrusted; errors carry wire codes (broker/wire_error.h).
#ifndef BROKER_FS_FILE_TOOLS_H_
#define BROKER_FS_FILE_TOOLS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "airlock/v1/wire.pb.h"
#include "broker/fs/beneath.h"

namespace airlock::broker {

struct FileToolsOptions {
  // Canonical-or-not directories; the first is the workspace. Fixed at Create(): each root is
  // held open (O_PATH) with its (device, inode); if a root is later replaced by a link or
  // another directory, every call fails with SANDBOX_UNAVAILABLE.
  std::vector<std::string> roots;
  // Extra protected paths (--protect): writes refused unless the policy allows protected
  // writes (danger-full-access), reads allowed. A relative entry is taken against the first
  // root. Everything at or below an entry is protected; an entry that covers a whole root
  // protects the whole root.
  std::vector<std::string> protected_paths;
  // The broker's own storage: AIRLOCK_HOME, the session store, the audit log and its key, the
  // runtime directory. Never read, listed, planned or written by any tool under any preset —
  // danger-full-access included: the audit key is the broker's secret in every preset, and no
  // CommitPermission opens it.
  std::vector<std::string> broker_secret_paths;
  // Reads outside the roots are allowed unless this is set (--read-scope workspace).
  bool reads_confined_to_roots = false;
  uint64_t max_file_bytes = 16u << 20;
  uint32_t max_list_entries = 10000;
  // How descriptor walks are done: kAuto uses openat2 where the kernel has it. The component
  // walk is equally strict (tests exercise both).
  WalkMode walk_mode = WalkMode::kAuto;
  // Create() removes the temp files a crashed broker left in the roots (temp_sweep.h).
  bool sweep_temporary_files = true;
};

// What a file on disk is right now: enough to notice that it changed between the moment an
// approval was asked and the moment the broker acts.
struct FileIdentity {
  bool exists = false;
  uint64_t device = 0;
  uint64_t inode = 0;
  std::string content_sha256;  // hex; empty for directories and absent files
  bool operator==(const FileIdentity&) const = default;
};

// Where a canonical target stands relative to the fences. Computed by FileTools; the policy
// decides what each class means under the active preset.
enum class TargetClass {
  kInsideRoots,       // inside a root, not protected
  kOutsideRoots,      // outside every root (OUTSIDE_SANDBOX unless --outside-workspace ask)
  kProtected,         // overlaps protected storage (PROTECTED_PATH; not fenced under full access)
  kBrokerSecret,      // the broker's own state: audit key, AIRLOCK_HOME, runtime dir; never
                      // readable or writable by any tool under any restricted preset
};

// A write or edit fully resolved and computed, but not yet performed. Approvals bind to it;
// Commit re-resolves and re-checks every identity before acting.
struct MutationPlan {
  std::string tool;              // "write" or "edit"
  std::string canonical_path;    // the final target (links resolved, dangling ones too)
  TargetClass target_class = TargetClass::kInsideRoots;
  std::string rule;              // the rule that classified it, e.g. "protected:.git/hooks"
  FileIdentity target;           // current state of the target ("absent" when !exists)
  FileIdentity parent;           // nearest existing ancestor directory (no content digest)
  std::string old_content;       // for the approver's diff (empty when absent)
  std::string new_content;
  std::string new_content_sha256;
  uint32_t replacements = 0;     // edit only
  std::vector<std::string> directories_to_create;  // missing parents, outermost first
};

// Where an untrusted path string lands and how the fences see it, without touching it.
struct ClassifiedTarget {
  std::string canonical_path;
  TargetClass target_class = TargetClass::kInsideRoots;
  std::string rule;
  bool inside_roots = false;
  bool exists = false;
};

class FileTools {
 public:
  static absl::StatusOr<std::unique_ptr<FileTools>> Create(FileToolsOptions options);
  virtual ~FileTools() = default;

  virtual absl::StatusOr<v1::ReadResult> Read(const v1::ReadRequest& request) = 0;
  virtual absl::StatusOr<v1::ListResult> List(const v1::ListRequest& request) = 0;
  virtual absl::StatusOr<v1::WriteResult> Write(const v1::WriteRequest& request) = 0;
  virtual absl::StatusOr<v1::EditResult> Edit(const v1::EditRequest& request) = 0;

  // The two halves of Write/Edit, for the policy and approval path: Plan resolves, classifies
  // and computes; Commit performs the plan if nothing it bound has changed (APPROVAL_STALE
  // otherwise). `allow_outside` and `allow_protected` are the policy's word that this plan
  // may cross those fences (an approved outside write; danger-full-access).
  virtual absl::StatusOr<MutationPlan> PlanWrite(const v1::WriteRequest& request) = 0;
  virtual absl::StatusOr<MutationPlan> PlanEdit(const v1::EditRequest& request) = 0;
  struct CommitPermission {
    bool allow_outside = false;
    bool allow_protected = false;
    // What must hold before anything on disk changes (the journal's intent durable). Awaited
    // right before the rename — the temp file is written and synced meanwhile — and before
    // missing parent directories are created. A non-OK status refuses the commit with
    // nothing changed.
    std::function<absl::Status()> before_rename;
  };
  virtual absl::StatusOr<v1::WriteResult> Commit(const MutationPlan& plan,
                                                 CommitPermission permission) = 0;

  // Resolves and classifies a path as the file tools would (for the policy, a bash cwd, and
  // the tool gateway's path-like arguments). Errors as Read's: INVALID_ARGUMENT for a bad
  // path, SANDBOX_UNAVAILABLE when a root was replaced. The base version refuses (INTERNAL),
  // so test doubles need not implement it.
  virtual absl::StatusOr<ClassifiedTarget> Classify(const std::string& requested_path);
};

}  // namespace airlock::broker

#endif  // BROKER_FS_FILE_TOOLS_H_
