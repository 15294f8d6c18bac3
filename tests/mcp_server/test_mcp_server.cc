// A small MCP server over stdio for airlock's tests (newline-delimited JSON-RPC 2.0, parsed
// with protobuf's JSON support). Its tools do exactly what they are asked with plain system
// calls and no checks of their own, so that a test proves what the sandbox confines:
//   echo {text}              → text
//   write_file {path, content} → "wrote N bytes to PATH", or isError with strerror
//   read_file {path}         → the content, or isError with strerror
//   sleep {seconds}          → "slept"
// Misbehaviour for the client's tests, by flag:
//   --garbage            answers tools/list with a line that is not JSON
//   --huge-line          answers tools/list with a 5 MiB line
//   --deep               answers tools/list with JSON nested 200000 levels deep
//   --exit-after-init    exits once initialized
//   --wrong-id           answers tools/list with another id
//   --huge-error-code    answers tools/list with an error whose code is -3.2e93
//   --bad-version        asks for protocol version 1999-01-01
//   --server-requests    before each tools/call answer: a notification and a request of its
//                        own (roots/list); the error code of the client's answer is appended
//                        to the tool's text
//   --many-tools=N       N more tools, t0 … t(N-1)
//   --description-bytes=N  those N tools' descriptions are N bytes each
//   --page-size=N        tools/list pages of N tools (nextCursor)
//   --stderr-flood=N     N bytes on stderr before anything else
//   --tag=X              ignored (lets a test find the process)
//   --escape-target=PATH one more tool, escape {}, that writes "escaped" to PATH: no argument
//                        names the path, so only the sandbox stands in its way
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

// The sandbox's seccomp filter forbids ptrace, which LeakSanitizer's exit check needs.
extern "C" const char* __asan_default_options() { return "detect_leaks=0"; }

namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

struct Flags {
  bool garbage = false;
  bool huge_line = false;
  bool deep = false;
  bool exit_after_init = false;
  bool wrong_id = false;
  bool huge_error_code = false;
  bool bad_version = false;
  bool server_requests = false;
  int many_tools = 0;
  long description_bytes = 0;
  int page_size = 0;
  long stderr_flood = 0;
  std::string escape_target;
};

Flags flags;
int server_request_count = 0;

void WriteLine(const std::string& line) {
  std::string out = line + "\n";
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::write(1, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) std::exit(3);
    done += static_cast<size_t>(n);
  }
}

void Send(const Struct& message) {
  std::string line;
  if (!google::protobuf::util::MessageToJsonString(message, &line).ok()) std::exit(4);
  WriteLine(line);
}

Value Str(const std::string& s) {
  Value v;
  v.set_string_value(s);
  return v;
}

std::string GetString(const Struct& s, const char* name) {
  auto it = s.fields().find(name);
  return it != s.fields().end() && it->second.has_string_value() ? it->second.string_value()
                                                                  : std::string();
}

void Answer(const Value& id, const Struct& result) {
  Struct message;
  (*message.mutable_fields())["jsonrpc"] = Str("2.0");
  (*message.mutable_fields())["id"] = id;
  *(*message.mutable_fields())["result"].mutable_struct_value() = result;
  Send(message);
}

void Fail(const Value& id, int code, const std::string& text) {
  Struct message;
  (*message.mutable_fields())["jsonrpc"] = Str("2.0");
  (*message.mutable_fields())["id"] = id;
  Struct* error = (*message.mutable_fields())["error"].mutable_struct_value();
  (*error->mutable_fields())["code"].set_number_value(code);
  (*error->mutable_fields())["message"] = Str(text);
  Send(message);
}

Struct Tool(const std::string& name, const std::string& description,
            std::initializer_list<std::pair<const char*, const char*>> properties) {
  Struct tool;
  (*tool.mutable_fields())["name"] = Str(name);
  (*tool.mutable_fields())["description"] = Str(description);
  Struct* schema = (*tool.mutable_fields())["inputSchema"].mutable_struct_value();
  (*schema->mutable_fields())["type"] = Str("object");
  Struct* props = (*schema->mutable_fields())["properties"].mutable_struct_value();
  for (const auto& [prop, type] : properties) {
    (*(*props->mutable_fields())[prop].mutable_struct_value()->mutable_fields())["type"] =
        Str(type);
  }
  return tool;
}

std::vector<Struct> AllTools() {
  std::vector<Struct> tools = {
      Tool("echo", "Returns its text", {{"text", "string"}}),
      Tool("write_file", "Writes a file", {{"path", "string"}, {"content", "string"}}),
      Tool("read_file", "Reads a file", {{"path", "string"}}),
      Tool("sleep", "Sleeps", {{"seconds", "number"}}),
  };
  for (int i = 0; i < flags.many_tools; ++i) {
    tools.push_back(Tool("t" + std::to_string(i),
                         flags.description_bytes > 0
                             ? std::string(static_cast<size_t>(flags.description_bytes), 'd')
                             : std::string("filler"),
                         {}));
  }
  if (!flags.escape_target.empty()) {
    tools.push_back(Tool("escape", "Writes to the path given on the command line", {}));
  }
  return tools;
}

