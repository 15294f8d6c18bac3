#include "broker/gateway/tool_config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <map>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "broker/gateway/argv_template.h"
#include "broker/gateway/parameter_schema.h"
#include "broker/session/strict_json.h"
#include "platform/base/errno_status.h"
#include "platform/base/fd_io.h"
#include "platform/base/scoped_fd.h"
#include "platform/base/status_macros.h"

namespace airlock::broker {
namespace {

constexpr size_t kMaxConfigBytes = 1 << 20;
constexpr uint32_t kMaxTimeoutSeconds = 24 * 60 * 60;
constexpr size_t kMaxNameLength = 64;

absl::Status Problem(absl::string_view origin, absl::string_view field,
                     absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(origin, ": ", field, ": ", message));
}


absl::Status CheckName(absl::string_view origin, const std::string& field,
                       const std::string& name) {
  if (!IsDeclaredName(name)) {
    return Problem(origin, field,
                   absl::StrCat("\"", absl::CEscape(name),
                                "\" is not a valid name (1 to 64 of a-z 0-9 _ -)"));
  }
  if (IsBuiltinToolName(name)) {
    return Problem(origin, field, absl::StrCat("\"", name, "\" is a built-in tool"));
  }
  return absl::OkStatus();
}

// A program is absolute, or a bare name looked up in the sandbox's PATH; a relative path
// would depend on the working directory of whoever starts it.
absl::Status CheckProgram(absl::string_view origin, const std::string& field,
                          const std::string& program) {
  if (program.empty()) return Problem(origin, field, "the program is empty");
  if (program.find('\0') != std::string::npos) return Problem(origin, field, "NUL byte");
  if (program[0] != '/' && program.find('/') != std::string::npos) {
    return Problem(origin, field,
                   absl::StrCat("\"", absl::CEscape(program),
                                "\" must be an absolute path or a bare program name"));
  }
  return absl::OkStatus();
}

absl::Status CheckTimeout(absl::string_view origin, const std::string& field, uint32_t seconds) {
  if (seconds > kMaxTimeoutSeconds) {
    return Problem(origin, field, absl::StrCat(seconds, " is more than 86400 seconds"));
  }
  return absl::OkStatus();
}

absl::Status ValidateCommandTool(const v1::CommandTool& tool, const std::string& where,
                                 absl::string_view origin) {
  AIRLOCK_RETURN_IF_ERROR(CheckName(origin, absl::StrCat(where, ".name"), tool.name()));
  auto specs = ParseParameterSchema(tool.parameters());
  if (!specs.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": ", where, ".parameters.", specs.status().message()));
  }
  if (tool.argv().empty()) return Problem(origin, absl::StrCat(where, ".argv"), "is empty");
  for (int i = 0; i < tool.argv_size(); ++i) {
    const std::string field = absl::StrCat(where, ".argv[", i, "]");
    const std::string& element = tool.argv(i);
    if (element.find('\0') != std::string::npos) return Problem(origin, field, "NUL byte");
    auto pieces = ParseTemplateElement(element);
    if (!pieces.ok()) return Problem(origin, field, pieces.status().message());
    if (i == 0) {
      if (pieces->size() != 1 || (*pieces)[0].placeholder) {
        return Problem(origin, field,
                       "the program must be literal text, not filled from arguments");
      }
      AIRLOCK_RETURN_IF_ERROR(CheckProgram(origin, field, (*pieces)[0].text));
      continue;
    }
    const bool whole = pieces->size() == 1 && (*pieces)[0].placeholder;
    for (const TemplatePiece& piece : *pieces) {
      if (!piece.placeholder) continue;
      const ParameterSpec* spec = FindParameter(*specs, piece.text);
      if (spec == nullptr) {
        return Problem(origin, field,
                       absl::StrCat("placeholder {", piece.text, "} names no parameter"));
      }
      if (spec->type == ParameterType::kObject) {
        return Problem(origin, field,
                       absl::StrCat("placeholder {", piece.text,
                                    "} names an object parameter, which has no argv form"));
      }
      if (!whole && spec->type == ParameterType::kArray) {
        return Problem(origin, field,
                       absl::StrCat("placeholder {", piece.text,
                                    "} names an array: arrays expand only as a whole element"));
      }
    }
  }
  return CheckTimeout(origin, absl::StrCat(where, ".timeoutSeconds"), tool.timeout_seconds());
}

