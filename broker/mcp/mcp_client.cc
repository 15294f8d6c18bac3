#include "broker/mcp/mcp_client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "broker/wire_error.h"
#include "google/protobuf/util/json_util.h"
#include "platform/base/fd_io.h"
#include "platform/base/json_nesting.h"
#include "platform/base/status_macros.h"

namespace airlock::broker {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

constexpr char kProtocolVersion[] = "2025-06-18";
// The versions whose tools/list and tools/call we speak (the same shapes in all three).
constexpr const char* kKnownVersions[] = {"2025-06-18", "2025-03-26", "2024-11-05"};
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr char kRule[] = "mcp-protocol";

// Milliseconds left until `deadline`, for poll() (at least 0, rounded up).
int MillisecondsLeft(absl::Time deadline) {
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  const int64_t ms = absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1)));
  return ms > 60 * 60 * 1000 ? 60 * 60 * 1000 : static_cast<int>(ms);
}

Value StringValue(const std::string& s) {
  Value v;
  v.set_string_value(s);
  return v;
}

const Value* Field(const Struct& object, const char* name) {
  auto it = object.fields().find(name);
  return it == object.fields().end() ? nullptr : &it->second;
}

bool IsString(const Value* v) { return v != nullptr && v->kind_case() == Value::kStringValue; }
bool IsObject(const Value* v) { return v != nullptr && v->kind_case() == Value::kStructValue; }

bool ValidToolName(const std::string& name, size_t max_bytes) {
  if (name.empty() || name.size() > max_bytes) return false;
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

// Shortened for messages: a server chooses these strings.
std::string Clip(const std::string& s, size_t max = 200) {
  if (s.size() <= max) return s;
  return absl::StrCat(s.substr(0, max), "…");
}

}  // namespace

absl::StatusOr<std::unique_ptr<McpClient>> McpClient::Connect(int to_server_fd,
                                                             int from_server_fd,
                                                             std::string server_name,
                                                             absl::Duration timeout,
                                                             McpLimits limits) {
  for (const int fd : {to_server_fd, from_server_fd}) {
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
      return WireError(v1::INTERNAL, absl::StrCat("MCP server '", server_name,
                                                  "': its pipes are not usable"));
    }
  }
  std::unique_ptr<McpClient> client(
      new McpClient(to_server_fd, from_server_fd, std::move(server_name), limits));
  AIRLOCK_RETURN_IF_ERROR(client->Initialize(timeout));
  return client;
}

absl::Status McpClient::Initialize(absl::Duration timeout) {
  Struct params;
  (*params.mutable_fields())["protocolVersion"] = StringValue(kProtocolVersion);
  (*params.mutable_fields())["capabilities"].mutable_struct_value();
  Struct* info = (*params.mutable_fields())["clientInfo"].mutable_struct_value();
  (*info->mutable_fields())["name"] = StringValue("airlock");
  (*info->mutable_fields())["version"] = StringValue("0.1.0");
  AIRLOCK_ASSIGN_OR_RETURN(Struct result,
                           Request("initialize", std::move(params), timeout, nullptr));
  const Value* version = Field(result, "protocolVersion");
  if (!IsString(version)) return Violation("initialize", "the answer has no protocolVersion");
  bool known = false;
  for (const char* v : kKnownVersions) known |= version->string_value() == v;
  if (!known) {
    return Violation("initialize", absl::StrCat("it wants protocol version '",
                                                Clip(version->string_value(), 40),
                                                "', which airlock does not speak"));
  }
  protocol_version_ = version->string_value();
  Struct note;
  (*note.mutable_fields())["jsonrpc"] = StringValue("2.0");
  (*note.mutable_fields())["method"] = StringValue("notifications/initialized");
  return Send(note, absl::Now() + timeout);
}

