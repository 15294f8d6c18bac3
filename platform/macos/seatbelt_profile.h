// The macOS shell sandbox's Seatbelt profile (SPEC §6): writes denied by default; the roots
// and the private temp directory writable; protected paths denied again; network, Mach
// service lookup and access to other processes denied.
//
// Paths never appear in the profile text: every path is a `(param "NAME")` reference and its
// value travels separately as `sandbox-exec -D NAME=VALUE`, so no path can change the
// profile's meaning. The only names spliced into the text are the protected relative names
// (static data from profiles/, checked against a strict character set), rendered as regular
// expressions that match them at any depth.
//
// Pure code, compiled and unit-tested on every platform; only the launcher needs macOS.
#ifndef PLATFORM_MACOS_SEATBELT_PROFILE_H_
#define PLATFORM_MACOS_SEATBELT_PROFILE_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace airlock::macos {

struct SeatbeltPolicy {
  std::vector<std::string> writable_roots;   // canonical, absolute (empty under read-only)
  std::string temp_dir;                      // the call's private temp directory
  std::vector<std::string> protected_paths;  // absolute: writes denied below them
  // Relative names protected at any depth inside the roots (".git/hooks", ".bashrc", …).
  std::vector<std::string> protected_names;
};

struct SeatbeltProfile {
  std::string text;
  // In order: passed as `-D NAME=VALUE`.
  std::vector<std::pair<std::string, std::string>> parameters;
};

// InvalidArgument for a relative path, a NUL byte, an empty temp dir, or a protected name
// outside [A-Za-z0-9._-/].
[[nodiscard]] absl::StatusOr<SeatbeltProfile> RenderSeatbeltProfile(const SeatbeltPolicy& policy);

// {"/usr/bin/sandbox-exec", "-p", TEXT, "-D", "NAME=VALUE"…, "--", command…}. sandbox-exec is
// taken from /usr/bin only.
std::vector<std::string> SandboxExecArgv(const SeatbeltProfile& profile,
                                         const std::vector<std::string>& command);

}  // namespace airlock::macos

#endif  // PLATFORM_MACOS_SEATBELT_PROFILE_H_
