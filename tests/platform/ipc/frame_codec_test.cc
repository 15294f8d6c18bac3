#include "platform/ipc/frame_codec.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace airlock::ipc {
namespace {

using ::airlock::testing::IsOk;
using ::airlock::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Optional;

// The decoder's next payload; "<error>" or "<none>" otherwise.
std::string NextOf(FrameDecoder& decoder) {
  auto next = decoder.Next();
  if (!next.ok()) return "<error>";
  return next->has_value() ? **next : "<none>";
}

std::string Header(uint32_t length) {
  std::string header(4, '\0');
  for (int i = 0; i < 4; ++i) header[i] = static_cast<char>((length >> (8 * i)) & 0xff);
  return header;
}

TEST(FrameCodecTest, RoundTripsPayloads) {
  for (const std::string& payload : {std::string(), std::string("x"), std::string(100000, 'a'),
                                    std::string("\0\xff\n", 3)}) {
    AIRLOCK_ASSERT_OK_AND_ASSIGN(std::string frame, EncodeFrame(payload));
    EXPECT_EQ(frame.size(), kFrameHeaderBytes + payload.size());
    FrameDecoder decoder;
    ASSERT_THAT(decoder.Append(frame), IsOk());
    AIRLOCK_ASSERT_OK_AND_ASSIGN(std::optional<std::string> decoded, decoder.Next());
    EXPECT_THAT(decoded, Optional(payload));
    EXPECT_EQ(decoder.buffered(), 0u);
  }
}

TEST(FrameCodecTest, HeaderIsLittleEndian) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::string frame, EncodeFrame(std::string(258, 'z')));
  EXPECT_EQ(frame.substr(0, 4), Header(258));
}

TEST(FrameCodecTest, DecodesByteByByteAndSeveralFramesAtOnce) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::string a, EncodeFrame("first"));
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::string b, EncodeFrame("second"));
  const std::string stream = a + b;
  FrameDecoder decoder;
  std::vector<std::string> payloads;
  for (char c : stream) {
    ASSERT_THAT(decoder.Append(std::string(1, c)), IsOk());
    AIRLOCK_ASSERT_OK_AND_ASSIGN(std::optional<std::string> next, decoder.Next());
    if (next.has_value()) payloads.push_back(*next);
  }
  EXPECT_THAT(payloads, ::testing::ElementsAre("first", "second"));

  FrameDecoder together;
  ASSERT_THAT(together.Append(stream), IsOk());
  EXPECT_EQ(NextOf(together), "first");
  EXPECT_EQ(NextOf(together), "second");
  EXPECT_EQ(NextOf(together), "<none>");
}

TEST(FrameCodecTest, TruncatedHeaderWaitsForMore) {
  FrameDecoder decoder;
  ASSERT_THAT(decoder.Append(std::string("\x05\x00", 2)), IsOk());
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::optional<std::string> next, decoder.Next());
  EXPECT_FALSE(next.has_value());
  EXPECT_EQ(decoder.buffered(), 2u);
  EXPECT_EQ(decoder.bytes_wanted(), 2u);
}

TEST(FrameCodecTest, TruncatedPayloadWaitsForMore) {
  FrameDecoder decoder;
  ASSERT_THAT(decoder.Append(Header(10) + "abc"), IsOk());
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::optional<std::string> next, decoder.Next());
  EXPECT_FALSE(next.has_value());
  EXPECT_EQ(decoder.bytes_wanted(), 7u);
}

TEST(FrameCodecTest, LengthOverTheCapFailsAtTheHeaderWithoutBuffering) {
  FrameDecoder decoder(/*max_payload=*/1024);
  // A 4 GiB announcement: refused as soon as the header is complete.
  EXPECT_THAT(decoder.Append(Header(0xffffffffu)),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("4294967295")));
  EXPECT_EQ(decoder.buffered(), 0u);
  // The decoder stays failed.
  EXPECT_THAT(decoder.Append("more"), StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(decoder.Next(), StatusIs(absl::StatusCode::kResourceExhausted));
}

TEST(FrameCodecTest, LengthExactlyAtTheCapIsAccepted) {
  FrameDecoder decoder(/*max_payload=*/8);
  ASSERT_THAT(decoder.Append(Header(8) + "12345678"), IsOk());
  EXPECT_EQ(NextOf(decoder), "12345678");
}

TEST(FrameCodecTest, OversizedLaterFrameIsRefusedWhenReached) {
  FrameDecoder decoder(/*max_payload=*/16);
  ASSERT_THAT(decoder.Append(Header(2) + "ok" + Header(17)), IsOk());
  EXPECT_EQ(NextOf(decoder), "ok");
  EXPECT_THAT(decoder.Next(), StatusIs(absl::StatusCode::kResourceExhausted));
}

TEST(FrameCodecTest, EncodeRefusesOversizedPayload) {
  EXPECT_THAT(EncodeFrame(std::string(17, 'x'), 16),
              StatusIs(absl::StatusCode::kResourceExhausted));
}

TEST(FrameCodecTest, GarbageBytesEitherWaitOrFailButNeverCrash) {
  // Deterministic pseudo-random garbage streams.
  uint32_t state = 12345;
  for (int round = 0; round < 200; ++round) {
    FrameDecoder decoder(/*max_payload=*/4096);
    std::string garbage;
    for (int i = 0; i < 64; ++i) {
      state = state * 1103515245u + 12345u;
      garbage.push_back(static_cast<char>(state >> 16));
    }
    if (!decoder.Append(garbage).ok()) continue;
    for (int i = 0; i < 64; ++i) {
      auto next = decoder.Next();
      if (!next.ok() || !next->has_value()) break;
      EXPECT_LE(next->value().size(), 4096u);
    }
  }
}

}  // namespace
}  // namespace airlock::ipc