absl::StatusOr<std::vector<McpTool>> McpClient::ListTools(absl::Duration timeout) {
  std::vector<McpTool> tools;
  std::set<std::string> names;
  std::set<std::string> cursors;
  std::string cursor;
  size_t listing_bytes = 0;
  for (size_t page = 0;; ++page) {
    if (page == limits_.max_pages) {
      return Violation("tools/list", absl::StrCat("more than ", limits_.max_pages, " pages"));
    }
    Struct params;
    if (!cursor.empty()) (*params.mutable_fields())["cursor"] = StringValue(cursor);
    AIRLOCK_ASSIGN_OR_RETURN(Struct result,
                             Request("tools/list", std::move(params), timeout, nullptr));
    const Value* list = Field(result, "tools");
    if (list == nullptr || list->kind_case() != Value::kListValue) {
      return Violation("tools/list", "the answer has no tools array");
    }
    for (const Value& entry : list->list_value().values()) {
      if (tools.size() == limits_.max_tools) {
        return Violation("tools/list", absl::StrCat("more than ", limits_.max_tools, " tools"));
      }
      if (entry.kind_case() != Value::kStructValue) {
        return Violation("tools/list", "a tool is not an object");
      }
      const Struct& tool = entry.struct_value();
      const Value* name = Field(tool, "name");
      if (!IsString(name)) return Violation("tools/list", "a tool has no name");
      if (!ValidToolName(name->string_value(), limits_.max_tool_name_bytes)) {
        return Violation("tools/list",
                         absl::StrCat("tool name '", Clip(name->string_value(), 60),
                                      "' is not 1-", limits_.max_tool_name_bytes,
                                      " characters of A-Z a-z 0-9 _ - ."));
      }
      if (!names.insert(name->string_value()).second) {
        return Violation("tools/list",
                         absl::StrCat("tool '", name->string_value(), "' is listed twice"));
      }
      const Value* schema = Field(tool, "inputSchema");
      if (!IsObject(schema)) {
        return Violation("tools/list",
                         absl::StrCat("tool '", name->string_value(), "' has no inputSchema"));
      }
      const Value* description = Field(tool, "description");
      if (description != nullptr && !IsString(description)) {
        return Violation("tools/list", absl::StrCat("tool '", name->string_value(),
                                                    "' has a description that is not a string"));
      }
      McpTool out;
      out.name = name->string_value();
      if (description != nullptr) out.description = description->string_value();
      if (!google::protobuf::util::MessageToJsonString(schema->struct_value(),
                                                       &out.input_schema_json)
               .ok()) {
        return Violation("tools/list", absl::StrCat("tool '", out.name,
                                                    "' has an inputSchema that cannot be kept"));
      }
      listing_bytes += out.name.size() + out.description.size() + out.input_schema_json.size();
      if (listing_bytes > limits_.max_listing_bytes) {
        return Broken(WithRule(
            WireError(v1::TOO_LARGE,
                      absl::StrCat("MCP server '", server_name_, "' lists more than ",
                                   limits_.max_listing_bytes,
                                   " bytes of tool names, descriptions and schemas")),
            "mcp-protocol"));
      }
      tools.push_back(std::move(out));
    }
    const Value* next = Field(result, "nextCursor");
    if (next == nullptr || next->kind_case() == Value::kNullValue) break;
    if (!IsString(next) || next->string_value().empty()) {
      return Violation("tools/list", "nextCursor is not a nonempty string");
    }
    if (!cursors.insert(next->string_value()).second) {
      return Violation("tools/list", "nextCursor repeats an earlier one");
    }
    cursor = next->string_value();
  }
  return tools;
}

absl::StatusOr<McpCallResult> McpClient::CallTool(const std::string& tool,
                                                  const Struct& arguments,
                                                  absl::Duration timeout, CancelToken* cancel) {
  Struct params;
  (*params.mutable_fields())["name"] = StringValue(tool);
  *(*params.mutable_fields())["arguments"].mutable_struct_value() = arguments;
  AIRLOCK_ASSIGN_OR_RETURN(Struct result,
                           Request("tools/call", std::move(params), timeout, cancel));
  McpCallResult out;
  const Value* is_error = Field(result, "isError");
  if (is_error != nullptr) {
    if (is_error->kind_case() != Value::kBoolValue) {
      return Violation("tools/call", "isError is not a boolean");
    }
    out.is_error = is_error->bool_value();
  }
  const Value* content = Field(result, "content");
  if (content == nullptr || content->kind_case() != Value::kListValue) {
    return Violation("tools/call", "the answer has no content array");
  }
  std::vector<std::string> texts;
  for (const Value& item : content->list_value().values()) {
    if (item.kind_case() != Value::kStructValue) {
      return Violation("tools/call", "a content item is not an object");
    }
    const Value* type = Field(item.struct_value(), "type");
    if (!IsString(type)) return Violation("tools/call", "a content item has no type");
    if (type->string_value() != "text") continue;  // images, resources: kept in result_json
    const Value* text = Field(item.struct_value(), "text");
    if (!IsString(text)) return Violation("tools/call", "a text content item has no text");
    texts.push_back(text->string_value());
  }
  out.text = absl::StrJoin(texts, "\n");
  if (!google::protobuf::util::MessageToJsonString(result, &out.result_json).ok()) {
    return Violation("tools/call", "the result cannot be re-serialized");
  }
  return out;
}

