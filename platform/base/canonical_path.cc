#include "platform/base/canonical_path.h"

#include <climits>
#include <cstdlib>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace airlock {

absl::StatusOr<std::string> CanonicalMaybeMissing(const std::string& path,
                                                  const std::string& base) {
  if (path.empty()) return absl::InvalidArgumentError("empty path");
  std::string absolute = path;
  if (path[0] != '/') {
    if (base.empty() || base[0] != '/') {
      return absl::InvalidArgumentError(
          absl::StrCat("relative path '", path, "' with no absolute base"));
    }
    absolute = absl::StrCat(base, "/", path);
  }
  std::vector<std::string> missing;  // components below the existing prefix, last first
  std::string existing = absolute;
  while (true) {
    char resolved[PATH_MAX];
    if (::realpath(existing.c_str(), resolved) != nullptr) {
      std::string canonical = resolved;
      for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
        if (*it == "." || *it == "..") {
          return absl::InvalidArgumentError(
              absl::StrCat("'", path, "': '", *it, "' in its missing part cannot be resolved"));
        }
        absl::StrAppend(&canonical, canonical == "/" ? "" : "/", *it);
      }
      return canonical;
    }
    while (existing.size() > 1 && existing.back() == '/') existing.pop_back();
    const size_t slash = existing.rfind('/');
    if (slash == std::string::npos) return absolute;
    const std::string name = existing.substr(slash + 1);
    if (!name.empty()) missing.push_back(name);
    existing = slash == 0 ? "/" : existing.substr(0, slash);
  }
}

}  // namespace airlock
