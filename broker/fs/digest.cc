#include "broker/fs/digest.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "platform/base/check.h"

namespace airlock::broker {

std::string Sha256Hex(absl::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  // A digest failure means the crypto library is broken: an invariant, not a request error.
  AIRLOCK_CHECK(EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr) == 1);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(2 * length, '0');
  for (unsigned int i = 0; i < length; ++i) {
    out[2 * i] = kHex[digest[i] >> 4];
    out[2 * i + 1] = kHex[digest[i] & 0xf];
  }
  return out;
}

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace airlock::broker
