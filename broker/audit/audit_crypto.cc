#include "broker/audit/audit_crypto.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace airlock::broker::audit {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";
constexpr char kLogKeyLabel[] = "airlock-audit-v1 log key";
constexpr char kRatchetLabel[] = "ratchet";

// Fetched once; EVP_MAC objects are immutable and safe to share between threads.
EVP_MAC* HmacAlgorithm() {
  static EVP_MAC* const mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  return mac;
}

std::string Hex(const unsigned char* bytes, size_t size) {
  std::string out(size * 2, '0');
  for (size_t i = 0; i < size; ++i) {
    out[2 * i] = kHexDigits[bytes[i] >> 4];
    out[2 * i + 1] = kHexDigits[bytes[i] & 0xf];
  }
  return out;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

SecretBytes::SecretBytes(absl::string_view bytes) : size_(bytes.size()) {
  if (size_ == 0) return;
  bytes_ = std::make_unique<unsigned char[]>(size_);
  std::memcpy(bytes_.get(), bytes.data(), size_);
}

SecretBytes::SecretBytes(SecretBytes&& other) noexcept
    : bytes_(std::move(other.bytes_)), size_(std::exchange(other.size_, 0)) {}

SecretBytes& SecretBytes::operator=(SecretBytes&& other) noexcept {
  if (this != &other) {
    Wipe();
    bytes_ = std::move(other.bytes_);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void SecretBytes::Wipe() {
  if (bytes_ != nullptr) OPENSSL_cleanse(bytes_.get(), size_);
  bytes_.reset();
  size_ = 0;
}

absl::StatusOr<Mac> HmacSha256(absl::string_view key, absl::string_view data) {
  if (key.empty()) return absl::InvalidArgumentError("HMAC-SHA256: empty key");
  EVP_MAC* algorithm = HmacAlgorithm();
  if (algorithm == nullptr) return absl::InternalError("OpenSSL: HMAC is not available");
  EVP_MAC_CTX* context = EVP_MAC_CTX_new(algorithm);
  if (context == nullptr) return absl::InternalError("OpenSSL: EVP_MAC_CTX_new failed");
  char digest_name[] = "SHA256";
  const OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest_name, 0),
      OSSL_PARAM_construct_end()};
  Mac mac{};
  size_t mac_size = 0;
  const bool ok =
      EVP_MAC_init(context, reinterpret_cast<const unsigned char*>(key.data()), key.size(),
                   params) == 1 &&
      EVP_MAC_update(context, reinterpret_cast<const unsigned char*>(data.data()), data.size()) ==
          1 &&
      EVP_MAC_final(context, mac.data(), &mac_size, mac.size()) == 1 && mac_size == kMacSize;
  EVP_MAC_CTX_free(context);
  if (!ok) return absl::InternalError("OpenSSL: HMAC-SHA256 failed");
  return mac;
}

std::string Sha256Hex(absl::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &size, EVP_sha256(), nullptr) != 1 ||
      size != 32) {
    // SHA-256 cannot fail short of memory exhaustion; a wrong digest would be a broken chain.
    std::abort();
  }
  return Hex(digest, size);
}

std::string MacHex(const Mac& mac) { return Hex(mac.data(), mac.size()); }

bool IsLowerHex64(absl::string_view text) {
  if (text.size() != 64) return false;
  for (char c : text) {
    if (HexValue(c) < 0) return false;
  }
  return true;
}

bool MacMatchesHex(const Mac& mac, absl::string_view hex) {
  if (!IsLowerHex64(hex)) return false;
  unsigned char decoded[kMacSize];
  for (size_t i = 0; i < kMacSize; ++i) {
    decoded[i] = static_cast<unsigned char>(HexValue(hex[2 * i]) << 4 | HexValue(hex[2 * i + 1]));
  }
  return CRYPTO_memcmp(decoded, mac.data(), kMacSize) == 0;
}

absl::StatusOr<SecretBytes> DeriveLogKey(const SecretBytes& master, absl::string_view session) {
  std::string label(kLogKeyLabel, sizeof(kLogKeyLabel));  // includes the NUL separator
  label.append(session.data(), session.size());
  absl::StatusOr<Mac> mac = HmacSha256(master.view(), label);
  if (!mac.ok()) return mac.status();
  SecretBytes key(absl::string_view(reinterpret_cast<const char*>(mac->data()), mac->size()));
  OPENSSL_cleanse(mac->data(), mac->size());
  return key;
}

absl::StatusOr<SecretBytes> RatchetKey(const SecretBytes& key) {
  absl::StatusOr<Mac> mac = HmacSha256(key.view(), kRatchetLabel);
  if (!mac.ok()) return mac.status();
  SecretBytes next(absl::string_view(reinterpret_cast<const char*>(mac->data()), mac->size()));
  OPENSSL_cleanse(mac->data(), mac->size());
  return next;
}

}  // namespace airlock::broker::audit
