#include "worker/mcp_command.h"

#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <iostream>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/string_view.h"
#include "platform/base/fd_io.h"
#include "worker/broker_client.h"
#include "worker/mcp_bridge.h"

namespace airlock::worker {
namespace {

// Calls running at once; the next line is read when one ends.
constexpr size_t kMaxCallsInFlight = 32;

// One tools/call on its own thread and channel.
struct RunningCall {
  std::string id_key;
  bool cancelled = false;            // guarded by Session::mutex
  BrokerClient* client = nullptr;    // guarded by Session::mutex; while its Call runs
};

// Shared by the reading thread and the call threads (which may outlive a return from Serve
// only until they have left the mutex: the session is held by each of them).
struct Session {
  std::mutex mutex;
  std::condition_variable changed;
  std::list<std::shared_ptr<RunningCall>> running;  // guarded by mutex

  std::mutex output_mutex;
  void Send(const std::string& line) {
    std::lock_guard<std::mutex> lock(output_mutex);
    // A client that went away: its lines are lost with it; stdin's end ends the session.
    (void)WriteFully(STDOUT_FILENO, line + "\n", "stdout");
  }

  void Cancel(const std::string& id_key) {
    std::lock_guard<std::mutex> lock(mutex);
    for (const auto& call : running) {
      if (call->id_key != id_key) continue;
      call->cancelled = true;
      if (call->client != nullptr) call->client->Hangup();
    }
  }
};

absl::StatusOr<v1::Response> CallOnItsOwnChannel(Session& session, RunningCall& call,
                                                 v1::Request request) {
  auto client = BrokerClient::ConnectFromEnvironment("airlock mcp");
  if (!client.ok()) return client.status();
  {
    std::lock_guard<std::mutex> lock(session.mutex);
    if (call.cancelled) return absl::CancelledError("cancelled by the client");
    call.client = client->get();
  }
  absl::StatusOr<v1::Response> response = (*client)->Call(std::move(request));
  std::lock_guard<std::mutex> lock(session.mutex);
  call.client = nullptr;
  return response;
}

void Start(const std::shared_ptr<Session>& session, McpToolCall tool_call) {
  auto call = std::make_shared<RunningCall>();
  call->id_key = tool_call.id_key;
  {
    std::unique_lock<std::mutex> lock(session->mutex);
    session->changed.wait(lock, [&] { return session->running.size() < kMaxCallsInFlight; });
    session->running.push_back(call);
  }
  std::thread([session, call, tool_call = std::move(tool_call)] {
    const std::string answer = RunMcpToolCall(tool_call, [&](v1::Request request) {
      return CallOnItsOwnChannel(*session, *call, std::move(request));
    });
    bool cancelled;
    {
      std::lock_guard<std::mutex> lock(session->mutex);
      cancelled = call->cancelled;
    }
    // A cancelled call is not answered (MCP); the others are, before they count as done.
    if (!cancelled) session->Send(answer);
    std::lock_guard<std::mutex> lock(session->mutex);
    session->running.remove(call);
    session->changed.notify_all();
  }).detach();
}

void Handle(const std::shared_ptr<Session>& session, absl::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.find_first_not_of(" \t") == absl::string_view::npos) return;
  McpIncoming incoming = ReadMcpLine(line);
  if (incoming.answer.has_value()) session->Send(*incoming.answer);
  if (incoming.cancelled.has_value()) session->Cancel(*incoming.cancelled);
  if (incoming.call.has_value()) Start(session, *std::move(incoming.call));
}

// Reads stdin to its end, line by line; 0 at its end, 2 when it cannot be read.
int Serve() {
  auto session = std::make_shared<Session>();
  std::string buffer;
  bool skipping = false;  // inside a line longer than kMaxMcpLineBytes
  char chunk[1 << 16];
  int status = 0;
  for (;;) {
    const ssize_t n = ::read(STDIN_FILENO, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::cerr << "airlock mcp: reading stdin failed: " << std::strerror(errno) << "\n";
      status = 2;
      break;
    }
    if (n == 0) break;
    absl::string_view data(chunk, static_cast<size_t>(n));
    while (!data.empty()) {
      const size_t newline = data.find('\n');
      const absl::string_view piece = data.substr(0, newline);
      if (!skipping) buffer.append(piece.data(), piece.size());
      if (!skipping && buffer.size() > kMaxMcpLineBytes) {
        session->Send(McpLineTooLong());
        buffer.clear();
        skipping = true;
      }
      if (newline == absl::string_view::npos) break;
      data.remove_prefix(newline + 1);
      if (!skipping) Handle(session, buffer);
      buffer.clear();
      skipping = false;
    }
  }
  if (status == 0 && !skipping) Handle(session, buffer);  // a last line without a newline
  // Every call started is answered before the server ends.
  std::unique_lock<std::mutex> lock(session->mutex);
  session->changed.wait(lock, [&] { return session->running.empty(); });
  return status;
}

}  // namespace

void AddMcpCommand(CLI::App& app, int& exit_code) {
  CLI::App* mcp = app.add_subcommand(
      "mcp", "MCP stdio server for the agent inside `airlock run`: its tools are broker calls");
  mcp->callback([&exit_code] {
    // Refuse at once, not at the first call, when there is no broker to reach.
    auto probe = BrokerClient::ConnectFromEnvironment("airlock mcp");
    if (!probe.ok()) {
      std::cerr << "airlock mcp: cannot reach the broker: " << probe.status().message() << "\n";
      exit_code = 2;
      return;
    }
    probe->reset();
    exit_code = Serve();
  });
}

}  // namespace airlock::worker
