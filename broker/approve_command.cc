#include "broker/approve_command.h"

#include <fcntl.h>
#include <termios.h>
#include <unistd.h>

#include <iostream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "broker/approval/prompt.h"
#include "broker/approval/socket_approver.h"
#include "broker/approval/tty_approver.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "platform/base/fd_io.h"
#include "platform/base/scoped_fd.h"

namespace airlock::broker {
namespace {

constexpr int kCannotConnect = 2;

struct Terminal {
  ScopedFd owned;  // /dev/tty when we have one
  int in = STDIN_FILENO;
  int out = STDOUT_FILENO;
  bool is_tty = false;
};

Terminal OpenTerminal() {
  Terminal t;
  t.owned.reset(::open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (t.owned) {
    t.in = t.owned.get();
    t.out = t.owned.get();
    t.is_tty = true;
  }
  return t;
}

std::string AnswerJson(const Answer& answer) {
  google::protobuf::Struct s;
  (*s.mutable_fields())["approved"].set_bool_value(answer.approved);
  if (answer.approved) {
    (*s.mutable_fields())["scope"].set_string_value(
        answer.scope == Answer::Scope::kSession ? "session" : "once");
  }
  (*s.mutable_fields())["reason"].set_string_value(
      answer.approved ? absl::StrCat(answer.reason, " with airlock approve")
                      : absl::StrCat("denied with airlock approve (", answer.reason, ")"));
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(s, &json);
  return json + "\n";
}

// Serves one request on a fresh connection. Returns false when the loop should end.
bool ServeOne(const std::string& socket_path, Terminal& terminal, bool first, int& exit_code) {
  absl::StatusOr<ScopedFd> connection = ConnectToApprovalSocket(socket_path);
  if (!connection.ok()) {
    if (first) {
      std::cerr << "airlock approve: " << connection.status().message() << "\n";
      exit_code = kCannotConnect;
    } else {
      std::cerr << "airlock approve: the broker stopped listening on " << socket_path << "\n";
    }
    return false;
  }
  if (first) {
    (void)WriteFully(terminal.out,
                     absl::StrCat("airlock approve: waiting for requests on ", socket_path, "\n"),
                     "terminal");
  }
  absl::StatusOr<std::string> line =
      ReadLineUntil(connection->get(), absl::InfiniteFuture(), kMaxApprovalLineBytes);
  if (!line.ok()) return true;  // the broker closed this connection; try the next
  absl::StatusOr<ApprovalRequest> request = RequestFromJson(*line);
  if (!request.ok()) {
    std::cerr << "airlock approve: unreadable request (" << request.status().message()
              << "); answering no\n";
    (void)WriteFully(connection->get(), AnswerJson(Answer::No("unreadable request")),
                     "approval socket");
    return true;
  }
  if (terminal.is_tty) ::tcflush(terminal.in, TCIFLUSH);
  (void)WriteFully(terminal.out,
                   absl::StrCat("\n", RenderPrompt(*request), QuestionFor(*request)), "terminal");
  absl::StatusOr<std::string> typed = ReadLineUntil(terminal.in, absl::InfiniteFuture(), 256);
  const Answer answer = typed.ok() ? AnswerFromTypedLine(*typed, *request, "interactively")
                                   : Answer::No("end of input");
  const bool approved = answer.approved;
  const bool sent = WriteFully(connection->get(), AnswerJson(answer), "approval socket").ok();
  (void)WriteFully(terminal.out,
                   sent ? (approved ? "approved\n" : "denied\n")
                        : "the broker no longer waits for this answer (timed out)\n",
                   "terminal");
  return typed.ok();  // end of input ends the loop
}

}  // namespace

void AddApproveCommand(CLI::App& app, int& exit_code) {
  auto socket_path = std::make_shared<std::string>();
  CLI::App* command =
      app.add_subcommand("approve", "Answer a headless broker's approval requests (socket:PATH)");
  command->add_option("--socket", *socket_path, "The broker's approval socket")->required();
  command->callback([socket_path, &exit_code] {
    Terminal terminal = OpenTerminal();
    exit_code = 0;
    bool first = true;
    while (ServeOne(*socket_path, terminal, first, exit_code)) first = false;
  });
}

}  // namespace airlock::broker
