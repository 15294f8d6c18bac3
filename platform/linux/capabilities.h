// Capabilities (libcap): reading all five sets and dropping every capability for good.
#ifndef PLATFORM_LINUX_CAPABILITIES_H_
#define PLATFORM_LINUX_CAPABILITIES_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace airlock::linux_sandbox {

// One bit per capability number, for every capability the running kernel knows.
struct CapabilitySets {
  uint64_t effective = 0;
  uint64_t permitted = 0;
  uint64_t inheritable = 0;
  uint64_t bounding = 0;
  uint64_t ambient = 0;

  bool AllEmpty() const {
    return (effective | permitted | inheritable | bounding | ambient) == 0;
  }
  // "eff=0 prm=0 inh=0 bnd=0 amb=0" in hex.
  std::string DebugString() const;
};

// The calling thread's capability sets.
[[nodiscard]] absl::StatusOr<CapabilitySets> ReadCapabilities();

// Empties the ambient, bounding, inheritable, permitted and effective sets of the calling
// thread, in that order (the bounding set needs CAP_SETPCAP, dropped last), then reads them
// back: anything left is an error that names it. Combined with no_new_privs, execve cannot
// give any capability back, not even to uid 0.
[[nodiscard]] absl::Status DropAllCapabilities();

// An unprivileged process cannot shrink its own bounding set. This moves the calling
// (single-threaded) process into a new user namespace that maps only its own uid and gid to
// themselves, where it holds CAP_SETPCAP and can drop everything. File access is unchanged:
// the ids are the same, and the new namespace owns no file.
[[nodiscard]] absl::Status EnterOwnUserNamespace();

// True when the effective set holds CAP_SETPCAP (the bounding set can be dropped).
bool CanDropBoundingSet();

}  // namespace airlock::linux_sandbox

#endif  // PLATFORM_LINUX_CAPABILITIES_H_
