// The audit log's cryptography: HMAC-SHA256 through OpenSSL's EVP_MAC, SHA-256 of record bytes,
// the per-log initial key and the forward-secure ratchet k(i+1) = HMAC(k(i), "ratchet").
#ifndef BROKER_AUDIT_AUDIT_CRYPTO_H_
#define BROKER_AUDIT_AUDIT_CRYPTO_H_

#include <array>
#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace airlock::broker::audit {

// Key bytes that are wiped (OPENSSL_cleanse) when destroyed, overwritten or moved from. Never
// copied implicitly, so no stray copy outlives its epoch.
class SecretBytes {
 public:
  SecretBytes() = default;
  explicit SecretBytes(absl::string_view bytes);
  SecretBytes(SecretBytes&& other) noexcept;
  SecretBytes& operator=(SecretBytes&& other) noexcept;
  SecretBytes(const SecretBytes&) = delete;
  SecretBytes& operator=(const SecretBytes&) = delete;
  ~SecretBytes() { Wipe(); }

  // An explicit copy, for the few places that must keep a second key alive.
  SecretBytes Clone() const { return SecretBytes(view()); }

  absl::string_view view() const {
    return absl::string_view(reinterpret_cast<const char*>(bytes_.get()), size_);
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Overwrites the bytes with zeros and releases them.
  void Wipe();

 private:
  std::unique_ptr<unsigned char[]> bytes_;
  size_t size_ = 0;
};

inline constexpr size_t kMacSize = 32;
using Mac = std::array<unsigned char, kMacSize>;

// HMAC-SHA256(key, data). Fails only if OpenSSL does (Internal).
[[nodiscard]] absl::StatusOr<Mac> HmacSha256(absl::string_view key, absl::string_view data);

// SHA-256 of `data`, as 64 lowercase hex digits.
std::string Sha256Hex(absl::string_view data);

// Lowercase hex of a MAC.
std::string MacHex(const Mac& mac);

// Constant-time comparison of a MAC with 64 hex digits (lowercase, as written by the log).
bool MacMatchesHex(const Mac& mac, absl::string_view hex);

// True when `text` is exactly 64 lowercase hex digits (a SHA-256 or a MAC as we print them).
bool IsLowerHex64(absl::string_view text);

// The initial key k(0) of one session's log: HMAC(master, "airlock-audit-v1 log key\0" session).
// A key per session means records cannot be moved between the logs of two sessions.
[[nodiscard]] absl::StatusOr<SecretBytes> DeriveLogKey(const SecretBytes& master,
                                                       absl::string_view session);

// k(i+1) = HMAC(k(i), "ratchet"). The caller wipes k(i) (assigning the result over it does).
[[nodiscard]] absl::StatusOr<SecretBytes> RatchetKey(const SecretBytes& key);

}  // namespace airlock::broker::audit

#endif  // BROKER_AUDIT_AUDIT_CRYPTO_H_
