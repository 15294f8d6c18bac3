#include "broker/exec/protection_plan.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "broker/wire_error.h"
#include "platform/base/fd_io.h"
#include "platform/base/scoped_fd.h"
#include "profiles/protected_paths.h"

namespace airlock::broker {
namespace {

using linux_sandbox::CoveredPath;

// How a missing protected name is masked. An empty read-only directory blocks creating a
// file there just as well as a file would, and git ignores it: an empty placeholder *file*
// at `.bashrc`, `.envrc`, … would be picked up by `git add -A` inside the sandbox and
// committed. Files only where a reader needs one: `.git/config` and `.git/commondir` (git
// reads both, never tracks them), and `.gitconfig` in the sandbox's HOME, which git reads as
// its global configuration (a directory there makes every git command fail).
bool IsFileEntry(absl::string_view entry) {
  return entry == ".git/config" || entry == ".git/commondir";
}

// The shared list, split into components once.
struct ProtectedEntry {
  std::vector<std::string> parts;
  bool file = false;
  std::string content;  // CoveredPath::content of its mask
};

// What a missing `commondir` is masked with: git reads the file as a path relative to the git
// directory, so "." names the git directory itself — the same as no file (an empty file, or a
// directory, would make every git command fail, in the sandbox and on the host).
constexpr char kSameCommonDir[] = ".\n";
const std::vector<ProtectedEntry>& ProtectedEntries() {
  static const std::vector<ProtectedEntry>* const entries = [] {
    auto* split = new std::vector<ProtectedEntry>;
    for (const std::string& entry : profiles::ProtectedRelativePaths()) {
      split->push_back({absl::StrSplit(entry, '/'), IsFileEntry(entry),
                        entry == ".git/commondir" ? kSameCommonDir : ""});
    }
    return split;
  }();
  return *entries;
}

bool IsUnder(absl::string_view path, absl::string_view dir) {
  if (dir == "/") return true;
  return absl::StartsWith(path, dir) && path.size() > dir.size() && path[dir.size()] == '/';
}
bool IsAtOrUnder(absl::string_view path, absl::string_view dir) {
  return path == dir || IsUnder(path, dir);
}

std::string Parent(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == 0 ? std::string("/") : path.substr(0, slash);
}


class Planner {
 public:
  Planner(const ProtectionLimits& limits, std::string home)
      : limits_(limits), home_(std::move(home)) {}

  absl::Status ScanRoot(const std::string& root) {
    std::deque<std::pair<std::string, size_t>> queue = {{root, 0}};
    while (!queue.empty()) {
      auto [dir, depth] = std::move(queue.front());
      queue.pop_front();
      if (++directories_ > limits_.max_directories) return LimitError(root, "directories");
      std::vector<std::pair<std::string, unsigned char>> entries;
      if (!List(dir, &entries)) {
        // Gone since its parent was listed (a mask directory renamed aside and removed by
        // ReleaseMasks, say): nothing there to protect, and nothing to mount.
        if (errno == ENOENT) continue;
        // Unreadable: nothing below it can be checked, so it becomes read-only.
        CoverDirectory(root, dir);
        continue;
      }
      std::set<std::string> names;
      for (const auto& entry : entries) names.insert(entry.first);
      const bool repository_top = dir == root || names.count(".git") != 0;
      for (const ProtectedEntry& entry : ProtectedEntries()) {
        // Below a repository top only what exists needs protecting, and the listing just
        // said what exists: no lookup for the other names (a scan of a large tree is
        // mostly such directories).
        if (!repository_top && names.count(entry.parts.front()) == 0) continue;
        const bool file = entry.file || (entry.parts.front() == ".gitconfig" && dir == home_);
        Check(root, dir, entry.parts, repository_top, file, entry.content);
      }
      if (repository_top && names.count(".git") != 0) ProtectWorktreeConfig(root, dir + "/.git");
      // A git directory anywhere (a bare repository, a submodule's under .git/modules): what
      // git runs or reads its configuration from. A linked worktree's (HEAD and commondir)
      // takes hooks and config from its common directory, whose config decides whether the
      // worktree's own config.worktree is read: it is protected in any case (an empty one,
      // the mask of a missing one, reads as no settings).
      if (names.count("HEAD") && names.count("objects") && names.count("refs")) {
        Check(root, dir, {"hooks"}, true, false);
        Check(root, dir, {"config"}, true, true);
        Check(root, dir, {"commondir"}, true, true, kSameCommonDir);
        ProtectWorktreeConfig(root, dir);
      } else if (names.count("HEAD") && names.count("commondir")) {
        Check(root, dir, {"commondir"}, true, true);
        Check(root, dir, {"config.worktree"}, true, true);
      }
      for (const auto& [name, type] : entries) {
        if (type != DT_DIR) continue;
        const std::string child = absl::StrCat(dir == "/" ? "" : dir, "/", name);
        if (IsLeftAside(child)) {
          // Mask directories moved aside whose removal never ran (the broker was killed
          // first), or ones queued by this process: removed in the background if still empty
          // (rmdir). Nothing in them to protect or scan. One someone wrote into is an
          // ordinary directory of the root now and is scanned.
          RemoveAsideLater(child);
          continue;
        }
        const absl::string_view relative =
            absl::string_view(child).substr(root == "/" ? 1 : root.size() + 1);
        if (!profiles::MatchProtected(relative).empty()) continue;  // covered read-only
        if (depth + 1 > limits_.max_depth) return LimitError(root, "depth");
        queue.emplace_back(child, depth + 1);
      }
    }
    return absl::OkStatus();
  }

