#include "worker/tool_command.h"

#include <unistd.h>

#include <iostream>
#include <memory>
#include <string>

#include "platform/base/fd_io.h"
#include "worker/broker_client.h"
#include "worker/tool_output.h"

namespace airlock::worker {
namespace {

// The most `airlock tool write` reads from stdin; the broker enforces its own bound too.
constexpr size_t kMaxStdinBytes = 16u << 20;

struct ToolOptions {
  std::string path;
  uint64_t offset = 0;
  uint64_t limit = 0;
  std::string old_string;
  std::string new_string;
  bool replace_all = false;
  std::string command;
  std::string cwd;
  uint32_t timeout_seconds = 0;
  bool escalate = false;
  std::string justification;
  std::string tool_name;
  std::string arguments_json;
};

int Finish(const ToolOutput& output) {
  std::cout << output.json << "\n" << std::flush;
  return output.exit_code;
}

int CallBroker(v1::Request request) {
  auto client = BrokerClient::ConnectFromEnvironment("airlock tool");
  if (!client.ok()) return Finish(RenderLocalFailure(client.status()));
  auto response = (*client)->Call(std::move(request));
  if (!response.ok()) return Finish(RenderLocalFailure(response.status()));
  return Finish(RenderResponse(*response));
}

}  // namespace

void AddToolCommand(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<ToolOptions>();
  CLI::App* tool = app.add_subcommand("tool", "Call the broker from inside the worker");
  tool->require_subcommand(1);

  CLI::App* read = tool->add_subcommand("read", "Read a file");
  read->add_option("path", options->path)->required();
  read->add_option("--offset", options->offset, "Byte offset");
  read->add_option("--limit", options->limit, "At most this many bytes");
  read->callback([options, &exit_code] {
    v1::Request request;
    request.mutable_read()->set_path(options->path);
    request.mutable_read()->set_offset(options->offset);
    request.mutable_read()->set_limit(options->limit);
    exit_code = CallBroker(std::move(request));
  });

  CLI::App* write = tool->add_subcommand("write", "Write a file (content on stdin)");
  write->add_option("path", options->path)->required();
  write->add_option("--justification", options->justification, "Shown to the approver");
  write->callback([options, &exit_code] {
    auto content = ReadToEnd(STDIN_FILENO, kMaxStdinBytes, "stdin");
    if (!content.ok()) {
      exit_code = Finish(RenderLocalFailure(content.status()));
      return;
    }
    v1::Request request;
    request.mutable_write()->set_path(options->path);
    request.mutable_write()->set_content(std::move(*content));
    request.mutable_write()->set_justification(options->justification);
    exit_code = CallBroker(std::move(request));
  });

  CLI::App* edit = tool->add_subcommand("edit", "Replace an exact string in a file");
  edit->add_option("path", options->path)->required();
  edit->add_option("--old", options->old_string, "The exact text to replace")->required();
  edit->add_option("--new", options->new_string, "The replacement")->required();
  edit->add_flag("--all", options->replace_all, "Replace every occurrence");
  edit->add_option("--justification", options->justification, "Shown to the approver");
  edit->callback([options, &exit_code] {
    v1::Request request;
    v1::EditRequest* body = request.mutable_edit();
    body->set_path(options->path);
    body->set_old_string(options->old_string);
    body->set_new_string(options->new_string);
    body->set_replace_all(options->replace_all);
    body->set_justification(options->justification);
    exit_code = CallBroker(std::move(request));
  });

  CLI::App* ls = tool->add_subcommand("ls", "List a directory");
  ls->add_option("path", options->path)->required();
  ls->callback([options, &exit_code] {
    v1::Request request;
    request.mutable_list()->set_path(options->path);
    exit_code = CallBroker(std::move(request));
  });

  CLI::App* bash = tool->add_subcommand("bash", "Run a shell command in the broker's sandbox");
  bash->add_option("--command", options->command, "The command line")->required();
  bash->add_option("--cwd", options->cwd, "Working directory (default: the workspace)");
  bash->add_option("--timeout", options->timeout_seconds, "Seconds");
  bash->add_flag("--escalate", options->escalate, "Ask to run without the sandbox");
  bash->add_option("--justification", options->justification, "Why escalation is needed");
  bash->callback([options, &exit_code] {
    v1::Request request;
    v1::BashRequest* body = request.mutable_bash();
    body->set_command(options->command);
    body->set_cwd(options->cwd);
    body->set_timeout_seconds(options->timeout_seconds);
    body->set_sandbox_permissions(options->escalate ? v1::SANDBOX_PERMISSIONS_REQUIRE_ESCALATED
                                                    : v1::SANDBOX_PERMISSIONS_USE_DEFAULT);
    body->set_justification(options->justification);
    exit_code = CallBroker(std::move(request));
  });

  CLI::App* list = tool->add_subcommand(
      "list", "List the declared command tools and MCP tools the broker offers");
  list->callback([&exit_code] {
    v1::Request request;
    request.mutable_list_tools();
    exit_code = CallBroker(std::move(request));
  });

  CLI::App* call = tool->add_subcommand("call", "Call a declared command tool or MCP tool");
  call->add_option("name", options->tool_name, "The tool: NAME, or SERVER.TOOL for MCP tools")
      ->required();
  call->add_option("--args", options->arguments_json, "The arguments as one JSON object");
  call->add_option("--justification", options->justification, "Shown to the approver");
  call->callback([options, &exit_code] {
    v1::Request request;
    v1::CallToolRequest* body = request.mutable_call_tool();
    body->set_name(options->tool_name);
    body->set_arguments_json(options->arguments_json);
    body->set_justification(options->justification);
    exit_code = CallBroker(std::move(request));
  });

  CLI::App* context = tool->add_subcommand("context", "Print the broker's runtime context");
  context->callback([&exit_code] {
    v1::Request request;
    request.mutable_get_context();
    exit_code = CallBroker(std::move(request));
  });
}

}  // namespace airlock::worker
