// A framed, bidirectional message channel over a connected stream socket. Receiving is for one
// thread at a time; sending is serialized internally so responses and events never interleave.
#ifndef PLATFORM_IPC_CHANNEL_H_
#define PLATFORM_IPC_CHANNEL_H_

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "google/protobuf/message_lite.h"
#include "platform/base/scoped_fd.h"
#include "platform/ipc/frame_codec.h"

namespace airlock::ipc {

struct Frame {
  std::string payload;
  std::vector<ScopedFd> fds;
};

class Channel {
 public:
  explicit Channel(ScopedFd socket, uint32_t max_payload = kMaxFramePayloadBytes)
      : socket_(std::move(socket)), decoder_(max_payload), max_payload_(max_payload) {}

  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  int fd() const { return socket_.get(); }

  // Sends one frame, with `fds` attached to its first byte.
  [[nodiscard]] absl::Status SendFrame(absl::string_view payload, absl::Span<const int> fds = {});
  // Receives one frame carrying at most `max_fds` descriptors. A clean close between frames is
  // OutOfRange; a close mid-frame is DataLoss; an oversized announcement is ResourceExhausted.
  // After any error the channel is unusable for receiving.
  [[nodiscard]] absl::StatusOr<Frame> ReceiveFrame(size_t max_fds = 0);

  // Protobuf conveniences. A payload that does not parse is InvalidArgument.
  [[nodiscard]] absl::Status Send(const google::protobuf::MessageLite& message);
  [[nodiscard]] absl::Status Receive(google::protobuf::MessageLite* message);

  // Wakes a thread blocked in ReceiveFrame (it sees OutOfRange) and stops further sends.
  void Shutdown();

 private:
  ScopedFd socket_;
  FrameDecoder decoder_;
  uint32_t max_payload_;
  std::mutex send_mutex_;
};

}  // namespace airlock::ipc

#endif  // PLATFORM_IPC_CHANNEL_H_
