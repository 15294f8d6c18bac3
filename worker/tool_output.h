// Renders a broker response as the one JSON object `airlock tool` prints, and chooses the exit
// status of SPEC §3. Pure, so it is tested without a broker.
#ifndef WORKER_TOOL_OUTPUT_H_
#define WORKER_TOOL_OUTPUT_H_

#include <string>

#include "absl/status/status.h"
#include "airlock/v1/wire.pb.h"

namespace airlock::worker {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 2;
inline constexpr int kExitRefused = 3;
inline constexpr int kExitSandboxUnavailable = 4;
inline constexpr int kExitUsage = 64;

struct ToolOutput {
  std::string json;  // one line, no trailing newline
  int exit_code = kExitOk;
};

// {"ok":true,…result fields…} or {"ok":false,"error":{…}}. Byte fields (content, stdout,
// stderr) are printed as text when they are valid UTF-8, else as `<name>_base64`.
ToolOutput RenderResponse(const v1::Response& response);

// {"ok":false,"error":{"code":"INTERNAL",…}} for a failure to reach the broker at all.
ToolOutput RenderLocalFailure(const absl::Status& status);

// The exit status for a wire error code.
int ExitCodeFor(v1::ErrorCode code);

}  // namespace airlock::worker

#endif  // WORKER_TOOL_OUTPUT_H_
