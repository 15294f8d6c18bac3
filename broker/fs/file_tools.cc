// The file tools (SPEC §5). Every request string is untrusted: it is validated and resolved to
// a canonical target, classified against the fences, and then acted on only through directory
// descriptors opened without following links (beneath.h), so that what is checked is what is
// touched. Mutations are serialized and are atomic replacements (atomic_replace.h).
#include "broker/fs/file_tools.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <mutex>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "broker/fs/atomic_replace.h"
#include "broker/fs/digest.h"
#include "broker/fs/fences.h"
#include "broker/fs/fs_errors.h"
#include "broker/fs/path_resolver.h"
#include "broker/fs/regular_file.h"
#include "broker/fs/temp_sweep.h"
#include "broker/fs/text_edit.h"
#include "broker/fs/workspace_roots.h"
#include "broker/wire_error.h"
#include "platform/base/errno_status.h"
#include "platform/base/fd_io.h"
#include "platform/base/scoped_fd.h"
#include "platform/base/status_macros.h"

namespace airlock::broker {
namespace {

// Mode of directories the broker creates for a write: like mkdir(1), 0755 less the umask.
constexpr mode_t kNewDirectoryMode = 0755;

absl::Status SecretRefusal(absl::string_view tool, const std::string& canonical,
                           const Classification& c) {
  return Refusal(v1::PROTECTED_PATH, tool, canonical, "the broker's own storage", c.rule);
}

class FileToolsImpl final : public FileTools {
 public:
  FileToolsImpl(FileToolsOptions options, WorkspaceRoots roots, Fences fences)
      : options_(std::move(options)), roots_(std::move(roots)), fences_(std::move(fences)) {}

  absl::StatusOr<v1::ReadResult> Read(const v1::ReadRequest& request) override {
    AIRLOCK_ASSIGN_OR_RETURN(Target target, ResolveForReading("read", request.path()));
    if (target.resolved.trailing_slash || target.resolved.components.empty()) {
      return WireError(v1::INVALID_ARGUMENT,
                       absl::StrCat("read ", target.canonical(), " refused: it names a directory"));
    }
    const size_t count = target.resolved.components.size();
    AIRLOCK_ASSIGN_OR_RETURN(ScopedFd dir, OpenDirectory(target, count - 1, O_PATH, "read", false));
    AIRLOCK_ASSIGN_OR_RETURN(
        OpenedFile file,
        OpenRegular(dir.get(), target.resolved.components.back(), "read", target.canonical(),
                    false));
    const uint64_t size = static_cast<uint64_t>(file.st.st_size);
    const uint64_t offset = std::min<uint64_t>(request.offset(), size);
    if (request.limit() == 0 && size - offset > options_.max_file_bytes) {
      return TooLarge("read", target.canonical(), size - offset, options_.max_file_bytes);
    }
    uint64_t want = std::min<uint64_t>(size - offset, options_.max_file_bytes);
    if (request.limit() != 0) want = std::min<uint64_t>(want, request.limit());
    std::string content(want, '\0');
    size_t got = 0;
    while (got < want) {
      const ssize_t n = ::pread(file.fd.get(), content.data() + got, want - got,
                                static_cast<off_t>(offset + got));
      if (n < 0) {
        if (errno == EINTR) continue;
        return LastErrnoStatus("read", target.canonical());
      }
      if (n == 0) break;  // the file shrank meanwhile
      got += static_cast<size_t>(n);
    }
    content.resize(got);
    v1::ReadResult result;
    result.set_canonical_path(target.canonical());
    result.set_file_size(size);
    result.set_eof(offset + got >= size);
    result.set_content(std::move(content));
    return result;
  }

