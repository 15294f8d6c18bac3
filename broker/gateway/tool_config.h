// The tool gateway's declarations (tools.json, proto/airlock/v1/tools.proto): command tools
// and MCP servers. Parsed with protobuf's JSON parser, strictly (unknown fields, wrong types
// and a scalar for a list refused), then validated whole: names, duplicates, programs,
// parameter schemas and argv templates. The first problem is returned, naming its field:
//   tools.json: commandTools[1].argv[2]: placeholder {pth} names no parameter
#ifndef BROKER_GATEWAY_TOOL_CONFIG_H_
#define BROKER_GATEWAY_TOOL_CONFIG_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "airlock/v1/tools.pb.h"

namespace airlock::broker {

// Parses and validates; errors are INVALID_ARGUMENT prefixed with `origin`.
[[nodiscard]] absl::StatusOr<v1::ToolsConfig> ParseToolsConfig(absl::string_view json,
                                                               absl::string_view origin);

// Reads `path` (a regular file, not a link, at most 1 MiB, not writable by group or others)
// and parses it. NotFound when it does not exist.
[[nodiscard]] absl::StatusOr<v1::ToolsConfig> LoadToolsConfig(const std::string& path);

// Whether `name` may name a command tool or an MCP server: [a-z0-9_-]{1,64}.
bool IsDeclaredName(absl::string_view name);

// The built-in tools a declared name may not shadow.
bool IsBuiltinToolName(absl::string_view name);

}  // namespace airlock::broker

#endif  // BROKER_GATEWAY_TOOL_CONFIG_H_
