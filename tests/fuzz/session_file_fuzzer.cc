// Fuzzes session-file validation: any bytes are accepted as a version-2 session with a valid
// preset, or rejected with a message; never a crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "broker/session/session_store.h"
#include "broker/session/settings.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto parsed = airlock::broker::SessionStore::Parse(
      absl::string_view(reinterpret_cast<const char*>(data), size), "session");
  if (parsed.ok()) {
    if (parsed->header.version() != airlock::broker::kSessionVersion) std::abort();
    if (!airlock::broker::IsPresetName(parsed->header.permission_preset())) std::abort();
  } else if (parsed.status().message().empty()) {
    std::abort();
  }
  return 0;
}