  absl::StatusOr<v1::ListResult> List(const v1::ListRequest& request) override {
    AIRLOCK_ASSIGN_OR_RETURN(Target target, ResolveForReading("list", request.path()));
    AIRLOCK_ASSIGN_OR_RETURN(
        ScopedFd dir, OpenDirectory(target, target.resolved.components.size(), O_RDONLY, "list",
                                    false));
    DIR* stream = ::fdopendir(dir.get());
    if (stream == nullptr) return LastErrnoStatus("opendir", target.canonical());
    const int dir_fd = dir.release();  // owned by `stream` now
    v1::ListResult result;
    result.set_canonical_path(target.canonical());
    std::vector<std::string> names;
    errno = 0;
    while (dirent* entry = ::readdir(stream)) {
      absl::string_view name(entry->d_name);
      if (name == "." || name == "..") continue;
      if (names.size() >= options_.max_list_entries) {
        result.set_truncated(true);
        break;
      }
      names.emplace_back(name);
    }
    std::sort(names.begin(), names.end());
    for (std::string& name : names) {
      v1::ListEntry* out = result.add_entries();
      struct stat st;
      if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        out->set_type(S_ISREG(st.st_mode)   ? v1::ENTRY_TYPE_FILE
                      : S_ISDIR(st.st_mode) ? v1::ENTRY_TYPE_DIRECTORY
                      : S_ISLNK(st.st_mode) ? v1::ENTRY_TYPE_SYMLINK
                                            : v1::ENTRY_TYPE_OTHER);
        if (S_ISREG(st.st_mode)) out->set_size(static_cast<uint64_t>(st.st_size));
      } else {
        out->set_type(v1::ENTRY_TYPE_OTHER);  // vanished meanwhile
      }
      out->set_name(std::move(name));
    }
    ::closedir(stream);
    return result;
  }

  absl::StatusOr<v1::WriteResult> Write(const v1::WriteRequest& request) override {
    // Until the policy decides, workspace-write's fences: inside the roots and not protected.
    AIRLOCK_RETURN_IF_ERROR(CheckSandboxPermissions("write", request.sandbox_permissions()));
    // One lock over plan and commit: concurrent one-call writes are serialized whole instead
    // of making each other stale.
    std::lock_guard<std::mutex> lock(mutation_mutex_);
    const std::string& content = request.content();
    AIRLOCK_ASSIGN_OR_RETURN(MutationPlan plan,
                             PlanMutation("write", request.path(), false, WriteContent(content),
                                          &kWorkspaceWriteFences));
    return CommitLocked(plan, kWorkspaceWriteFences);
  }

  absl::StatusOr<v1::EditResult> Edit(const v1::EditRequest& request) override {
    AIRLOCK_RETURN_IF_ERROR(CheckSandboxPermissions("edit", request.sandbox_permissions()));
    std::lock_guard<std::mutex> lock(mutation_mutex_);
    AIRLOCK_ASSIGN_OR_RETURN(MutationPlan plan,
                             PlanMutation("edit", request.path(), true, EditContent(request),
                                          &kWorkspaceWriteFences));
    AIRLOCK_ASSIGN_OR_RETURN(v1::WriteResult written, CommitLocked(plan, kWorkspaceWriteFences));
    v1::EditResult result;
    result.set_canonical_path(written.canonical_path());
    result.set_replacements(plan.replacements);
    result.set_content_sha256(written.content_sha256());
    return result;
  }

  absl::StatusOr<MutationPlan> PlanWrite(const v1::WriteRequest& request) override {
    AIRLOCK_RETURN_IF_ERROR(CheckSandboxPermissions("write", request.sandbox_permissions()));
    return PlanMutation("write", request.path(), /*needs_existing=*/false,
                        WriteContent(request.content()), /*fences=*/nullptr);
  }

  absl::StatusOr<MutationPlan> PlanEdit(const v1::EditRequest& request) override {
    AIRLOCK_RETURN_IF_ERROR(CheckSandboxPermissions("edit", request.sandbox_permissions()));
    return PlanMutation("edit", request.path(), /*needs_existing=*/true, EditContent(request),
                        /*fences=*/nullptr);
  }

  absl::StatusOr<v1::WriteResult> Commit(const MutationPlan& plan,
                                         CommitPermission permission) override {
    std::lock_guard<std::mutex> lock(mutation_mutex_);
    return CommitLocked(plan, permission);
  }

