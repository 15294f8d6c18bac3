// The exact bytes of one audit line, shared by the writer and the verifier.
//
//   {"v":1,"seq":7,"time":"2026-11-30T02:12:12.123456Z","epoch":0,"session":"…","uid":0,
//    "user":"root","event":"request",…record fields…,"prev":"<64 hex>","mac":"<64 hex>"}\n
//
// (one line; wrapped here). `mac` = HMAC-SHA256(k(epoch), every byte before `,"mac":"`). The
// MAC field is always the last 74 bytes before the newline, so the verifier finds the signed
// prefix by position and never re-serializes anything. `prev` is the SHA-256 of the previous
// line's exact bytes, newline included (64 zeros for the first line of a log).
#ifndef BROKER_AUDIT_AUDIT_FORMAT_H_
#define BROKER_AUDIT_AUDIT_FORMAT_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace airlock::broker::audit {

inline constexpr int kAuditFormatVersion = 1;
inline constexpr absl::string_view kMacFieldOpen = ",\"mac\":\"";
inline constexpr absl::string_view kMacFieldClose = "\"}";
inline constexpr size_t kMacSuffixSize = 8 + 64 + 2;
inline constexpr absl::string_view kGenesisPrev =
    "0000000000000000000000000000000000000000000000000000000000000000";
// A line longer than this is malformed (the writer caps every field well below it).
inline constexpr size_t kMaxLineBytes = 64 * 1024;

// Splits a line (without its newline) into the signed prefix and the MAC's hex digits.
// False when the line does not end in `,"mac":"<64 lowercase hex>"}`.
bool SplitSignedLine(absl::string_view line, absl::string_view* signed_prefix,
                     absl::string_view* mac_hex);

// "2026-11-30T02:12:12.123456Z": fixed width, so times compare as strings.
std::string FormatAuditTime(absl::Time time);
// True for exactly that shape.
bool IsAuditTime(absl::string_view text);

}  // namespace airlock::broker::audit

#endif  // BROKER_AUDIT_AUDIT_FORMAT_H_
