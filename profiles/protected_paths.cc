#include "profiles/protected_paths.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace airlock::profiles {

const std::vector<std::string>& ProtectedRelativePaths() {
  static const std::vector<std::string>* const kPaths = new std::vector<std::string>{
      ".airlock", ".git/hooks", ".git/config", ".git/commondir", ".gitmodules", ".gitconfig",
      ".bashrc", ".bash_profile", ".profile", ".zshrc", ".zprofile", ".envrc", ".mcp.json",
      ".vscode", ".idea", ".claude", ".codex", ".gemini", ".cursor",
  };
  return *kPaths;
}

std::string MatchProtected(absl::string_view relative) {
  std::vector<absl::string_view> components = absl::StrSplit(relative, '/', absl::SkipEmpty());
  for (const std::string& entry : ProtectedRelativePaths()) {
    std::vector<absl::string_view> pattern = absl::StrSplit(entry, '/');
    // The entry may start at any component (nested repositories count).
    for (size_t start = 0; start + pattern.size() <= components.size(); ++start) {
      bool match = true;
      for (size_t k = 0; k < pattern.size() && match; ++k) {
        match = components[start + k] == pattern[k];
      }
      if (match) return absl::StrCat("protected:", entry);
    }
  }
  return std::string();
}

bool HasGitComponent(absl::string_view path) {
  for (absl::string_view component : absl::StrSplit(path, '/', absl::SkipEmpty())) {
    if (component == ".git") return true;
  }
  return false;
}

}  // namespace airlock::profiles