Struct TextResult(const std::string& text, bool is_error) {
  Struct result;
  Struct* item = (*result.mutable_fields())["content"].mutable_list_value()->add_values()
                     ->mutable_struct_value();
  (*item->mutable_fields())["type"] = Str("text");
  (*item->mutable_fields())["text"] = Str(text);
  (*result.mutable_fields())["isError"].set_bool_value(is_error);
  return result;
}

Struct CallTool(const Struct& params) {
  const std::string name = GetString(params, "name");
  Struct args;
  auto it = params.fields().find("arguments");
  if (it != params.fields().end() && it->second.has_struct_value()) {
    args = it->second.struct_value();
  }
  if (name == "echo") return TextResult(GetString(args, "text"), false);
  if (name == "write_file" || name == "escape") {
    const bool escape = name == "escape";
    const std::string path = escape ? flags.escape_target : GetString(args, "path");
    const std::string content = escape ? std::string("escaped") : GetString(args, "content");
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return TextResult("cannot write " + path + ": " + std::strerror(errno), true);
    const ssize_t n = ::write(fd, content.data(), content.size());
    const int saved = errno;
    ::close(fd);
    if (n < 0) return TextResult("cannot write " + path + ": " + std::strerror(saved), true);
    return TextResult("wrote " + std::to_string(n) + " bytes to " + path, false);
  }
  if (name == "read_file") {
    const std::string path = GetString(args, "path");
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return TextResult("cannot read " + path + ": " + std::strerror(errno), true);
    std::string content;
    char buffer[4096];
    ssize_t n;
    while ((n = ::read(fd, buffer, sizeof(buffer))) > 0) content.append(buffer, n);
    ::close(fd);
    return TextResult(content, false);
  }
  if (name == "sleep") {
    double seconds = 0;
    auto s = args.fields().find("seconds");
    if (s != args.fields().end() && s->second.has_number_value()) seconds = s->second.number_value();
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<long>(seconds * 1000)));
    return TextResult("slept", false);
  }
  if (name.size() > 1 && name[0] == 't') return TextResult("filler", false);
  return TextResult("", false);  // unreachable for known tools; unknown ones are refused below
}

bool KnownTool(const std::string& name) {
  for (const Struct& tool : AllTools()) {
    if (GetString(tool, "name") == name) return true;
  }
  return false;
}

// Sends a notification and a request of our own; returns the client's error code (0: none).
int AskTheClient() {
  Struct note;
  (*note.mutable_fields())["jsonrpc"] = Str("2.0");
  (*note.mutable_fields())["method"] = Str("notifications/message");
  Struct* params = (*note.mutable_fields())["params"].mutable_struct_value();
  (*params->mutable_fields())["level"] = Str("info");
  (*params->mutable_fields())["data"] = Str("working");
  Send(note);
  Struct request;
  const std::string id = "srv-" + std::to_string(++server_request_count);
  (*request.mutable_fields())["jsonrpc"] = Str("2.0");
  (*request.mutable_fields())["id"] = Str(id);
  (*request.mutable_fields())["method"] = Str("roots/list");
  Send(request);
  std::string line;
  if (!std::getline(std::cin, line)) std::exit(5);
  Struct reply;
  if (!google::protobuf::util::JsonStringToMessage(line, &reply).ok()) return -1;
  if (GetString(reply, "id") != id) return -2;
  auto error = reply.fields().find("error");
  if (error == reply.fields().end() || !error->second.has_struct_value()) return 0;
  auto code = error->second.struct_value().fields().find("code");
  return code == error->second.struct_value().fields().end()
             ? -3
             : static_cast<int>(code->second.number_value());
}

void ListTools(const Value& id, const Struct& params) {
  if (flags.garbage) {
    WriteLine("this is not json {");
    return;
  }
  if (flags.huge_line) {
    WriteLine("{\"jsonrpc\":\"2.0\",\"x\":\"" + std::string(5 * 1024 * 1024, 'a') + "\"}");
    return;
  }
  if (flags.deep) {
    WriteLine("{\"a\":" + std::string(200000, '[') + std::string(200000, ']') + "}");
    return;
  }
  if (flags.huge_error_code) {
    Struct message;
    (*message.mutable_fields())["jsonrpc"] = Str("2.0");
    (*message.mutable_fields())["id"] = id;
    Struct* error = (*message.mutable_fields())["error"].mutable_struct_value();
    (*error->mutable_fields())["code"].set_number_value(-3.2e93);
    (*error->mutable_fields())["message"] = Str("huge");
    Send(message);
    return;
  }
  Value answer_id = id;
  if (flags.wrong_id) answer_id.set_number_value(id.number_value() + 1000);
  const std::vector<Struct> tools = AllTools();
  size_t start = 0;
  const std::string cursor = GetString(params, "cursor");
  if (!cursor.empty()) start = std::strtoul(cursor.c_str(), nullptr, 10);
  size_t end = tools.size();
  if (flags.page_size > 0 && start + flags.page_size < end) end = start + flags.page_size;
  Struct result;
  auto* list = (*result.mutable_fields())["tools"].mutable_list_value();
  for (size_t i = start; i < end && i < tools.size(); ++i) {
    *list->add_values()->mutable_struct_value() = tools[i];
  }
  if (end < tools.size()) (*result.mutable_fields())["nextCursor"] = Str(std::to_string(end));
  Answer(answer_id, result);
}

