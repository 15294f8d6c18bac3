// The file tools' error statuses (SPEC §3, §8): every refusal names the tool, the canonical
// path, what refused it and the rule; every race the descriptor walks catch says that nothing
// was written.
#ifndef BROKER_FS_FS_ERRORS_H_
#define BROKER_FS_FS_ERRORS_H_

#include <sys/types.h>

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "airlock/v1/wire.pb.h"

namespace airlock::broker {

// "<tool> <canonical> refused: <what> (rule <rule>)" with `code`, the rule attached.
[[nodiscard]] absl::Status Refusal(v1::ErrorCode code, absl::string_view tool,
                                   absl::string_view canonical, absl::string_view what,
                                   absl::string_view rule);

// APPROVAL_STALE: something bound changed since it was checked; nothing was written.
[[nodiscard]] absl::Status Stale(absl::string_view tool, absl::string_view canonical,
                                 absl::string_view why);

// Maps a descriptor walk's failure: a path that changed under it (ELOOP, EXDEV, ENOTDIR,
// ENOENT) is APPROVAL_STALE for a mutation, NOT_FOUND or INVALID_ARGUMENT for a read; any
// other status is returned as is.
[[nodiscard]] absl::Status WalkFailure(const absl::Status& status, absl::string_view tool,
                                       absl::string_view canonical, bool mutation);

// INVALID_ARGUMENT naming what the target is instead (a directory, a FIFO, a device, …).
[[nodiscard]] absl::Status NotRegular(absl::string_view tool, absl::string_view canonical,
                                      mode_t mode);

// TOO_LARGE naming the size and the bound.
[[nodiscard]] absl::Status TooLarge(absl::string_view tool, absl::string_view canonical,
                                    uint64_t size, uint64_t bound);

}  // namespace airlock::broker

#endif  // BROKER_FS_FS_ERRORS_H_
