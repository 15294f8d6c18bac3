#include "worker/broker_client.h"

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "platform/base/status_macros.h"
#include "platform/ipc/connector.h"
#include "platform/ipc/message_text.h"

namespace airlock::worker {

absl::StatusOr<std::unique_ptr<BrokerClient>> BrokerClient::ConnectFromEnvironment(
    std::string client_name) {
  const char* value = std::getenv("AIRLOCK_FD");
  int fd = -1;
  if (value == nullptr || !absl::SimpleAtoi(value, &fd) || fd < 0) {
    return absl::FailedPreconditionError(
        "AIRLOCK_FD is not set: run this under `airlock run` so it can reach the broker");
  }
  return Connect(fd, std::move(client_name));
}

absl::StatusOr<std::unique_ptr<BrokerClient>> BrokerClient::Connect(int connector_fd,
                                                                    std::string client_name) {
  AIRLOCK_ASSIGN_OR_RETURN(ScopedFd socket, ipc::OpenChannel(connector_fd));
  std::unique_ptr<BrokerClient> client(new BrokerClient(std::move(socket)));
  AIRLOCK_RETURN_IF_ERROR(client->Handshake(std::move(client_name)));
  return client;
}

absl::Status BrokerClient::Handshake(std::string client_name) {
  v1::ClientMessage hello;
  hello.mutable_hello()->set_protocol_version(v1::PROTOCOL_VERSION_1);
  hello.mutable_hello()->set_client_name(std::move(client_name));
  // A broker at its channel limit answers and closes without reading: the hello may then fail
  // to send while the refusal is already waiting to be read, so read it either way.
  const absl::Status sent = channel_.Send(hello);
  v1::BrokerMessage reply;
  if (absl::Status received = channel_.Receive(&reply); !received.ok()) {
    return sent.ok() ? received : sent;
  }
  if (reply.has_protocol_error()) {
    return absl::UnavailableError(
        absl::StrCat("broker refused the channel: ", reply.protocol_error().message()));
  }
  if (!reply.has_hello_reply()) return absl::InternalError("broker did not answer the hello");
  context_ = reply.hello_reply().context();
  return absl::OkStatus();
}

absl::StatusOr<v1::Response> BrokerClient::Call(v1::Request request) {
  const uint64_t id = next_id_++;
  request.set_id(id);
  v1::ClientMessage message;
  *message.mutable_request() = std::move(request);
  // Not sent: the broker would refuse the whole channel for it, saying less.
  AIRLOCK_RETURN_IF_ERROR(ipc::CheckUtf8Strings(message));
  AIRLOCK_RETURN_IF_ERROR(channel_.Send(message));
  for (;;) {
    v1::BrokerMessage reply;
    AIRLOCK_RETURN_IF_ERROR(channel_.Receive(&reply));
    if (reply.has_protocol_error()) {
      return absl::InternalError(
          absl::StrCat("broker closed the channel: ", reply.protocol_error().message()));
    }
    if (reply.has_event()) {
      if (reply.event().has_permission_changed()) {
        context_ = reply.event().permission_changed().context();
      }
      continue;
    }
    if (reply.has_response() && reply.response().id() == id) return reply.response();
    return absl::InternalError("broker answered a request this client did not make");
  }
}

}  // namespace airlock::worker
