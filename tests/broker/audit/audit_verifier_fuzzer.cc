// libFuzzer target: an audit log is untrusted bytes to `airlock audit verify|show` and to the
// broker's Open. The key is fixed (the seed corpus is signed with it) so inputs reach deep.
#include <cstddef>
#include <cstdint>
#include <string>

#include "broker/audit/audit_crypto.h"
#include "broker/audit/audit_format.h"
#include "broker/audit/audit_json.h"
#include "broker/audit/audit_verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace airlock::broker::audit;
  static const SecretBytes* const key = new SecretBytes(std::string(32, 'k'));
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  auto result = VerifyAuditLog(input, *key);
  if (result.ok() && result->intact() && result->records == 0) __builtin_trap();
  VerifyOptions options;
  options.expected_session = "sess1";
  (void)VerifyAuditLog(input, *key, options);
  auto parsed = ParseFlatJsonObject(input);
  if (parsed.ok()) {
    for (const auto& field : parsed->fields()) (void)EscapeForDisplay(field.second.string_value);
  }
  absl::string_view prefix, mac;
  (void)SplitSignedLine(input, &prefix, &mac);
  (void)EscapeForDisplay(input);
  return 0;
}
