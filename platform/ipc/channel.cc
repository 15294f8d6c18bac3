#include "platform/ipc/channel.h"

#include <sys/socket.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "platform/base/status_macros.h"
#include "platform/ipc/socket_io.h"

namespace airlock::ipc {
namespace {

constexpr size_t kReadChunkBytes = 64 * 1024;

}  // namespace

absl::Status Channel::SendFrame(absl::string_view payload, absl::Span<const int> fds) {
  AIRLOCK_ASSIGN_OR_RETURN(std::string frame, EncodeFrame(payload, max_payload_));
  std::lock_guard<std::mutex> lock(send_mutex_);
  return SendWithDescriptors(socket_.get(), frame, fds);
}

absl::StatusOr<Frame> Channel::ReceiveFrame(size_t max_fds) {
  Frame frame;
  char chunk[kReadChunkBytes];
  for (;;) {
    AIRLOCK_ASSIGN_OR_RETURN(std::optional<std::string> payload, decoder_.Next());
    if (payload.has_value()) {
      frame.payload = std::move(*payload);
      return frame;
    }
    // Never read past the current frame: its header is validated before its payload arrives.
    const size_t want = std::min(decoder_.bytes_wanted(), sizeof(chunk));
    AIRLOCK_ASSIGN_OR_RETURN(Received received,
                             ReceiveWithDescriptors(socket_.get(), absl::MakeSpan(chunk, want),
                                                    max_fds - std::min(max_fds, frame.fds.size())));
    for (ScopedFd& fd : received.fds) frame.fds.push_back(std::move(fd));
    if (received.bytes == 0) {
      if (decoder_.buffered() == 0) return absl::OutOfRangeError("channel closed by peer");
      return absl::DataLossError(absl::StrCat("channel closed in the middle of a frame (",
                                              decoder_.buffered(), " bytes buffered)"));
    }
    AIRLOCK_RETURN_IF_ERROR(decoder_.Append(absl::string_view(chunk, received.bytes)));
  }
}

absl::Status Channel::Send(const google::protobuf::MessageLite& message) {
  std::string payload;
  if (!message.SerializeToString(&payload)) {
    return absl::InternalError(absl::StrCat("cannot serialize ", message.GetTypeName()));
  }
  return SendFrame(payload);
}

absl::Status Channel::Receive(google::protobuf::MessageLite* message) {
  AIRLOCK_ASSIGN_OR_RETURN(Frame frame, ReceiveFrame(0));
  if (!message->ParseFromString(frame.payload)) {
    return absl::InvalidArgumentError(absl::StrCat("malformed ", message->GetTypeName(), " (",
                                                   frame.payload.size(), " bytes)"));
  }
  return absl::OkStatus();
}

void Channel::Shutdown() { ::shutdown(socket_.get(), SHUT_RDWR); }

}  // namespace airlock::ipc
