// Fuzzes the frame decoder and the wire message parser with arbitrary byte streams: no crash,
// no payload over the cap, and everything decoded re-encodes to the same bytes.
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"

#include "airlock/v1/wire.pb.h"
#include "platform/ipc/frame_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr uint32_t kCap = 1 << 16;
  airlock::ipc::FrameDecoder decoder(kCap);
  const std::string input(reinterpret_cast<const char*>(data), size);
  // Feed in uneven pieces to exercise reassembly.
  size_t at = 0;
  size_t piece = 1;
  while (at < input.size()) {
    const size_t take = std::min(piece, input.size() - at);
    if (!decoder.Append(absl::string_view(input.data() + at, take)).ok()) {
      return 0;
    }
    at += take;
    piece = piece * 3 % 17 + 1;
    for (;;) {
      auto next = decoder.Next();
      if (!next.ok()) return 0;
      if (!next->has_value()) break;
      const std::string& payload = **next;
      if (payload.size() > kCap) std::abort();
      auto frame = airlock::ipc::EncodeFrame(payload, kCap);
      if (!frame.ok() || frame->substr(4) != payload) std::abort();
      airlock::v1::ClientMessage message;
      if (message.ParseFromString(payload)) {
        std::string again;
        if (!message.SerializeToString(&again)) std::abort();
      }
    }
  }
  return 0;
}