  absl::StatusOr<ClassifiedTarget> Classify(const std::string& requested_path) override {
    AIRLOCK_RETURN_IF_ERROR(roots_.Verify());
    AIRLOCK_ASSIGN_OR_RETURN(ResolvedPath resolved, Resolve(requested_path));
    Target target{std::move(resolved), -1};
    target.root = roots_.RootOf(target.canonical());
    Classification c = ClassifyTarget(target);
    ClassifiedTarget result;
    result.canonical_path = target.canonical();
    result.target_class = c.target_class;
    result.rule = std::move(c.rule);
    result.inside_roots = c.inside_roots;
    result.exists = target.resolved.exists();
    return result;
  }

 private:
  // Commit with mutation_mutex_ held.
  absl::StatusOr<v1::WriteResult> CommitLocked(const MutationPlan& plan,
                                               CommitPermission permission) {
    const std::string& tool = plan.tool;
    AIRLOCK_RETURN_IF_ERROR(roots_.Verify());
    AIRLOCK_ASSIGN_OR_RETURN(ResolvedPath resolved, Resolve(plan.canonical_path));
    if (resolved.canonical != plan.canonical_path) {
      return Stale(tool, plan.canonical_path,
                   absl::StrCat("the path now resolves to ", resolved.canonical));
    }
    const int root = roots_.RootOf(resolved.canonical);
    const Classification c =
        fences_.Classify(resolved.canonical, root < 0 ? "" : roots_.paths()[root]);
    if (c.target_class != plan.target_class) {
      return Stale(tool, plan.canonical_path, "the target's classification changed");
    }
    AIRLOCK_RETURN_IF_ERROR(CheckFences(tool, resolved.canonical, c, permission));
    if (plan.new_content.size() > options_.max_file_bytes) {
      return TooLarge(tool, plan.canonical_path, plan.new_content.size(),
                      options_.max_file_bytes);
    }
    if (!ConstantTimeEquals(Sha256Hex(plan.new_content), plan.new_content_sha256)) {
      return Stale(tool, plan.canonical_path, "the planned content does not match its digest");
    }
    Target target{std::move(resolved), root};
    const std::vector<std::string>& components = target.resolved.components;
    if (components.empty()) return NotRegular(tool, "/", S_IFDIR);
    const size_t existing = target.resolved.existing_components;
    if (MissingDirectories(target.resolved) != plan.directories_to_create) {
      return Stale(tool, plan.canonical_path, "the directories on the path changed");
    }

    // The nearest existing ancestor must be the directory that was planned against.
    const size_t ancestor_count = target.resolved.exists() ? components.size() - 1 : existing;
    AIRLOCK_ASSIGN_OR_RETURN(ScopedFd dir,
                             OpenDirectory(target, ancestor_count, O_RDONLY, tool, true));
    struct stat dir_st;
    if (::fstat(dir.get(), &dir_st) != 0) return LastErrnoStatus("fstat", plan.canonical_path);
    if (!plan.parent.exists || static_cast<uint64_t>(dir_st.st_dev) != plan.parent.device ||
        static_cast<uint64_t>(dir_st.st_ino) != plan.parent.inode) {
      return Stale(tool, plan.canonical_path, "the parent directory changed");
    }

    ExpectedTarget expected;
    ReplaceOptions replace;
    replace.before_rename = permission.before_rename;
    std::vector<CreatedDirectory> created;
    if (target.resolved.exists()) {
      AIRLOCK_ASSIGN_OR_RETURN(OpenedFile file,
                               OpenRegular(dir.get(), components.back(), tool,
                                           plan.canonical_path, true));
      if (!plan.target.exists || static_cast<uint64_t>(file.st.st_dev) != plan.target.device ||
          static_cast<uint64_t>(file.st.st_ino) != plan.target.inode) {
        return Stale(tool, plan.canonical_path, "the target was replaced by another file");
      }
      auto current = ReadWhole(file, options_.max_file_bytes, tool, plan.canonical_path);
      if (!current.ok()) return current.status();
      if (!ConstantTimeEquals(Sha256Hex(*current), plan.target.content_sha256)) {
        return Stale(tool, plan.canonical_path, "the target's content changed");
      }
      expected.exists = true;
      expected.device = static_cast<uint64_t>(file.st.st_dev);
      expected.inode = static_cast<uint64_t>(file.st.st_ino);
      replace.mode = file.st.st_mode & 0777;  // never setuid, setgid or sticky
    } else {
      if (plan.target.exists) return Stale(tool, plan.canonical_path, "the target disappeared");
      // Creating the parents changes the disk: the barrier comes first.
      if (existing + 1 < components.size() && permission.before_rename) {
        AIRLOCK_RETURN_IF_ERROR(permission.before_rename());
      }
      // Missing parents, each created and entered without following links.
      for (size_t i = existing; i + 1 < components.size(); ++i) {
        const std::string& name = components[i];
        if (::mkdirat(dir.get(), name.c_str(), kNewDirectoryMode) != 0) {
          const absl::Status failed =
              errno == EEXIST ? Stale(tool, plan.canonical_path, "a directory appeared")
                              : LastErrnoStatus("mkdir", plan.canonical_path);
          RemoveCreated(created);
          return failed;
        }
        ScopedFd child(::openat(dir.get(), name.c_str(),
                                O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        created.push_back({std::move(dir), name});
        if (!child) {
          const absl::Status failed = WalkFailure(LastErrnoStatus("open", plan.canonical_path),
                                                  tool, plan.canonical_path, true);
          RemoveCreated(created);
          return failed;
        }
        dir = std::move(child);
      }
    }
    if (absl::Status replaced = ReplaceAtomically(dir.get(), components.back(),
                                                  plan.new_content, expected, replace,
                                                  plan.canonical_path);
        !replaced.ok()) {
      RemoveCreated(created);
      return replaced;
    }
    // New directory entries are durable once their parents are (the innermost parent was
    // fsynced by the replacement).
    for (const CreatedDirectory& entry : created) {
      if (::fsync(entry.parent.get()) != 0) {
        return LastErrnoStatus("fsync", plan.canonical_path);
      }
    }
    v1::WriteResult result;
    result.set_canonical_path(plan.canonical_path);
    result.set_bytes_written(plan.new_content.size());
    result.set_content_sha256(plan.new_content_sha256);
    result.set_created(!expected.exists);
    return result;
  }

  struct CreatedDirectory {
    ScopedFd parent;  // O_RDONLY directory
    std::string name;
  };

  // Undoes the directories a failed write created, innermost first (only while empty).
  static void RemoveCreated(std::vector<CreatedDirectory>& created) {
    for (auto it = created.rbegin(); it != created.rend(); ++it) {
      ::unlinkat(it->parent.get(), it->name.c_str(), AT_REMOVEDIR);
    }
    created.clear();
  }

  struct Target {
    ResolvedPath resolved;
    int root = -1;  // index of the containing root, -1 outside
    const std::string& canonical() const { return resolved.canonical; }
  };

  // Until the policy decides (Write/Edit), workspace-write's fences: inside the roots and not
  // protected, nothing else.
  inline static const CommitPermission kWorkspaceWriteFences = {};

  using Compute = std::function<absl::Status(const std::string&, MutationPlan&)>;

  static absl::Status CheckSandboxPermissions(absl::string_view tool,
                                              v1::SandboxPermissions permissions) {
    if (permissions == v1::SANDBOX_PERMISSIONS_UNSPECIFIED) return absl::OkStatus();
    return WireError(v1::INVALID_ARGUMENT,
                     absl::StrCat(tool, " refused: file tools take no sandbox_permissions"));
  }

  static Compute WriteContent(const std::string& content) {
    return [&content](const std::string&, MutationPlan& plan) -> absl::Status {
      plan.new_content = content;
      return absl::OkStatus();
    };
  }

  static Compute EditContent(const v1::EditRequest& request) {
    return [&request](const std::string& canonical, MutationPlan& plan) -> absl::Status {
      AIRLOCK_ASSIGN_OR_RETURN(EditOutcome outcome,
                               ApplyExactEdit(plan.old_content, request.old_string(),
                                              request.new_string(), request.replace_all(),
                                              canonical));
      plan.new_content = std::move(outcome.content);
      plan.replacements = outcome.replacements;
      return absl::OkStatus();
    };
  }

  absl::StatusOr<ResolvedPath> Resolve(absl::string_view requested_path) {
    return ResolvePath(requested_path, roots_.workspace(), roots_.paths());
  }

  Classification ClassifyTarget(const Target& target) const {
    return fences_.Classify(target.canonical(),
                            target.root < 0 ? "" : roots_.paths()[target.root]);
  }

  // Resolves for read or list: refuses the broker's storage and, when reads are confined,
  // everything outside the roots. Protected storage is readable.
  absl::StatusOr<Target> ResolveForReading(absl::string_view tool,
                                           absl::string_view requested_path) {
    AIRLOCK_RETURN_IF_ERROR(roots_.Verify());
    AIRLOCK_ASSIGN_OR_RETURN(ResolvedPath resolved, Resolve(requested_path));
    Target target{std::move(resolved), -1};
    target.root = roots_.RootOf(target.canonical());
    const Classification c = ClassifyTarget(target);
    if (c.target_class == TargetClass::kBrokerSecret) {
      return SecretRefusal(tool, target.canonical(), c);
    }
    if (!c.inside_roots && options_.reads_confined_to_roots) {
      return Refusal(v1::OUTSIDE_SANDBOX, tool, target.canonical(), "outside every root",
                     "read-scope:workspace");
    }
    if (!target.resolved.exists()) {
      return WireError(v1::NOT_FOUND,
                       absl::StrCat(tool, " ", target.canonical(), ": no such file or directory"));
    }
    return target;
  }

  // Opens the directory made of the first `count` canonical components, without following
  // links, beneath the innermost root containing it (or "/").
  absl::StatusOr<ScopedFd> OpenDirectory(const Target& target, size_t count, int flags,
                                         absl::string_view tool, bool mutation) {
    WorkspaceRoots::Anchor anchor = roots_.AnchorFor(target.resolved.components, count);
    auto fd = OpenBeneath(anchor.dir_fd, anchor.components, flags | O_DIRECTORY,
                          options_.walk_mode, target.canonical());
    if (!fd.ok()) return WalkFailure(fd.status(), tool, target.canonical(), mutation);
    return fd;
  }

  static std::vector<std::string> MissingDirectories(const ResolvedPath& resolved) {
    std::vector<std::string> out;
    std::string path;
    for (size_t i = 0; i + 1 < resolved.components.size(); ++i) {
      absl::StrAppend(&path, "/", resolved.components[i]);
      if (i >= resolved.existing_components) out.push_back(path);
    }
    return out;
  }

  absl::Status CheckFences(absl::string_view tool, const std::string& canonical,
                           const Classification& c, CommitPermission permission) const {
    switch (c.target_class) {
      case TargetClass::kBrokerSecret:
        return SecretRefusal(tool, canonical, c);
      case TargetClass::kProtected:
        if (!permission.allow_protected) {
          return Refusal(v1::PROTECTED_PATH, tool, canonical, "protected storage", c.rule);
        }
        break;
      case TargetClass::kOutsideRoots:
      case TargetClass::kInsideRoots:
        break;
    }
    if (!c.inside_roots && !permission.allow_outside) {
      return Refusal(v1::OUTSIDE_SANDBOX, tool, canonical, "outside every root", "outside-roots");
    }
    return absl::OkStatus();
  }

  // Resolves, classifies and computes a mutation. With `fences`, the hard fences are checked
  // before anything is read or computed (the one-call path); without, the policy checks them.
  absl::StatusOr<MutationPlan> PlanMutation(const std::string& tool,
                                            absl::string_view requested_path,
                                            bool needs_existing, const Compute& compute,
                                            const CommitPermission* fences) {
    AIRLOCK_RETURN_IF_ERROR(roots_.Verify());
    AIRLOCK_ASSIGN_OR_RETURN(ResolvedPath resolved, Resolve(requested_path));
    Target target{std::move(resolved), -1};
    target.root = roots_.RootOf(target.canonical());
    const std::string& canonical = target.canonical();
    const Classification c = ClassifyTarget(target);
    // The broker's storage is never planned: not even its content may reach a diff.
    if (c.target_class == TargetClass::kBrokerSecret) return SecretRefusal(tool, canonical, c);
    if (fences != nullptr) AIRLOCK_RETURN_IF_ERROR(CheckFences(tool, canonical, c, *fences));
    // An edit reads the target, and its errors ("occurs 2 times") would tell the worker about
    // a file it may not read.
    if (needs_existing && !c.inside_roots && options_.reads_confined_to_roots) {
      return Refusal(v1::OUTSIDE_SANDBOX, tool, canonical,
                     "outside every root (reads are confined to the roots)",
                     "read-scope:workspace");
    }
    const std::vector<std::string>& components = target.resolved.components;
    if (target.resolved.trailing_slash || components.empty()) {
      return WireError(v1::INVALID_ARGUMENT,
                       absl::StrCat(tool, " ", canonical, " refused: it names a directory"));
    }
    MutationPlan plan;
    plan.tool = tool;
    plan.canonical_path = canonical;
    plan.target_class = c.target_class;
    plan.rule = c.rule;
    plan.directories_to_create = MissingDirectories(target.resolved);

    const bool exists = target.resolved.exists();
    if (!exists && needs_existing) {
      return WireError(v1::NOT_FOUND, absl::StrCat(tool, " ", canonical, ": no such file"));
    }
    const size_t ancestor_count =
        exists ? components.size() - 1 : target.resolved.existing_components;
    AIRLOCK_ASSIGN_OR_RETURN(ScopedFd dir, OpenDirectory(target, ancestor_count, O_PATH, tool,
                                                         /*mutation=*/false));
    struct stat dir_st;
    if (::fstat(dir.get(), &dir_st) != 0) return LastErrnoStatus("fstat", canonical);
    plan.parent.exists = true;
    plan.parent.device = dir_st.st_dev;
    plan.parent.inode = dir_st.st_ino;
    if (exists) {
      AIRLOCK_ASSIGN_OR_RETURN(OpenedFile file,
                               OpenRegular(dir.get(), components.back(), tool, canonical, false));
      AIRLOCK_ASSIGN_OR_RETURN(plan.old_content,
                               ReadWhole(file, options_.max_file_bytes, tool, canonical));
      plan.target.exists = true;
      plan.target.device = file.st.st_dev;
      plan.target.inode = file.st.st_ino;
      plan.target.content_sha256 = Sha256Hex(plan.old_content);
    }
    AIRLOCK_RETURN_IF_ERROR(compute(canonical, plan));
    if (plan.new_content.size() > options_.max_file_bytes) {
      return TooLarge(tool, canonical, plan.new_content.size(), options_.max_file_bytes);
    }
    plan.new_content_sha256 = Sha256Hex(plan.new_content);
    return plan;
  }

  const FileToolsOptions options_;
  const WorkspaceRoots roots_;
  const Fences fences_;
  std::mutex mutation_mutex_;
};

}  // namespace

absl::StatusOr<ClassifiedTarget> FileTools::Classify(const std::string& requested_path) {
  return WireError(v1::INTERNAL, absl::StrCat("classify ", absl::CHexEscape(requested_path),
                                              ": not supported by this implementation"));
}

absl::StatusOr<std::unique_ptr<FileTools>> FileTools::Create(FileToolsOptions options) {
  AIRLOCK_ASSIGN_OR_RETURN(WorkspaceRoots roots, WorkspaceRoots::Open(options.roots));
  AIRLOCK_ASSIGN_OR_RETURN(
      Fences fences,
      Fences::Create(options.protected_paths, options.broker_secret_paths, roots.workspace()));
  if (options.sweep_temporary_files) {
    for (size_t i = 0; i < roots.paths().size(); ++i) {
      AIRLOCK_ASSIGN_OR_RETURN(SweepReport report, SweepTemporaryFiles(roots.fd(i)));
      (void)report;
    }
  }
  return std::make_unique<FileToolsImpl>(std::move(options), std::move(roots), std::move(fences));
}

}  // namespace airlock::broker
