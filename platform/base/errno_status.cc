#include "platform/base/errno_status.h"

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace airlock {
namespace {

constexpr char kErrnoPayloadUrl[] = "airlock/errno";

absl::StatusCode CodeForErrno(int error_number) {
  switch (error_number) {
    case ENOENT:
    case ENOTDIR:
      return absl::StatusCode::kNotFound;
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::StatusCode::kPermissionDenied;
    case EEXIST:
    case ENOTEMPTY:
      return absl::StatusCode::kAlreadyExists;
    case EINVAL:
    case ENAMETOOLONG:
    case ELOOP:
    case EISDIR:
      return absl::StatusCode::kInvalidArgument;
    case ENOSPC:
    case EDQUOT:
    case EMFILE:
    case ENFILE:
    case ENOMEM:
    case EFBIG:
      return absl::StatusCode::kResourceExhausted;
    case EAGAIN:
    case EBUSY:
      return absl::StatusCode::kUnavailable;
    case ETIMEDOUT:
      return absl::StatusCode::kDeadlineExceeded;
    case ENOSYS:
    case EOPNOTSUPP:
      return absl::StatusCode::kUnimplemented;
    case EXDEV:
      return absl::StatusCode::kFailedPrecondition;
    default:
      return absl::StatusCode::kInternal;
  }
}

}  // namespace

absl::Status ErrnoToStatus(int error_number, absl::string_view operation, absl::string_view path) {
  std::string message(operation);
  if (!path.empty()) absl::StrAppend(&message, " ", path);
  absl::StrAppend(&message, ": ", std::strerror(error_number));
  absl::Status status(CodeForErrno(error_number), message);
  status.SetPayload(kErrnoPayloadUrl, absl::Cord(absl::StrCat(error_number)));
  return status;
}

absl::Status LastErrnoStatus(absl::string_view operation, absl::string_view path) {
  return ErrnoToStatus(errno, operation, path);
}

int ErrnoOf(const absl::Status& status) {
  auto payload = status.GetPayload(kErrnoPayloadUrl);
  int value = 0;
  if (!payload.has_value() || !absl::SimpleAtoi(std::string(*payload), &value)) return 0;
  return value;
}

}  // namespace airlock
