// Fuzzes settings.json parsing: any bytes give settings or a clear error, never a crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "broker/session/settings.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto settings = airlock::broker::ParseSettings(
      absl::string_view(reinterpret_cast<const char*>(data), size), "settings.json");
  if (settings.ok()) {
    // Whatever was accepted holds only valid values.
    if (!settings->permission_preset().empty() &&
        !airlock::broker::IsPresetName(settings->permission_preset())) {
      std::abort();
    }
  } else if (settings.status().message().empty()) {
    std::abort();  // every refusal says why
  }
  return 0;
}
