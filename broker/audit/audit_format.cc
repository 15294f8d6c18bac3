#include "broker/audit/audit_format.h"

#include "absl/strings/match.h"
#include "broker/audit/audit_crypto.h"

namespace airlock::broker::audit {

bool SplitSignedLine(absl::string_view line, absl::string_view* signed_prefix,
                     absl::string_view* mac_hex) {
  if (line.size() < kMacSuffixSize + 1) return false;
  const absl::string_view suffix = line.substr(line.size() - kMacSuffixSize);
  if (!absl::StartsWith(suffix, kMacFieldOpen) || !absl::EndsWith(suffix, kMacFieldClose)) {
    return false;
  }
  const absl::string_view hex = suffix.substr(kMacFieldOpen.size(), 64);
  if (!IsLowerHex64(hex)) return false;
  *signed_prefix = line.substr(0, line.size() - kMacSuffixSize);
  *mac_hex = hex;
  return true;
}

std::string FormatAuditTime(absl::Time time) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", time, absl::UTCTimeZone());
}

bool IsAuditTime(absl::string_view text) {
  // YYYY-MM-DDTHH:MM:SS.ffffffZ
  constexpr absl::string_view kShape = "dddd-dd-ddTdd:dd:dd.ddddddZ";
  if (text.size() != kShape.size()) return false;
  for (size_t i = 0; i < kShape.size(); ++i) {
    if (kShape[i] == 'd') {
      if (text[i] < '0' || text[i] > '9') return false;
    } else if (text[i] != kShape[i]) {
      return false;
    }
  }
  return true;
}

}  // namespace airlock::broker::audit
