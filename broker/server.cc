#include "broker/server.h"

#include <sys/socket.h>

#include <sys/time.h>

#include <cstdlib>
#include <map>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "broker/after_reply.h"
#include "broker/wire_error.h"
#include "platform/base/logging.h"
#include "platform/ipc/connector.h"
#include "platform/ipc/message_text.h"

namespace airlock::broker {
namespace {

// Sends what the broker says to a client, its text made valid UTF-8 first (message_text.h).
absl::Status SendToClient(ipc::Channel& channel, v1::BrokerMessage& message) {
  ipc::EscapeInvalidUtf8Strings(&message);
  return channel.Send(message);
}

}  // namespace

absl::Duration DefaultChannelSendTimeout() {
  constexpr int kDefaultSeconds = 30;
  const char* value = std::getenv("AIRLOCK_CHANNEL_SEND_TIMEOUT_SECONDS");
  if (value == nullptr) return absl::Seconds(kDefaultSeconds);
  char* end = nullptr;
  const long seconds = std::strtol(value, &end, 10);
  if (end == value || *end != '\0' || seconds < 1 || seconds > 3600) {
    AIRLOCK_LOG(kWarning, "AIRLOCK_CHANNEL_SEND_TIMEOUT_SECONDS=", value,
                " ignored (expected 1..3600); using ", kDefaultSeconds, " s");
    return absl::Seconds(kDefaultSeconds);
  }
  return absl::Seconds(seconds);
}

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
      // A flood of bad messages must not flood stderr: the first ten, then every 1000th.
      ++refused_connector_messages_;
      if (refused_connector_messages_ <= 10 || refused_connector_messages_ % 1000 == 0) {
        AIRLOCK_LOG(kWarning, "refused a connector message (", refused_connector_messages_,
                    " so far): ", channel.status().message());
      }
      continue;
    }
    ServeChannelAsync(std::move(*channel));
  }
}

void Server::ServeChannelAsync(ScopedFd fd) {
  // Every send to the peer is bounded in time: a peer that does not read loses its channel.
  const timeval timeout = absl::ToTimeval(options_.send_timeout);
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  auto channel = std::make_shared<ipc::Channel>(std::move(fd));
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopping_) return;
  if (channels_.size() >= options_.max_channels) {
    AIRLOCK_LOG(kWarning, "channel limit of ", options_.max_channels,
                " reached; closing a new channel");
    CloseWithProtocolError(*channel, 0,
                           absl::ResourceExhaustedError(absl::StrCat(
                               "too many channels (limit ", options_.max_channels, ")")),
                           v1::BUSY);
    return;
  }
  const uint64_t channel_id = next_channel_id_++;
  try {
    std::thread([this, channel, channel_id] {
      ServeChannel(channel, channel_id);
      std::lock_guard<std::mutex> lock(mutex_);
      channels_.erase(channel);
      greeted_.erase(channel);
      if (--running_threads_ == 0) all_closed_.notify_all();
    }).detach();
  } catch (const std::system_error& failure) {
    AIRLOCK_LOG(kWarning, "cannot start a thread for a new channel: ", failure.what());
    CloseWithProtocolError(*channel, channel_id,
                           absl::ResourceExhaustedError(absl::StrCat(
                               "the broker cannot serve another channel now (", failure.what(),
                               ")")),
                           v1::BUSY);
    return;
  }
  channels_.insert(channel);
  ++running_threads_;
}

void Server::DropChannel(ipc::Channel& channel, uint64_t channel_id, const absl::Status& why) {
  if (absl::IsResourceExhausted(why) || absl::IsUnavailable(why) ||
      absl::IsDeadlineExceeded(why)) {
    AIRLOCK_LOG(kWarning, "channel ", channel_id, " dropped: ", why.message());
  }
  dispatcher_.RecordProtocolError(
      channel_id, absl::StrCat("answer not delivered, closing this channel (the peer stopped "
                               "reading for ", absl::FormatDuration(options_.send_timeout),
                               ", or left): ", why.message()));
  channel.Shutdown();
}

void Server::CloseWithProtocolError(ipc::Channel& channel, uint64_t channel_id,
                                    const absl::Status& why, v1::ErrorCode code) {
  dispatcher_.RecordProtocolError(channel_id, why.message());
  v1::BrokerMessage message;
  v1::Error* error = message.mutable_protocol_error();
  error->set_code(code != v1::ERROR_CODE_UNSPECIFIED ? code : WireCodeOf(why));
  error->set_message(absl::StrCat("protocol error, closing this channel: ", why.message()));
  // Best effort: the peer may already be gone.
  (void)SendToClient(channel, message);
  channel.Shutdown();
}

