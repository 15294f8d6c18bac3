// The connector: how any process of the worker tree opens its own channel to the broker.
// The worker inherits one end of a SOCK_SEQPACKET pair (its number is in AIRLOCK_FD). A client
// makes a socketpair and sends one end over the connector: one byte of data, the descriptor in
// SCM_RIGHTS. The broker never writes to the connector.
#ifndef PLATFORM_IPC_CONNECTOR_H_
#define PLATFORM_IPC_CONNECTOR_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "platform/base/scoped_fd.h"

namespace airlock::ipc {

struct ConnectorPair {
  ScopedFd broker_end;
  ScopedFd worker_end;
};

// A new connector pair; both ends close-on-exec (the launcher hands the worker end on).
[[nodiscard]] absl::StatusOr<ConnectorPair> MakeConnector();

// Client side: a new stream channel whose other end now belongs to the broker.
[[nodiscard]] absl::StatusOr<ScopedFd> OpenChannel(int connector_fd);

// Broker side: waits for the next channel. OutOfRange once every worker-side copy of the
// connector is closed. A message that is not exactly one byte with one AF_UNIX stream socket is
// InvalidArgument (everything it carried is closed); the connector stays usable.
[[nodiscard]] absl::StatusOr<ScopedFd> AcceptChannel(int connector_fd);

}  // namespace airlock::ipc

#endif  // PLATFORM_IPC_CONNECTOR_H_
