#include "broker/control/ctl_command.h"

#include <iostream>
#include <memory>

#include "absl/strings/str_join.h"
#include "airlock/v1/control.pb.h"
#include "platform/ipc/private_socket.h"
#include "broker/wire_error.h"
#include "platform/ipc/channel.h"

namespace airlock::broker {
namespace {

struct CtlOptions {
  std::string socket;
  std::string preset;
  std::string server;
};

int Send(const std::string& socket, const v1::ControlRequest& request) {
  absl::StatusOr<ScopedFd> fd = ipc::ConnectSameUser(socket);
  if (!fd.ok()) {
    std::cerr << "airlock ctl: cannot reach the broker: " << fd.status().message() << "\n";
    return 2;
  }
  ipc::Channel channel(std::move(*fd));
  v1::ControlResponse response;
  if (absl::Status status = channel.Send(request); !status.ok()) {
    std::cerr << "airlock ctl: " << status.message() << "\n";
    return 2;
  }
  if (absl::Status status = channel.Receive(&response); !status.ok()) {
    std::cerr << "airlock ctl: no answer from the broker: " << status.message() << "\n";
    return 2;
  }
  const v1::Context& context = response.context();
  if (!response.ok()) {
    std::cerr << "airlock ctl: refused: " << ErrorCodeName(response.code()) << ": "
              << response.message() << "\n";
    return response.code() == v1::BUSY || response.code() == v1::INVALID_ARGUMENT ? 3 : 2;
  }
  if (!response.message().empty()) std::cout << response.message() << "\n";
  std::cout << "session: " << context.session_id() << "\n"
            << "preset: " << PresetName(context.preset()) << "\n"
            << "mode: " << ModeName(context.mode()) << "\n"
            << "roots: " << absl::StrJoin(context.roots(), " ") << "\n"
            << "policy epoch: " << context.policy_epoch() << "\n"
            << "calls in flight: " << response.calls_in_flight() << "\n";
  return 0;
}

}  // namespace

void AddCtlCommand(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<CtlOptions>();
  CLI::App* ctl = app.add_subcommand("ctl", "Operator control of a running broker");
  ctl->add_option("--socket", options->socket, "The broker's --control-socket path")->required();
  ctl->require_subcommand(1);
  CLI::App* preset = ctl->add_subcommand("preset", "Change the preset of the running broker");
  preset->add_option("name", options->preset, "read-only | workspace-write | danger-full-access")
      ->required();
  preset->callback([options, &exit_code] {
    v1::ControlRequest request;
    request.set_set_preset(options->preset);
    exit_code = Send(options->socket, request);
  });
  CLI::App* mcp = ctl->add_subcommand("mcp", "Control the broker's MCP servers");
  mcp->require_subcommand(1);
  CLI::App* disable =
      mcp->add_subcommand("disable", "Refuse every later call to an MCP server and stop it");
  disable->add_option("server", options->server, "The server's name in tools.json")->required();
  disable->callback([options, &exit_code] {
    v1::ControlRequest request;
    request.set_disable_mcp_server(options->server);
    exit_code = Send(options->socket, request);
  });
  CLI::App* status = ctl->add_subcommand("status", "Show the broker's current context");
  status->callback([options, &exit_code] {
    v1::ControlRequest request;
    request.set_status(true);
    exit_code = Send(options->socket, request);
  });
}

}  // namespace airlock::broker