bool ParseFlag(const std::string& arg) {
  auto number = [&](const char* prefix, auto* out) {
    const size_t n = std::strlen(prefix);
    if (arg.compare(0, n, prefix) != 0) return false;
    *out = std::atol(arg.c_str() + n);
    return true;
  };
  if (arg == "--garbage") return flags.garbage = true;
  if (arg == "--huge-line") return flags.huge_line = true;
  if (arg == "--deep") return flags.deep = true;
  if (arg == "--exit-after-init") return flags.exit_after_init = true;
  if (arg == "--wrong-id") return flags.wrong_id = true;
  if (arg == "--huge-error-code") return flags.huge_error_code = true;
  if (arg == "--bad-version") return flags.bad_version = true;
  if (arg == "--server-requests") return flags.server_requests = true;
  if (arg.rfind("--tag=", 0) == 0) return true;
  if (arg.rfind("--escape-target=", 0) == 0) {
    flags.escape_target = arg.substr(std::strlen("--escape-target="));
    return !flags.escape_target.empty();
  }
  return number("--many-tools=", &flags.many_tools) || number("--page-size=", &flags.page_size) ||
         number("--description-bytes=", &flags.description_bytes) ||
         number("--stderr-flood=", &flags.stderr_flood);
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (!ParseFlag(argv[i])) {
      std::cerr << "test_mcp_server: unknown flag " << argv[i] << "\n";
      return 2;
    }
  }
  if (flags.stderr_flood > 0) {
    const std::string chunk(65536, 'e');
    for (long left = flags.stderr_flood; left > 0; left -= static_cast<long>(chunk.size())) {
      const size_t n = left < static_cast<long>(chunk.size()) ? left : chunk.size();
      if (::write(2, chunk.data(), n) < 0) return 6;
    }
  }
  std::string line;
  while (std::getline(std::cin, line)) {
    Struct message;
    if (!google::protobuf::util::JsonStringToMessage(line, &message).ok()) {
      std::cerr << "test_mcp_server: not JSON: " << line << "\n";
      return 1;
    }
    const std::string method = GetString(message, "method");
    auto id_it = message.fields().find("id");
    Struct params;
    auto p = message.fields().find("params");
    if (p != message.fields().end() && p->second.has_struct_value()) {
      params = p->second.struct_value();
    }
    if (id_it == message.fields().end()) {  // a notification
      if (method == "notifications/initialized" && flags.exit_after_init) return 0;
      continue;
    }
    const Value& id = id_it->second;
    if (method == "initialize") {
      Struct result;
      std::string version = GetString(params, "protocolVersion");
      if (flags.bad_version) version = "1999-01-01";
      (*result.mutable_fields())["protocolVersion"] = Str(version);
      (*(*result.mutable_fields())["capabilities"].mutable_struct_value()->mutable_fields())
          ["tools"].mutable_struct_value();
      Struct* info = (*result.mutable_fields())["serverInfo"].mutable_struct_value();
      (*info->mutable_fields())["name"] = Str("airlock-test-mcp-server");
      (*info->mutable_fields())["version"] = Str("1");
      Answer(id, result);
    } else if (method == "tools/list") {
      ListTools(id, params);
    } else if (method == "tools/call") {
      const std::string name = GetString(params, "name");
      if (!KnownTool(name)) {
        Fail(id, -32602, "Unknown tool: " + name);
        continue;
      }
      Struct result = CallTool(params);
      if (flags.server_requests) {
        const int code = AskTheClient();
        Struct* item = (*result.mutable_fields())["content"]
                           .mutable_list_value()
                           ->mutable_values(0)
                           ->mutable_struct_value();
        const std::string old = GetString(*item, "text");
        (*item->mutable_fields())["text"] =
            Str(old + " [client answered roots/list: " + std::to_string(code) + "]");
      }
      Answer(id, result);
    } else if (method == "ping") {
      Answer(id, Struct());
    } else {
      Fail(id, -32601, "Method not found");
    }
  }
  return 0;
}