absl::StatusOr<Struct> McpClient::Request(const std::string& method, Struct params,
                                          absl::Duration timeout, CancelToken* cancel) {
  if (broken_) {
    return WithRule(WireError(v1::INTERNAL, absl::StrCat("MCP server '", server_name_,
                                                         "': the connection is broken (",
                                                         broken_reason_, ")")),
                    kRule);
  }
  const absl::Time deadline = absl::Now() + timeout;
  const int64_t id = next_id_++;
  Struct request;
  (*request.mutable_fields())["jsonrpc"] = StringValue("2.0");
  (*request.mutable_fields())["id"].set_number_value(static_cast<double>(id));
  (*request.mutable_fields())["method"] = StringValue(method);
  *(*request.mutable_fields())["params"].mutable_struct_value() = std::move(params);
  AIRLOCK_RETURN_IF_ERROR(Send(request, deadline));

  for (size_t skipped = 0;; ++skipped) {
    // Buffered lines need no waiting, so the deadline is checked here too: a stream of
    // notifications cannot hold the call past it.
    if (skipped > 0 && absl::Now() >= deadline) {
      return Broken(WithRule(WireError(v1::TIMEOUT, absl::StrCat("MCP server '", server_name_,
                                                                 "' did not answer ", method,
                                                                 " within ",
                                                                 absl::FormatDuration(timeout))),
                             "mcp-timeout"));
    }
    if (skipped > limits_.max_skipped_messages) {
      return Violation(method, absl::StrCat("more than ", limits_.max_skipped_messages,
                                            " other messages before the answer"));
    }
    AIRLOCK_ASSIGN_OR_RETURN(const std::string line, ReadLine(deadline, timeout, cancel, method));
    if (!JsonNestingWithin(line, limits_.max_nesting)) {
      return Violation(method, absl::StrCat("it sent JSON nested more than ", limits_.max_nesting,
                                            " levels deep"));
    }
    Struct message;
    google::protobuf::util::JsonParseOptions options;
    if (!google::protobuf::util::JsonStringToMessage(line, &message, options).ok()) {
      return Violation(method, absl::StrCat("it sent a line that is not a JSON object: ",
                                            Clip(line, 80)));
    }
    const Value* version = Field(message, "jsonrpc");
    if (!IsString(version) || version->string_value() != "2.0") {
      return Violation(method, "a message is not JSON-RPC 2.0");
    }
    const Value* message_id = Field(message, "id");
    const Value* message_method = Field(message, "method");
    if (message_method != nullptr) {
      if (!IsString(message_method)) return Violation(method, "a message's method is no string");
      if (message_id == nullptr) continue;  // a notification (progress, logging, …): ignored
      if (message_id->kind_case() != Value::kStringValue &&
          message_id->kind_case() != Value::kNumberValue) {
        return Violation(method, "a request's id is neither a string nor a number");
      }
      // A request from the server (ping, sampling, roots, elicitation, …): airlock offers the
      // server nothing, so it gets "method not found".
      Struct answer;
      (*answer.mutable_fields())["jsonrpc"] = StringValue("2.0");
      (*answer.mutable_fields())["id"] = *message_id;
      Struct* error = (*answer.mutable_fields())["error"].mutable_struct_value();
      (*error->mutable_fields())["code"].set_number_value(kMethodNotFound);
      (*error->mutable_fields())["message"] = StringValue("Method not found");
      AIRLOCK_RETURN_IF_ERROR(Send(answer, deadline));
      continue;
    }
    if (message_id == nullptr || message_id->kind_case() != Value::kNumberValue ||
        message_id->number_value() != static_cast<double>(id)) {
      return Violation(method, "it answered a request that was not asked (wrong id)");
    }
    const Value* result = Field(message, "result");
    const Value* error = Field(message, "error");
    if ((result == nullptr) == (error == nullptr)) {
      return Violation(method, "an answer must hold exactly one of result and error");
    }
    if (error != nullptr) {
      if (!IsObject(error)) return Violation(method, "the error is not an object");
      const Value* code = Field(error->struct_value(), "code");
      const Value* text = Field(error->struct_value(), "message");
      // An integer a double holds exactly (and an int64_t takes): a server chooses it.
      if (code == nullptr || code->kind_case() != Value::kNumberValue ||
          std::trunc(code->number_value()) != code->number_value() ||
          std::fabs(code->number_value()) > 9007199254740992.0) {
        return Violation(method, "the error has no integer code");
      }
      const double number = code->number_value();
      return WithRule(
          WireError(number == kInvalidParams || number == kMethodNotFound ? v1::INVALID_ARGUMENT
                                                                          : v1::INTERNAL,
                    absl::StrCat("MCP server '", server_name_, "' refused ", method, ": ",
                                 IsString(text) ? Clip(text->string_value()) : "(no message)",
                                 " (JSON-RPC error ", static_cast<int64_t>(number), ")")),
          "mcp-server-error");
    }
    if (!IsObject(result)) return Violation(method, "the result is not an object");
    return result->struct_value();
  }
}

