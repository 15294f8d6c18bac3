// The protected storage of SPEC §5 as data: names inside the roots that run later on the host
// (the classic escape route), matched at any depth. One list, shared by the file tools and the
// shell sandbox, so the two can never disagree.
#ifndef PROFILES_PROTECTED_PATHS_H_
#define PROFILES_PROTECTED_PATHS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace airlock::profiles {

// Relative paths protected at any depth inside a root, e.g. ".git/hooks", ".bashrc".
const std::vector<std::string>& ProtectedRelativePaths();

// If the path `relative` (to a root, no leading '/', components separated by single '/')
// is or lies inside a protected entry at any depth, returns that entry's rule
// ("protected:.git/hooks"); else an empty string. Case-sensitive, component-wise.
std::string MatchProtected(absl::string_view relative);

// Whether a component of `path` is `.git`: inside a git directory, or a gitfile.
bool HasGitComponent(absl::string_view path);

}  // namespace airlock::profiles

#endif  // PROFILES_PROTECTED_PATHS_H_
