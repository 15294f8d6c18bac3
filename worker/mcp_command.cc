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
#include <system_error>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "platform/base/fd_io.h"
#include "worker/broker_client.h"
#include "worker/mcp_bridge.h"
#include "worker/mcp_line_reader.h"

namespace airlock::worker {
namespace {

// Calls running at once; one more is answered at once that it was not started (the reader
// never waits, so a cancel or a ping always gets through).
constexpr size_t kMaxCallsInFlight = 32;

// One tools/call on its own thread and channel.
struct RunningCall {
  std::string id_key;
  std::thread thread;                // joined by the reading thread once done
  bool done = false;                 // guarded by Session::mutex
  bool cancelled = false;            // guarded by Session::mutex
  BrokerClient* client = nullptr;    // guarded by Session::mutex; while its Call runs
};

class Session {
 public:
  void Send(const std::string& line) {
    std::lock_guard<std::mutex> lock(output_mutex_);
    // A client that went away: its lines are lost with it; stdin's end ends the session.
    (void)WriteFully(STDOUT_FILENO, line + "\n", "stdout");
  }

  void Handle(absl::string_view line) {
    McpIncoming incoming = ReadMcpLine(line);
    if (incoming.answer.has_value()) Send(*incoming.answer);
    if (incoming.cancelled.has_value()) Cancel(*incoming.cancelled);
    if (incoming.call.has_value()) Start(*std::move(incoming.call));
  }

  // Every call started is answered (or dropped, when cancelled) before the session ends.
  void Finish() {
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [this] {
      for (const auto& call : calls_) {
        if (!call->done) return false;
      }
      return true;
    });
    std::list<std::shared_ptr<RunningCall>> calls = std::move(calls_);
    lock.unlock();
    for (const auto& call : calls) call->thread.join();
  }

 private:
  void Cancel(const std::string& id_key) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& call : calls_) {
      if (call->id_key != id_key || call->done) continue;
      call->cancelled = true;
      if (call->client != nullptr) call->client->Hangup();
    }
  }

  void Start(McpToolCall tool_call) {
    std::list<std::shared_ptr<RunningCall>> ended;
    auto call = std::make_shared<RunningCall>();
    call->id_key = tool_call.id_key;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto it = calls_.begin(); it != calls_.end();) {
        if ((*it)->done) {
          ended.push_back(std::move(*it));
          it = calls_.erase(it);
        } else {
          ++it;
        }
      }
      if (calls_.size() >= kMaxCallsInFlight) {
        Send(McpCallNotStarted(tool_call, absl::StrCat("airlock mcp runs at most ",
                                                       kMaxCallsInFlight,
                                                       " calls at once; try again when one ends")));
        call = nullptr;
      } else {
        calls_.push_back(call);
      }
    }
    for (const auto& done : ended) done->thread.join();  // they have ended their work
    if (call == nullptr) return;
    try {
      std::thread thread([this, call, tool_call]() mutable { Run(*call, std::move(tool_call)); });
      std::lock_guard<std::mutex> lock(mutex_);
      call->thread = std::move(thread);
    } catch (const std::system_error& failure) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        calls_.remove(call);
      }
      Send(McpCallNotStarted(tool_call,
                             absl::StrCat("airlock mcp cannot start a thread now (",
                                          failure.what(), ")")));
    }
  }

  void Run(RunningCall& call, McpToolCall tool_call) {
    const std::string answer = RunMcpToolCall(std::move(tool_call), [&](v1::Request request) {
      return CallOnItsOwnChannel(call, std::move(request));
    });
    std::lock_guard<std::mutex> lock(mutex_);
    // A cancelled call is not answered (MCP); the others are, before they count as done.
    if (!call.cancelled) Send(answer);
    call.done = true;
    finished_.notify_all();
  }

  absl::StatusOr<v1::Response> CallOnItsOwnChannel(RunningCall& call, v1::Request request) {
    auto client = BrokerClient::ConnectFromEnvironment("airlock mcp");
    if (!client.ok()) return client.status();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (call.cancelled) return absl::CancelledError("cancelled by the client");
      call.client = client->get();
    }
    absl::StatusOr<v1::Response> response = (*client)->Call(std::move(request));
    std::lock_guard<std::mutex> lock(mutex_);
    call.client = nullptr;
    return response;
  }

  std::mutex output_mutex_;  // taken inside mutex_, never the other way round
  std::mutex mutex_;
  std::condition_variable finished_;
  std::list<std::shared_ptr<RunningCall>> calls_;  // guarded by mutex_
};

// Reads stdin to its end; 0 at its end, 2 when it cannot be read.
int Serve() {
  Session session;
  McpLineReader reader(kMaxMcpLineBytes,
                       {[&session](absl::string_view line) { session.Handle(line); },
                        [&session] { session.Send(McpLineTooLong()); }});
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
    reader.Feed(absl::string_view(chunk, static_cast<size_t>(n)));
  }
  if (status == 0) reader.Finish();
  session.Finish();
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