absl::Status ValidateMcpServer(const v1::McpServer& server, const std::string& where,
                               absl::string_view origin) {
  AIRLOCK_RETURN_IF_ERROR(CheckName(origin, absl::StrCat(where, ".name"), server.name()));
  AIRLOCK_RETURN_IF_ERROR(CheckProgram(origin, absl::StrCat(where, ".command"), server.command()));
  for (int i = 0; i < server.args_size(); ++i) {
    if (server.args(i).find('\0') != std::string::npos) {
      return Problem(origin, absl::StrCat(where, ".args[", i, "]"), "NUL byte");
    }
  }
  return CheckTimeout(origin, absl::StrCat(where, ".timeoutSeconds"), server.timeout_seconds());
}

absl::Status Validate(const v1::ToolsConfig& config, absl::string_view origin) {
  std::map<std::string, std::string> seen;  // name → the field that declared it first
  auto claim = [&](const std::string& name, const std::string& field) -> absl::Status {
    auto [it, inserted] = seen.emplace(name, field);
    if (!inserted) {
      return Problem(origin, field,
                     absl::StrCat("\"", name, "\" is already declared by ", it->second));
    }
    return absl::OkStatus();
  };
  for (int i = 0; i < config.command_tools_size(); ++i) {
    const std::string where = absl::StrCat("commandTools[", i, "]");
    AIRLOCK_RETURN_IF_ERROR(ValidateCommandTool(config.command_tools(i), where, origin));
    AIRLOCK_RETURN_IF_ERROR(claim(config.command_tools(i).name(), absl::StrCat(where, ".name")));
  }
  for (int i = 0; i < config.mcp_servers_size(); ++i) {
    const std::string where = absl::StrCat("mcpServers[", i, "]");
    AIRLOCK_RETURN_IF_ERROR(ValidateMcpServer(config.mcp_servers(i), where, origin));
    AIRLOCK_RETURN_IF_ERROR(claim(config.mcp_servers(i).name(), absl::StrCat(where, ".name")));
  }
  return absl::OkStatus();
}

}  // namespace

bool IsDeclaredName(absl::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) {
      return false;
    }
  }
  return true;
}

bool IsBuiltinToolName(absl::string_view name) {
  for (absl::string_view builtin :
       {"read", "write", "edit", "list", "ls", "bash", "get_context", "cancel"}) {
    if (name == builtin) return true;
  }
  return false;
}

absl::StatusOr<v1::ToolsConfig> ParseToolsConfig(absl::string_view json,
                                                 absl::string_view origin) {
  v1::ToolsConfig config;
  AIRLOCK_RETURN_IF_ERROR(ParseStrictJson(json, &config, origin));
  AIRLOCK_RETURN_IF_ERROR(Validate(config, origin));
  return config;
}

absl::StatusOr<v1::ToolsConfig> LoadToolsConfig(const std::string& path) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY));
  if (!fd) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    return LastErrnoStatus("open tools configuration", path);
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return LastErrnoStatus("fstat tools configuration", path);
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  }
  // The file decides which programs the broker starts: whoever may change it must be trusted
  // like the broker's owner.
  if (st.st_uid != ::geteuid() && st.st_uid != 0) {
    return absl::PermissionDeniedError(absl::StrCat(
        path, ": owned by uid ", st.st_uid, ", neither this user nor root; refusing to load it"));
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return absl::PermissionDeniedError(
        absl::StrCat(path, ": writable by group or others (mode ",
                     absl::StrFormat("%04o", st.st_mode & 07777), "); refusing to load it"));
  }
  AIRLOCK_ASSIGN_OR_RETURN(std::string json, ReadToEnd(fd.get(), kMaxConfigBytes, path));
  return ParseToolsConfig(json, path);
}

}  // namespace airlock::broker