namespace {

// The calls of one channel that run beside its reader, so that cancel can reach them.
class ChannelCalls {
 public:
  // Registers a call; false when `limit` calls already run.
  std::shared_ptr<CancelToken> Start(uint64_t id, size_t limit) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (tokens_.size() >= limit || tokens_.count(id) != 0) return nullptr;
    auto token = std::make_shared<CancelToken>();
    tokens_[id] = token;
    return token;
  }
  void Finish(uint64_t id) {
    std::lock_guard<std::mutex> lock(mutex_);
    tokens_.erase(id);
    done_.notify_all();
  }
  bool Cancel(uint64_t id) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = tokens_.find(id);
    if (it == tokens_.end()) return false;
    it->second->Cancel();
    return true;
  }
  // Cancels everything still running and waits for it: a channel's calls end with it.
  void CancelAllAndWait() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (auto& [id, token] : tokens_) token->Cancel();
    done_.wait(lock, [this] { return tokens_.empty(); });
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_;
  std::map<uint64_t, std::shared_ptr<CancelToken>> tokens_;
};

}  // namespace

void Server::ServeChannel(std::shared_ptr<ipc::Channel> channel, uint64_t channel_id) {
  v1::ClientMessage message;
  absl::Status status = channel->Receive(&message);
  if (!status.ok()) {
    if (!absl::IsOutOfRange(status)) CloseWithProtocolError(*channel, channel_id, status);
    return;
  }
  if (!message.has_hello()) {
    CloseWithProtocolError(*channel, channel_id,
                           absl::InvalidArgumentError("the first message must be hello"));
    return;
  }
  if (message.hello().protocol_version() != v1::PROTOCOL_VERSION_1) {
    CloseWithProtocolError(
        *channel, channel_id,
        absl::InvalidArgumentError(absl::StrCat(
            "unsupported protocol version ", message.hello().protocol_version(),
            " (this broker speaks ", static_cast<int>(v1::PROTOCOL_VERSION_1), ")")));
    return;
  }
  {
    v1::BrokerMessage reply;
    reply.mutable_hello_reply()->set_protocol_version(v1::PROTOCOL_VERSION_1);
    *reply.mutable_hello_reply()->mutable_context() = context_();
    if (!SendToClient(*channel, reply).ok()) return;
    std::lock_guard<std::mutex> lock(mutex_);
    greeted_.insert(channel);
  }
  ChannelCalls calls;
  for (;;) {
    message.Clear();
    status = channel->Receive(&message);
    if (!status.ok()) {
      if (!absl::IsOutOfRange(status)) CloseWithProtocolError(*channel, channel_id, status);
      break;
    }
    if (!message.has_request()) {
      CloseWithProtocolError(*channel, channel_id, absl::InvalidArgumentError("expected a request"));
      break;
    }
    const v1::Request& request = message.request();
    v1::BrokerMessage reply;
    if (request.has_cancel()) {
      reply.mutable_response()->set_id(request.id());
      reply.mutable_response()->mutable_cancel()->set_found(calls.Cancel(request.cancel().target_id()));
    } else if (request.has_bash() || request.has_call_tool()) {
      // Commands and tool calls run beside the channel's loop, so that a cancel can reach them.
      std::shared_ptr<CancelToken> token =
          calls.Start(request.id(), options_.max_concurrent_calls_per_channel);
      if (token == nullptr) {
        reply.mutable_response()->set_id(request.id());
        *reply.mutable_response()->mutable_error() = ToWireError(
            WireError(v1::BUSY, absl::StrCat("request ", request.id(), " refused: ",
                                             options_.max_concurrent_calls_per_channel,
                                             " commands already run on this channel, or the id "
                                             "is in use")),
            context_().preset());
      } else {
        try {
          std::thread([this, channel, channel_id, request, token, &calls] {
            {
              // What the call leaves for after its reply (the shell's mask release) runs when
              // this scope ends: once the reply is sent, before the call counts as finished
              // (a channel closing waits for it).
              AfterReply::Scope after_reply;
              v1::BrokerMessage done;
              *done.mutable_response() = dispatcher_.Handle(request, channel_id, token.get());
              if (absl::Status sent = SendToClient(*channel, done); !sent.ok()) {
                DropChannel(*channel, channel_id, sent);
              }
            }
            calls.Finish(request.id());
          }).detach();
          continue;
        } catch (const std::system_error& failure) {
          calls.Finish(request.id());
          reply.mutable_response()->set_id(request.id());
          *reply.mutable_response()->mutable_error() = ToWireError(
              WireError(v1::BUSY, absl::StrCat("request ", request.id(),
                                               " refused: the broker cannot start a command "
                                               "thread now (", failure.what(), ")")),
              context_().preset());
        }
      }
    } else {
      *reply.mutable_response() = dispatcher_.Handle(request, channel_id, nullptr);
    }
    if (absl::Status sent = SendToClient(*channel, reply); !sent.ok()) {
      DropChannel(*channel, channel_id, sent);
      break;
    }
  }
  calls.CancelAllAndWait();
}

void Server::Broadcast(const v1::Event& event) {
  v1::BrokerMessage message;
  *message.mutable_event() = event;
  // Sent outside the lock: a channel whose peer stopped reading blocks for at most the send
  // timeout and is then shut down, without holding up new channels meanwhile.
  std::vector<std::shared_ptr<ipc::Channel>> targets;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    targets.assign(greeted_.begin(), greeted_.end());
  }
  ipc::EscapeInvalidUtf8Strings(&message);
  for (const auto& channel : targets) {
    if (!channel->Send(message).ok()) channel->Shutdown();
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
