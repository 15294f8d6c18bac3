#include "platform/linux/landlock.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "platform/base/errno_status.h"
#include "platform/base/status_macros.h"

// The syscall numbers are the same on every architecture (the generic table).
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

namespace airlock::linux_sandbox {
namespace {

// struct landlock_ruleset_attr as of ABI 6. Older kernels accept the larger struct as long as
// the fields they do not know are zero, which ClampToAbi guarantees.
struct RulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};

struct __attribute__((packed)) PathBeneathAttr {
  uint64_t allowed_access;
  int32_t parent_fd;
};

constexpr uint32_t kCreateRulesetVersion = 1U << 0;
constexpr int kRulePathBeneath = 1;

long CreateRuleset(const RulesetAttr* attr, size_t size, uint32_t flags) {
  return ::syscall(SYS_landlock_create_ruleset, attr, size, flags);
}

}  // namespace

uint64_t LandlockFsRightsForAbi(int abi) {
  if (abi < 1) return 0;
  uint64_t rights = (kLandlockMakeSym << 1) - 1;  // ABI 1: bits 0..12
  if (abi >= 2) rights |= kLandlockRefer;
  if (abi >= 3) rights |= kLandlockTruncate;
  if (abi >= 5) rights |= kLandlockIoctlDev;
  return rights;
}

uint64_t LandlockScopesForAbi(int abi) {
  return abi >= 6 ? (kLandlockScopeAbstractUnixSocket | kLandlockScopeSignal) : 0;
}

absl::StatusOr<int> ProbeLandlockAbi() {
  const long abi = CreateRuleset(nullptr, 0, kCreateRulesetVersion);
  if (abi >= 1) return static_cast<int>(abi);
  const int error = errno;
  switch (error) {
    case ENOSYS:
      return absl::UnimplementedError(
          "Landlock is not supported by this kernel (landlock_create_ruleset: ENOSYS; the "
          "kernel was built without CONFIG_SECURITY_LANDLOCK)");
    case EOPNOTSUPP:
      return absl::FailedPreconditionError(
          "Landlock is built into this kernel but disabled at boot (landlock_create_ruleset: "
          "EOPNOTSUPP; add 'landlock' to the kernel's lsm= boot parameter)");
    default:
      return ErrnoToStatus(error, "landlock_create_ruleset(VERSION)");
  }
}

LandlockPolicy ClampToAbi(LandlockPolicy policy, int abi) {
  const uint64_t known = LandlockFsRightsForAbi(abi);
  policy.handled_fs &= known;
  policy.scoped &= LandlockScopesForAbi(abi);
  for (LandlockPathRule& rule : policy.rules) rule.access &= policy.handled_fs;
  return policy;
}

absl::StatusOr<ScopedFd> BuildLandlockRuleset(const LandlockPolicy& policy) {
  if (policy.handled_fs == 0 && policy.scoped == 0) {
    return absl::InvalidArgumentError("landlock: the ruleset restricts nothing");
  }
  RulesetAttr attr{};
  attr.handled_access_fs = policy.handled_fs;
  attr.scoped = policy.scoped;
  // Pass the struct only as far as the kernel needs it: a zero `scoped` on an ABI < 6 kernel
  // is accepted either way, but the shorter size also works on kernels that predate the field.
  const size_t size = policy.scoped != 0 ? sizeof(RulesetAttr) : sizeof(uint64_t);
  const long fd = CreateRuleset(&attr, size, 0);
  if (fd < 0) return LastErrnoStatus("landlock_create_ruleset");
  ScopedFd ruleset(static_cast<int>(fd));

  for (const LandlockPathRule& rule : policy.rules) {
    uint64_t access = rule.access & policy.handled_fs;
    if (access == 0) continue;  // nothing to grant that the ruleset restricts
    ScopedFd parent(::open(rule.path.c_str(), O_PATH | O_CLOEXEC));
    if (!parent.valid()) {
      if (rule.optional && errno == ENOENT) continue;
      return LastErrnoStatus("landlock: open(O_PATH) for a rule", rule.path);
    }
    struct stat info;
    if (::fstat(parent.get(), &info) != 0) return LastErrnoStatus("landlock: fstat", rule.path);
    if (!S_ISDIR(info.st_mode)) access &= kLandlockFileRights;
    if (access == 0) continue;
    PathBeneathAttr beneath{};
    beneath.allowed_access = access;
    beneath.parent_fd = parent.get();
    if (::syscall(SYS_landlock_add_rule, ruleset.get(), kRulePathBeneath, &beneath, 0) != 0) {
      return LastErrnoStatus("landlock_add_rule", rule.path);
    }
  }
  return ruleset;
}

absl::Status RestrictSelf(int ruleset_fd) {
  if (::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) {
    return absl::FailedPreconditionError("landlock: no_new_privs must be set before restricting");
  }
  if (::syscall(SYS_landlock_restrict_self, ruleset_fd, 0) != 0) {
    return LastErrnoStatus("landlock_restrict_self");
  }
  return absl::OkStatus();
}

LandlockPolicy WorkerLandlockPolicy(absl::string_view scratch_dir, bool private_dev) {
  LandlockPolicy policy;
  policy.handled_fs = LandlockFsRightsForAbi(kLandlockNewestKnownAbi);
  policy.scoped = LandlockScopesForAbi(kLandlockNewestKnownAbi);
  policy.rules.push_back({"/", kLandlockReadRights, false});
  policy.rules.push_back({std::string(scratch_dir), policy.handled_fs, false});
  const uint64_t sink = kLandlockReadFile | kLandlockWriteFile | kLandlockIoctlDev;
  for (const char* device : {"/dev/null", "/dev/zero", "/dev/full"}) {
    policy.rules.push_back({device, sink, true});
  }
  // Terminals only in the worker's private /dev: on the host's /dev, /dev/pts holds the user's
  // other terminals, and writing to them would be input injection.
  if (private_dev) {
    for (const char* device : {"/dev/tty", "/dev/ptmx", "/dev/pts"}) {
      policy.rules.push_back({device, sink, true});
    }
  }
  return policy;
}

absl::StatusOr<int> ApplyLandlock(const LandlockPolicy& policy) {
  AIRLOCK_ASSIGN_OR_RETURN(int abi, ProbeLandlockAbi());
  const int used_abi = abi > kLandlockNewestKnownAbi ? kLandlockNewestKnownAbi : abi;
  AIRLOCK_ASSIGN_OR_RETURN(ScopedFd ruleset, BuildLandlockRuleset(ClampToAbi(policy, used_abi)));
  AIRLOCK_RETURN_IF_ERROR(RestrictSelf(ruleset.get()));
  return used_abi;
}

}  // namespace airlock::linux_sandbox
