// The worker-side client library: opens its own channel through the connector named by
// AIRLOCK_FD, performs the handshake, and makes calls. One client per thread of use.
#ifndef WORKER_BROKER_CLIENT_H_
#define WORKER_BROKER_CLIENT_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "airlock/v1/wire.pb.h"
#include "platform/ipc/channel.h"

namespace airlock::worker {

class BrokerClient {
 public:
  // Connects through the connector descriptor in AIRLOCK_FD.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<BrokerClient>> ConnectFromEnvironment(
      std::string client_name);
  // Connects through an explicit connector descriptor.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<BrokerClient>> Connect(
      int connector_fd, std::string client_name);

  // Sends `request` (its id is assigned here) and waits for the response with that id.
  // Events that arrive meanwhile are kept in last_context(). A protocol error from the broker
  // is returned as a status.
  [[nodiscard]] absl::StatusOr<v1::Response> Call(v1::Request request);

  const v1::Context& last_context() const { return context_; }

  // Ends the channel; safe from another thread while Call waits (it then fails). The broker
  // cancels whatever the channel's calls still run.
  void Hangup() { channel_.Shutdown(); }

 private:
  explicit BrokerClient(ScopedFd socket) : channel_(std::move(socket)) {}
  absl::Status Handshake(std::string client_name);

  ipc::Channel channel_;
  uint64_t next_id_ = 1;
  v1::Context context_;
};

}  // namespace airlock::worker

#endif  // WORKER_BROKER_CLIENT_H_