absl::Status McpClient::Send(const Struct& message, absl::Time deadline) {
  std::string line;
  if (!google::protobuf::util::MessageToJsonString(message, &line).ok()) {
    return WireError(v1::INTERNAL, "MCP: a message cannot be serialized");
  }
  // The JSON writer escapes newlines inside strings; the framing relies on it.
  if (line.find('\n') != std::string::npos) {
    return WireError(v1::INTERNAL, "MCP: a serialized message holds a newline");
  }
  line.push_back('\n');
  size_t sent = 0;
  while (sent < line.size()) {
    // A dead server is an EPIPE, never a SIGPIPE that kills the broker.
    const ssize_t n =
        WriteWithoutSigpipe(to_server_fd_, line.data() + sent, line.size() - sent);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      const int wait = MillisecondsLeft(deadline);
      if (wait == 0) {
        return Broken(WithRule(
            WireError(v1::TIMEOUT, absl::StrCat("MCP server '", server_name_,
                                                "' does not read its input")),
            kRule));
      }
      pollfd fd = {to_server_fd_, POLLOUT, 0};
      (void)::poll(&fd, 1, wait);
      continue;
    }
    return Broken(WithRule(
        WireError(v1::INTERNAL, absl::StrCat("MCP server '", server_name_,
                                             "' closed its input (it exited or crashed)")),
        kRule));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> McpClient::ReadLine(absl::Time deadline, absl::Duration timeout,
                                                CancelToken* cancel, const std::string& method) {
  size_t scanned = 0;
  for (;;) {
    const size_t newline = buffer_.find('\n', scanned);
    if (newline != std::string::npos) {
      if (newline > limits_.max_line_bytes) break;  // too long, below
      std::string line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      scanned = 0;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) continue;  // blank lines carry nothing
      return line;
    }
    scanned = buffer_.size();
    if (buffer_.size() > limits_.max_line_bytes) break;
    if (eof_) {
      return Broken(WithRule(
          WireError(v1::INTERNAL, absl::StrCat("MCP server '", server_name_,
                                               "' closed its output during ", method,
                                               " (it exited or crashed)")),
          kRule));
    }
    if (cancel != nullptr && cancel->cancelled()) {
      return Broken(WithRule(WireError(v1::CANCELLED, absl::StrCat("MCP server '", server_name_,
                                                                   "': ", method,
                                                                   " was cancelled")),
                             "cancel"));
    }
    const int wait = MillisecondsLeft(deadline);
    if (wait == 0) {
      return Broken(WithRule(
          WireError(v1::TIMEOUT, absl::StrCat("MCP server '", server_name_, "' did not answer ",
                                              method, " within ",
                                              absl::FormatDuration(timeout))),
          "mcp-timeout"));
    }
    pollfd fds[2] = {{from_server_fd_, POLLIN, 0},
                     {cancel != nullptr ? cancel->wait_fd() : -1, POLLIN, 0}};
    const bool poll_cancel = cancel != nullptr && cancel->wait_fd() < 0;
    const int ready = ::poll(fds, 2, poll_cancel && wait > 50 ? 50 : wait);
    if (ready < 0 && errno != EINTR) {
      return Broken(WireError(v1::INTERNAL, absl::StrCat("MCP server '", server_name_,
                                                         "': poll failed")));
    }
    if (ready <= 0 || fds[0].revents == 0) continue;
    char chunk[65536];
    const ssize_t n = ::read(from_server_fd_, chunk, sizeof(chunk));
    if (n > 0) {
      buffer_.append(chunk, static_cast<size_t>(n));
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
      eof_ = true;
    }
  }
  return Broken(WithRule(
      WireError(v1::TOO_LARGE, absl::StrCat("MCP server '", server_name_, "' sent a line of more "
                                            "than ", limits_.max_line_bytes, " bytes during ",
                                            method, "; the connection is closed")),
      kRule));
}

absl::Status McpClient::Broken(absl::Status status) {
  if (!broken_) {
    broken_ = true;
    broken_reason_ = std::string(status.message());
  }
  return status;
}

absl::Status McpClient::Violation(const std::string& method, const std::string& what) {
  return Broken(WithRule(
      WireError(v1::INTERNAL, absl::StrCat("MCP server '", server_name_,
                                           "' broke the protocol during ", method, ": ", what,
                                           "; the connection is closed")),
      kRule));
}

}  // namespace airlock::broker
