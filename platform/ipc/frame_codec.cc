#include "platform/ipc/frame_codec.h"

#include "absl/strings/str_cat.h"

namespace airlock::ipc {
namespace {

// A decoder keeps at most this much buffer capacity between frames.
constexpr size_t kRetainedBufferBytes = 256 * 1024;

uint32_t DecodeLength(absl::string_view header) {
  return static_cast<uint32_t>(static_cast<unsigned char>(header[0])) |
         static_cast<uint32_t>(static_cast<unsigned char>(header[1])) << 8 |
         static_cast<uint32_t>(static_cast<unsigned char>(header[2])) << 16 |
         static_cast<uint32_t>(static_cast<unsigned char>(header[3])) << 24;
}

absl::Status TooLarge(uint64_t length, uint32_t max_payload) {
  return absl::ResourceExhaustedError(absl::StrCat(
      "frame of ", length, " bytes exceeds the limit of ", max_payload, " bytes"));
}

}  // namespace

absl::StatusOr<std::string> EncodeFrame(absl::string_view payload, uint32_t max_payload) {
  if (payload.size() > max_payload) return TooLarge(payload.size(), max_payload);
  std::string frame;
  frame.reserve(kFrameHeaderBytes + payload.size());
  const uint32_t length = static_cast<uint32_t>(payload.size());
  for (int shift = 0; shift < 32; shift += 8) {
    frame.push_back(static_cast<char>((length >> shift) & 0xff));
  }
  frame.append(payload.data(), payload.size());
  return frame;
}

absl::Status FrameDecoder::CheckHeader() {
  if (buffered() < kFrameHeaderBytes) return absl::OkStatus();
  const uint32_t length = DecodeLength(absl::string_view(buffer_).substr(consumed_));
  if (length > max_payload_) return TooLarge(length, max_payload_);
  return absl::OkStatus();
}

absl::Status FrameDecoder::Append(absl::string_view bytes) {
  if (!error_.ok()) return error_;
  if (consumed_ > 0) {
    buffer_.erase(0, consumed_);
    consumed_ = 0;
  }
  buffer_.append(bytes.data(), bytes.size());
  // The header of the frame being assembled is judged as soon as it is complete; later
  // headers are judged by Next() when their frame comes up.
  error_ = CheckHeader();
  if (!error_.ok()) {
    std::string().swap(buffer_);
    return error_;
  }
  // Room for exactly the frame being assembled, not the doubling growth of append (a 20 MiB
  // frame would otherwise take 32 MiB).
  const size_t wanted = bytes_wanted();
  if (wanted > 0 && buffer_.capacity() < buffer_.size() + wanted) {
    buffer_.reserve(buffer_.size() + wanted);
  }
  return error_;
}

size_t FrameDecoder::bytes_wanted() const {
  const size_t have = buffered();
  if (have < kFrameHeaderBytes) return kFrameHeaderBytes - have;
  const uint32_t length = DecodeLength(absl::string_view(buffer_).substr(consumed_));
  const size_t total = kFrameHeaderBytes + static_cast<size_t>(length);
  return total > have ? total - have : 0;
}

absl::StatusOr<std::optional<std::string>> FrameDecoder::Next() {
  if (!error_.ok()) return error_;
  if (buffered() < kFrameHeaderBytes) return std::nullopt;
  absl::string_view rest = absl::string_view(buffer_).substr(consumed_);
  const uint32_t length = DecodeLength(rest);
  if (length > max_payload_) {
    error_ = TooLarge(length, max_payload_);
    return error_;
  }
  if (rest.size() < kFrameHeaderBytes + length) return std::nullopt;
  std::string payload(rest.substr(kFrameHeaderBytes, length));
  consumed_ += kFrameHeaderBytes + length;
  if (consumed_ == buffer_.size() && buffer_.capacity() > kRetainedBufferBytes) {
    // A large frame's buffer is not kept for the life of the channel.
    std::string().swap(buffer_);
    consumed_ = 0;
  }
  return payload;
}

}  // namespace airlock::ipc
