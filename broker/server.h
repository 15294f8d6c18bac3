// The broker's request loop: accepts channels from the connector and serves each on its own
// thread. A protocol violation ends that channel only; the broker keeps serving the others.
#ifndef BROKER_SERVER_H_
#define BROKER_SERVER_H_

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "absl/time/time.h"
#include "airlock/v1/wire.pb.h"
#include "broker/dispatcher.h"
#include "platform/base/scoped_fd.h"
#include "platform/ipc/channel.h"

namespace airlock::broker {

// How long one send to a channel may wait for its peer to read (SPEC §12: a worker that stops
// reading its answers loses its channel instead of pinning a broker thread). 30 s unless the
// broker's environment sets AIRLOCK_CHANNEL_SEND_TIMEOUT_SECONDS (1..3600; the operator's
// knob, tests use it to keep floods short).
absl::Duration DefaultChannelSendTimeout();

struct ServerOptions {
  // Channels served at once; a channel past this gets a protocol error (BUSY, "too many
  // channels (limit 64)") and is closed.
  size_t max_channels = 64;
  absl::Duration send_timeout = DefaultChannelSendTimeout();
  // Long calls (bash) run beside the channel's reader so that a cancel can reach them; at most
  // this many per channel, further ones are answered BUSY.
  size_t max_concurrent_calls_per_channel = 8;
};

class Server {
 public:
  Server(Dispatcher& dispatcher, std::function<v1::Context()> context, ServerOptions options = {})
      : dispatcher_(dispatcher), context_(std::move(context)), options_(options) {}

  // Sends `event` to every channel that has completed its handshake (best effort).
  void Broadcast(const v1::Event& event);
  ~Server() { Stop(); }

  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Starts accepting channels on `connector` (the broker end) in the background.
  void Start(ScopedFd connector);

  // Serves one already-connected channel in the background (tests, control paths).
  void ServeChannelAsync(ScopedFd channel);

  // Stops accepting, closes every channel and waits for all their threads.
  void Stop();

  size_t active_channels() const;

 private:
  void AcceptLoop();
  void ServeChannel(std::shared_ptr<ipc::Channel> channel, uint64_t channel_id);
  // `code` overrides the wire code derived from `why`.
  void CloseWithProtocolError(ipc::Channel& channel, uint64_t channel_id, const absl::Status& why,
                              v1::ErrorCode code = v1::ERROR_CODE_UNSPECIFIED);
  // A send to the channel failed (its peer stopped reading, or left): recorded, channel shut.
  void DropChannel(ipc::Channel& channel, uint64_t channel_id, const absl::Status& why);

  Dispatcher& dispatcher_;
  std::function<v1::Context()> context_;
  const ServerOptions options_;

  ScopedFd connector_;
  std::thread acceptor_;

  mutable std::mutex mutex_;
  std::condition_variable all_closed_;
  std::set<std::shared_ptr<ipc::Channel>> channels_;  // guarded by mutex_
  std::set<std::shared_ptr<ipc::Channel>> greeted_;   // guarded by mutex_; past the handshake
  size_t running_threads_ = 0;                        // guarded by mutex_
  uint64_t next_channel_id_ = 1;                      // guarded by mutex_
  uint64_t refused_connector_messages_ = 0;           // acceptor thread only
  bool stopping_ = false;                             // guarded by mutex_
};

}  // namespace airlock::broker

#endif  // BROKER_SERVER_H_
