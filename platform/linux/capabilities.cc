#include "platform/linux/capabilities.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "platform/base/errno_status.h"
#include "platform/base/fd_io.h"
#include "platform/base/scoped_fd.h"
#include "platform/base/status_macros.h"

namespace airlock::linux_sandbox {
namespace {

// Owns a cap_t.
class CapState {
 public:
  explicit CapState(cap_t caps) : caps_(caps) {}
  ~CapState() {
    if (caps_ != nullptr) cap_free(caps_);
  }
  CapState(const CapState&) = delete;
  CapState& operator=(const CapState&) = delete;
  cap_t get() const { return caps_; }

 private:
  cap_t caps_;
};

int KnownCapabilityCount() {
  const int bits = static_cast<int>(cap_max_bits());
  return bits > 64 ? 64 : bits;
}

absl::Status WriteProcFile(const char* path, const std::string& content) {
  ScopedFd fd(::open(path, O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return LastErrnoStatus("open", path);
  return WriteFully(fd.get(), content, path);
}

}  // namespace

std::string CapabilitySets::DebugString() const {
  return absl::StrFormat("eff=%x prm=%x inh=%x bnd=%x amb=%x", effective, permitted, inheritable,
                         bounding, ambient);
}

absl::StatusOr<CapabilitySets> ReadCapabilities() {
  CapState proc(cap_get_proc());
  if (proc.get() == nullptr) return LastErrnoStatus("cap_get_proc");
  CapabilitySets sets;
  for (int cap = 0; cap < KnownCapabilityCount(); ++cap) {
    const uint64_t bit = 1ULL << cap;
    const cap_value_t value = static_cast<cap_value_t>(cap);
    cap_flag_value_t flag = CAP_CLEAR;
    if (cap_get_flag(proc.get(), value, CAP_EFFECTIVE, &flag) != 0) {
      return LastErrnoStatus("cap_get_flag");
    }
    if (flag == CAP_SET) sets.effective |= bit;
    if (cap_get_flag(proc.get(), value, CAP_PERMITTED, &flag) != 0) {
      return LastErrnoStatus("cap_get_flag");
    }
    if (flag == CAP_SET) sets.permitted |= bit;
    if (cap_get_flag(proc.get(), value, CAP_INHERITABLE, &flag) != 0) {
      return LastErrnoStatus("cap_get_flag");
    }
    if (flag == CAP_SET) sets.inheritable |= bit;
    const int bound = cap_get_bound(value);
    if (bound < 0) return LastErrnoStatus("cap_get_bound");
    if (bound == 1) sets.bounding |= bit;
    const int ambient = cap_get_ambient(value);
    // Kernels without ambient capabilities (before 4.3) report EINVAL: nothing to hold there.
    if (ambient < 0 && errno != EINVAL) return LastErrnoStatus("cap_get_ambient");
    if (ambient == 1) sets.ambient |= bit;
  }
  return sets;
}

absl::Status DropAllCapabilities() {
  if (CAP_AMBIENT_SUPPORTED() && cap_reset_ambient() != 0) {
    return LastErrnoStatus("cap_reset_ambient");
  }
  for (int cap = 0; cap < KnownCapabilityCount(); ++cap) {
    const cap_value_t value = static_cast<cap_value_t>(cap);
    const int bound = cap_get_bound(value);
    if (bound < 0) return LastErrnoStatus("cap_get_bound");
    if (bound == 1 && cap_drop_bound(value) != 0) {
      return LastErrnoStatus("cap_drop_bound (dropping the bounding set needs CAP_SETPCAP)");
    }
  }
  CapState empty(cap_init());  // all three sets clear
  if (empty.get() == nullptr) return LastErrnoStatus("cap_init");
  if (cap_set_proc(empty.get()) != 0) return LastErrnoStatus("cap_set_proc(empty)");

  AIRLOCK_ASSIGN_OR_RETURN(CapabilitySets left, ReadCapabilities());
  if (!left.AllEmpty()) {
    return absl::InternalError(
        absl::StrFormat("capabilities remain after dropping all: %s", left.DebugString()));
  }
  return absl::OkStatus();
}

bool CanDropBoundingSet() {
  CapState proc(cap_get_proc());
  if (proc.get() == nullptr) return false;
  cap_flag_value_t flag = CAP_CLEAR;
  return cap_get_flag(proc.get(), CAP_SETPCAP, CAP_EFFECTIVE, &flag) == 0 && flag == CAP_SET;
}

absl::Status EnterOwnUserNamespace() {
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  if (::unshare(CLONE_NEWUSER) != 0) return LastErrnoStatus("unshare(CLONE_NEWUSER)");
  AIRLOCK_RETURN_IF_ERROR(WriteProcFile("/proc/self/setgroups", "deny"));
  AIRLOCK_RETURN_IF_ERROR(WriteProcFile("/proc/self/uid_map", absl::StrCat(uid, " ", uid, " 1")));
  AIRLOCK_RETURN_IF_ERROR(WriteProcFile("/proc/self/gid_map", absl::StrCat(gid, " ", gid, " 1")));
  return absl::OkStatus();
}

}  // namespace airlock::linux_sandbox
