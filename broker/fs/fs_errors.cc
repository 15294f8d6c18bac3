#include "broker/fs/fs_errors.h"

#include <sys/stat.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "broker/wire_error.h"
#include "platform/base/errno_status.h"

namespace airlock::broker {
namespace {

bool IsPathSwapErrno(int error) {
  return error == ELOOP || error == EXDEV || error == ENOTDIR || error == ENOENT;
}

const char* TypeName(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

}  // namespace

absl::Status Refusal(v1::ErrorCode code, absl::string_view tool, absl::string_view canonical,
                     absl::string_view what, absl::string_view rule) {
  return WithRule(WireError(code, absl::StrCat(tool, " ", canonical, " refused: ", what,
                                               " (rule ", rule, ")")),
                  rule);
}

absl::Status Stale(absl::string_view tool, absl::string_view canonical, absl::string_view why) {
  return WireError(v1::APPROVAL_STALE, absl::StrCat(tool, " ", canonical, " refused: ", why,
                                                    " since it was checked; nothing was written"));
}

absl::Status WalkFailure(const absl::Status& status, absl::string_view tool,
                         absl::string_view canonical, bool mutation) {
  const int error = ErrnoOf(status);
  if (!IsPathSwapErrno(error)) return status;
  if (mutation) return Stale(tool, canonical, "the path changed (a link or a moved directory)");
  if (error == ENOENT) {
    return WireError(v1::NOT_FOUND, absl::StrCat(tool, " ", canonical, ": no such file"));
  }
  return WireError(v1::INVALID_ARGUMENT,
                   absl::StrCat(tool, " ", canonical,
                                " refused: the path changed while it was opened (a link or a "
                                "moved directory appeared)"));
}

absl::Status NotRegular(absl::string_view tool, absl::string_view canonical, mode_t mode) {
  return WireError(v1::INVALID_ARGUMENT, absl::StrCat(tool, " ", canonical, " refused: it is ",
                                                      TypeName(mode),
                                                      ", not a regular file"));
}

absl::Status TooLarge(absl::string_view tool, absl::string_view canonical, uint64_t size,
                      uint64_t bound) {
  return WireError(v1::TOO_LARGE, absl::StrCat(tool, " ", canonical, " refused: ", size,
                                               " bytes is over the bound of ", bound, " bytes"));
}

}  // namespace airlock::broker
