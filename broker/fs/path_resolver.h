// Canonicalization of untrusted path strings (SPEC §5): where a request would land, with every
// symbolic link resolved — dangling ones included, since a dangling link's target is where a
// write would land. The result is a path string for checks and messages only; the file tools
// act through directory descriptors (beneath.h), never by reopening this string with links
// followed.
#ifndef BROKER_FS_PATH_RESOLVER_H_
#define BROKER_FS_PATH_RESOLVER_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace airlock::broker {

// Symbolic links followed while resolving one path before it counts as a loop (Linux's own
// limit, MAXSYMLINKS).
inline constexpr int kMaxLinkHops = 40;

struct ResolvedPath {
  // Absolute; no ".", "..", empty components or links; "/" for the root directory.
  std::string canonical;
  // The components of `canonical` ("/a/b" → {"a", "b"}).
  std::vector<std::string> components;
  // How many leading components existed when resolved; the rest would have to be created.
  size_t existing_components = 0;
  // The request ended in '/' (it names a directory).
  bool trailing_slash = false;

  bool exists() const { return existing_components == components.size(); }
};

// Rejects what no resolution may accept: empty, NUL bytes, backslashes, longer than PATH_MAX,
// a component longer than NAME_MAX. INVALID_ARGUMENT naming the (escaped) request.
[[nodiscard]] absl::Status ValidateRequestedPath(absl::string_view requested_path);

// Resolves `requested_path` (validated first). A relative path is taken against `base`, a
// canonical absolute directory; `~` is an ordinary name. Components under one of
// `trusted_prefixes` (canonical directories whose identity the caller has just verified, the
// roots) are not re-examined. Every existing link is followed, at most kMaxLinkHops times (a
// loop is INVALID_ARGUMENT naming where it was found); a component that exists but is not a
// directory while more follow is INVALID_ARGUMENT; ".." after a missing component is lexical.
[[nodiscard]] absl::StatusOr<ResolvedPath> ResolvePath(
    absl::string_view requested_path, absl::string_view base,
    const std::vector<std::string>& trusted_prefixes = {});

// True when `path` is `directory` or lies below it (both canonical).
bool PathIsWithin(absl::string_view path, absl::string_view directory);

}  // namespace airlock::broker

#endif  // BROKER_FS_PATH_RESOLVER_H_