  void ProtectWhole(const std::string& root) { read_only_.insert(root); }

  void ProtectExplicit(const std::string& path, const std::string& root) {
    if (IsAtOrUnder(root, path)) {
      read_only_.insert(root);
      return;
    }
    if (!IsUnder(path, root)) return;
    std::vector<std::string> parts =
        absl::StrSplit(absl::string_view(path).substr(root == "/" ? 1 : root.size() + 1), '/',
                       absl::SkipEmpty());
    Check(root, root, parts, true, false);
  }

  ProtectionPlan Finish() && {
    auto covered = [this](const std::string& path) {
      for (const std::string& ro : read_only_) {
        if (IsUnder(path, ro)) return true;
      }
      return false;
    };
    ProtectionPlan plan;
    for (const std::string& path : self_binds_) {
      if (!covered(path) && read_only_.count(path) == 0) plan.self_binds.push_back(path);
    }
    for (const std::string& path : read_only_) {
      if (!covered(path)) plan.read_only.push_back(path);
    }
    for (const auto& [path, mask] : masks_) {
      if (!covered(path)) plan.masks.push_back(mask);
    }
    for (const std::string& path : held_read_only_) {
      if (!covered(path)) plan.held_read_only.push_back(path);
    }
    return plan;
  }

 private:
  absl::Status LimitError(const std::string& root, absl::string_view what) const {
    return WithRule(
        WireError(v1::SANDBOX_UNAVAILABLE,
                  absl::StrCat("refused: the protected-path scan of ", root, " passed its bound (",
                               limits_.max_directories, " directories, depth ",
                               limits_.max_depth, ", exceeded: ", what,
                               "); protection inside it cannot be guaranteed")),
        "protected-scan-limit");
  }

  // One open, getdents64 until the end, one close: no stream and its extra fstat and fcntl
  // (a large tree is listed directory by directory on every call).
  static bool List(const std::string& dir,
                   std::vector<std::pair<std::string, unsigned char>>* entries) {
    ScopedFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) return false;
    alignas(dirent64) char buffer[32768];
    for (;;) {
      const ssize_t n = ::getdents64(fd.get(), buffer, sizeof(buffer));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return false;
      if (n == 0) return true;
      for (ssize_t at = 0; at < n;) {
        const auto* entry = reinterpret_cast<const dirent64*>(buffer + at);
        at += entry->d_reclen;
        const absl::string_view name = entry->d_name;
        if (name == "." || name == "..") continue;
        unsigned char type = entry->d_type;
        if (type == DT_UNKNOWN) {
          struct stat st;
          if (::fstatat(fd.get(), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
            type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK : DT_REG;
          }
        }
        entries->emplace_back(std::string(name), type);
      }
    }
  }

