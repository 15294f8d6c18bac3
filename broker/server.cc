#include "broker/server.h"

#include <sys/socket.h>

#include "absl/strings/str_cat.h"
#include "broker/wire_error.h"
#include "platform/base/logging.h"
#include "platform/ipc/connector.h"

namespace airlock::broker {

void Server::Start(ScopedFd connector) {
  connector_ = std::move(connector);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

void Server::AcceptLoop() {
  for (;;) {
    absl::StatusOr<ScopedFd> channel = ipc::AcceptChannel(connector_.get());
    if (absl::IsOutOfRange(channel.status())) return;  // no worker holds the connector any more
    if (!channel.ok()) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_) return;
      }
      AIRLOCK_LOG(kWarning, "refused a connector message: ", channel.status().message());
      continue;
    }
    ServeChannelAsync(std::move(*channel));
  }
}

void Server::ServeChannelAsync(ScopedFd fd) {
  auto channel = std::make_shared<ipc::Channel>(std::move(fd));
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopping_) return;
  if (channels_.size() >= options_.max_channels) {
    AIRLOCK_LOG(kWarning, "channel limit of ", options_.max_channels,
                " reached; closing a new channel");
    CloseWithProtocolError(*channel,
                           absl::ResourceExhaustedError(absl::StrCat(
                               "too many channels (limit ", options_.max_channels, ")")));
    return;
  }
  channels_.insert(channel);
  ++running_threads_;
  std::thread([this, channel] {
    ServeChannel(channel);
    std::lock_guard<std::mutex> lock(mutex_);
    channels_.erase(channel);
    if (--running_threads_ == 0) all_closed_.notify_all();
  }).detach();
}

void Server::CloseWithProtocolError(ipc::Channel& channel, const absl::Status& why) {
  v1::BrokerMessage message;
  v1::Error* error = message.mutable_protocol_error();
  error->set_code(WireCodeOf(why));
  error->set_message(absl::StrCat("protocol error, closing this channel: ", why.message()));
  // Best effort: the peer may already be gone.
  (void)channel.Send(message);
  channel.Shutdown();
}

void Server::ServeChannel(std::shared_ptr<ipc::Channel> channel) {
  v1::ClientMessage message;
  absl::Status status = channel->Receive(&message);
  if (!status.ok()) {
    if (!absl::IsOutOfRange(status)) CloseWithProtocolError(*channel, status);
    return;
  }
  if (!message.has_hello()) {
    CloseWithProtocolError(*channel, absl::InvalidArgumentError("the first message must be hello"));
    return;
  }
  if (message.hello().protocol_version() != v1::PROTOCOL_VERSION_1) {
    CloseWithProtocolError(
        *channel, absl::InvalidArgumentError(absl::StrCat(
                      "unsupported protocol version ", message.hello().protocol_version(),
                      " (this broker speaks ", static_cast<int>(v1::PROTOCOL_VERSION_1), ")")));
    return;
  }
  {
    v1::BrokerMessage reply;
    reply.mutable_hello_reply()->set_protocol_version(v1::PROTOCOL_VERSION_1);
    *reply.mutable_hello_reply()->mutable_context() = context_();
    if (!channel->Send(reply).ok()) return;
  }
  for (;;) {
    message.Clear();
    status = channel->Receive(&message);
    if (absl::IsOutOfRange(status)) return;
    if (!status.ok()) {
      CloseWithProtocolError(*channel, status);
      return;
    }
    if (!message.has_request()) {
      CloseWithProtocolError(*channel, absl::InvalidArgumentError("expected a request"));
      return;
    }
    v1::BrokerMessage reply;
    *reply.mutable_response() = dispatcher_.Handle(message.request());
    if (!channel->Send(reply).ok()) return;
  }
}

void Server::Stop() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!stopping_) {
    stopping_ = true;
    if (connector_) ::shutdown(connector_.get(), SHUT_RDWR);
    for (const auto& channel : channels_) channel->Shutdown();
  }
  all_closed_.wait(lock, [this] { return running_threads_ == 0; });
  lock.unlock();
  if (acceptor_.joinable()) acceptor_.join();
}

size_t Server::active_channels() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return channels_.size();
}

}  // namespace airlock::broker
