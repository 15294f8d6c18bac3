// SHA-256 of file contents, as lowercase hex: what approvals and results bind to.
#ifndef BROKER_FS_DIGEST_H_
#define BROKER_FS_DIGEST_H_

#include <string>

#include "absl/strings/string_view.h"

namespace airlock::broker {

// Lowercase hex SHA-256 of `data` (64 characters).
std::string Sha256Hex(absl::string_view data);

// Compares two digests (or any two strings) without an early exit on the first difference.
bool ConstantTimeEquals(absl::string_view a, absl::string_view b);

}  // namespace airlock::broker

#endif  // BROKER_FS_DIGEST_H_