  // Walks `parts` below `dir` and records how the protected path is kept read-only.
  void Check(const std::string& root, const std::string& dir,
             const std::vector<std::string>& parts, bool mask_missing, bool file_entry,
             const std::string& content = std::string()) {
    std::string current = dir;
    for (size_t i = 0; i < parts.size(); ++i) {
      const std::string path = absl::StrCat(current == "/" ? "" : current, "/", parts[i]);
      const bool last = i + 1 == parts.size();
      struct stat st;
      if (IsHeldHere(path)) {
        AddMask(root, path, !last || !file_entry, last ? content : std::string());
        return;
      }
      if (::lstat(path.c_str(), &st) != 0) {
        if (errno == ENOENT) {
          if (i == 0 && !mask_missing) return;
          AddMask(root, path, !last || !file_entry, last ? content : std::string());
        } else {
          CoverDirectory(root, current);
        }
        return;
      }
      const ExistingEntry existing = ClassifyExistingEntry(path, st);
      if (existing == ExistingEntry::kMaskMountPoint) {
        // Another process's mask (or one a killed broker left): masked again here, as it is.
        AddMask(root, path, S_ISDIR(st.st_mode), last ? content : std::string());
        return;
      }
      if (S_ISLNK(st.st_mode)) {
        CoverDirectory(root, current);
        return;
      }
      if (last || !S_ISDIR(st.st_mode)) {
        AddReadOnly(root, path);
        if (existing == ExistingEntry::kUnmarkedUnwritten) held_read_only_.insert(path);
        return;
      }
      current = path;
    }
  }

  void AddParents(const std::string& root, const std::string& path) {
    for (std::string parent = Parent(path); IsUnder(parent, root); parent = Parent(parent)) {
      self_binds_.insert(parent);
    }
  }
  void AddReadOnly(const std::string& root, const std::string& path) {
    read_only_.insert(path);
    AddParents(root, path);
  }
  void CoverDirectory(const std::string& root, const std::string& dir) {
    AddReadOnly(root, dir);
  }
  // `config.worktree` is read only where the repository's (protected) config enables
  // extensions.worktreeConfig (sparse checkouts do): then it is protected like config. So is it
  // whenever the config cannot be told not to: one that cannot be read (a link, no permission,
  // an error, larger than kMaxConfigBytes) or that includes other files.
  void ProtectWorktreeConfig(const std::string& root, const std::string& git_dir) {
    if (!ConfigMayEnableWorktreeConfig(git_dir + "/config")) return;
    Check(root, git_dir, {"config.worktree"}, true, true);
  }
  static bool ConfigMayEnableWorktreeConfig(const std::string& path) {
    constexpr size_t kMaxConfigBytes = 1 << 20;
    ScopedFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!fd) return errno != ENOENT;  // a missing config is masked empty: no settings
    absl::StatusOr<std::string> config = ReadToEnd(fd.get(), kMaxConfigBytes, path);
    if (!config.ok()) return true;  // unreadable, or too large to rule out
    const std::string lower = absl::AsciiStrToLower(*config);
    return absl::StrContains(lower, "worktreeconfig") || absl::StrContains(lower, "include");
  }

  void AddMask(const std::string& root, const std::string& path, bool directory,
               const std::string& content) {
    masks_.emplace(path, CoveredPath{path, directory, content});
    AddParents(root, path);
  }

  ProtectionLimits limits_;
  std::string home_;  // the sandbox's HOME, canonical, or empty
  size_t directories_ = 0;
  std::set<std::string> self_binds_;
  std::set<std::string> read_only_;
  std::set<std::string> held_read_only_;
  std::map<std::string, CoveredPath> masks_;
};

}  // namespace

absl::StatusOr<ProtectionPlan> PlanProtection(const std::vector<std::string>& writable_roots,
                                              const std::vector<std::string>& protected_paths,
                                              const ProtectionLimits& limits,
                                              const std::string& home) {
  Planner planner(limits, home);
  for (const std::string& root : writable_roots) {
    if (root.empty() || root[0] != '/') {
      return absl::InvalidArgumentError(absl::StrCat("root '", root, "' is not absolute"));
    }
    // A root that itself lies in protected storage (a workspace under ~/.vscode/) is
    // protected whole, as the file tools' fences have it.
    const absl::string_view below_slash = absl::string_view(root).substr(1);
    if (!profiles::MatchProtected(below_slash).empty() || profiles::HasGitComponent(root)) {
      planner.ProtectWhole(root);
      continue;
    }
    absl::Status status = planner.ScanRoot(root);
    if (!status.ok()) return status;
    for (const std::string& path : protected_paths) planner.ProtectExplicit(path, root);
  }
  return std::move(planner).Finish();
}


}  // namespace airlock::broker
