// Landlock (layer 2 of the worker's confinement): probing the kernel's ABI and building a
// ruleset from O_PATH descriptors. Debian 12's <linux/landlock.h> stops at ABI 2, so the rights,
// scopes and structures of ABI 1..7 are defined here; rights the running kernel lacks are
// dropped explicitly by ClampToAbi, never silently by the kernel.
#ifndef PLATFORM_LINUX_LANDLOCK_H_
#define PLATFORM_LINUX_LANDLOCK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "platform/base/scoped_fd.h"

namespace airlock::linux_sandbox {

// Filesystem access rights (include/uapi/linux/landlock.h), with the ABI that introduced them.
inline constexpr uint64_t kLandlockExecute = 1ULL << 0;       // ABI 1
inline constexpr uint64_t kLandlockWriteFile = 1ULL << 1;     // ABI 1
inline constexpr uint64_t kLandlockReadFile = 1ULL << 2;      // ABI 1
inline constexpr uint64_t kLandlockReadDir = 1ULL << 3;       // ABI 1
inline constexpr uint64_t kLandlockRemoveDir = 1ULL << 4;     // ABI 1
inline constexpr uint64_t kLandlockRemoveFile = 1ULL << 5;    // ABI 1
inline constexpr uint64_t kLandlockMakeChar = 1ULL << 6;      // ABI 1
inline constexpr uint64_t kLandlockMakeDir = 1ULL << 7;       // ABI 1
inline constexpr uint64_t kLandlockMakeReg = 1ULL << 8;       // ABI 1
inline constexpr uint64_t kLandlockMakeSock = 1ULL << 9;      // ABI 1
inline constexpr uint64_t kLandlockMakeFifo = 1ULL << 10;     // ABI 1
inline constexpr uint64_t kLandlockMakeBlock = 1ULL << 11;    // ABI 1
inline constexpr uint64_t kLandlockMakeSym = 1ULL << 12;      // ABI 1
inline constexpr uint64_t kLandlockRefer = 1ULL << 13;        // ABI 2
inline constexpr uint64_t kLandlockTruncate = 1ULL << 14;     // ABI 3
inline constexpr uint64_t kLandlockIoctlDev = 1ULL << 15;     // ABI 5

// Scopes (ABI 6): IPC the sandboxed processes may not direct outside their own domain.
inline constexpr uint64_t kLandlockScopeAbstractUnixSocket = 1ULL << 0;
inline constexpr uint64_t kLandlockScopeSignal = 1ULL << 1;

// The rights that apply to a file (not a directory); a rule on a file may carry only these.
inline constexpr uint64_t kLandlockFileRights =
    kLandlockExecute | kLandlockWriteFile | kLandlockReadFile | kLandlockTruncate |
    kLandlockIoctlDev;
inline constexpr uint64_t kLandlockReadRights = kLandlockExecute | kLandlockReadFile |
                                                kLandlockReadDir;

// The highest ABI this code knows. A newer kernel is used at this ABI.
inline constexpr int kLandlockNewestKnownAbi = 7;

// Every filesystem right the given ABI knows (0 for abi < 1).
uint64_t LandlockFsRightsForAbi(int abi);
// Every scope the given ABI knows (0 before ABI 6).
uint64_t LandlockScopesForAbi(int abi);

// The running kernel's Landlock ABI version (>= 1). Unimplemented (ENOSYS) when the kernel was
// built without Landlock; FailedPrecondition (EOPNOTSUPP) when it is built in but disabled at
// boot (not in the `lsm=` list). The messages say which and what to do.
[[nodiscard]] absl::StatusOr<int> ProbeLandlockAbi();

struct LandlockPathRule {
  std::string path;
  uint64_t access = 0;
  bool optional = false;  // a missing path is skipped instead of being an error
};

struct LandlockPolicy {
  uint64_t handled_fs = 0;  // rights the ruleset restricts (everything not granted is denied)
  uint64_t scoped = 0;
  std::vector<LandlockPathRule> rules;
};

// The policy reduced to what `abi` supports: unknown rights and scopes are removed from the
// handled set and from every rule. (At ABI 1, REFER cannot be handled, which means the kernel
// denies every cross-directory rename or link — stricter, never weaker.)
LandlockPolicy ClampToAbi(LandlockPolicy policy, int abi);

// Creates the ruleset and adds one path-beneath rule per entry, each from an O_PATH descriptor.
// A rule on a non-directory keeps only the file rights. A required path that cannot be opened
// is an error that names it.
[[nodiscard]] absl::StatusOr<ScopedFd> BuildLandlockRuleset(const LandlockPolicy& policy);

// Enforces the ruleset on the calling thread (and what it execs). Requires no_new_privs.
[[nodiscard]] absl::Status RestrictSelf(int ruleset_fd);

// The worker's policy (SPEC §7): read and execute everywhere; every write right only beneath
// `scratch_dir`; writes to the sink devices (/dev/null, /dev/zero, /dev/full); and, when the
// worker has a private /dev (the mount view), its own terminals (/dev/tty, /dev/ptmx,
// /dev/pts). Signals and abstract Unix sockets are scoped to the worker's own domain, so the
// worker cannot signal the broker or reach a host abstract socket.
LandlockPolicy WorkerLandlockPolicy(absl::string_view scratch_dir, bool private_dev);

// Probe + clamp + build + restrict, in that order. Returns the ABI that was applied.
[[nodiscard]] absl::StatusOr<int> ApplyLandlock(const LandlockPolicy& policy);

}  // namespace airlock::linux_sandbox

#endif  // PLATFORM_LINUX_LANDLOCK_H_
