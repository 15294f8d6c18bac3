// The frame codec: a 4-byte little-endian payload length, then the payload. Pure: no syscalls,
// no descriptors, so it can be fuzzed. The announced length is checked against the cap before
// a single byte of the payload is buffered or allocated.
#ifndef PLATFORM_IPC_FRAME_CODEC_H_
#define PLATFORM_IPC_FRAME_CODEC_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace airlock::ipc {

inline constexpr size_t kFrameHeaderBytes = 4;
// Large enough for a 16 MiB file in a read or write plus its envelope.
inline constexpr uint32_t kMaxFramePayloadBytes = 20u << 20;

// Header followed by payload. A payload over `max_payload` is ResourceExhausted.
[[nodiscard]] absl::StatusOr<std::string> EncodeFrame(
    absl::string_view payload, uint32_t max_payload = kMaxFramePayloadBytes);

// Incremental decoder. Feed bytes as they arrive; take complete payloads with Next().
// After the first error the decoder stays failed and returns that error.
class FrameDecoder {
 public:
  explicit FrameDecoder(uint32_t max_payload = kMaxFramePayloadBytes)
      : max_payload_(max_payload) {}

  // Appends received bytes. Fails once a header announces more than the cap.
  [[nodiscard]] absl::Status Append(absl::string_view bytes);

  // The next complete payload, std::nullopt when more bytes are needed.
  [[nodiscard]] absl::StatusOr<std::optional<std::string>> Next();

  // Bytes buffered but not yet returned (a torn frame at EOF leaves this nonzero).
  size_t buffered() const { return buffer_.size() - consumed_; }

  // How many more bytes complete the frame being assembled (header or payload); reading
  // exactly this many keeps a reader from pulling in bytes of a later frame.
  size_t bytes_wanted() const;

 private:
  absl::Status CheckHeader();

  uint32_t max_payload_;
  std::string buffer_;
  size_t consumed_ = 0;
  absl::Status error_;
};

}  // namespace airlock::ipc

#endif  // PLATFORM_IPC_FRAME_CODEC_H_
