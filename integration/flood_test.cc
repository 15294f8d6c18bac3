// Floods against a real `airlock run` broker (SPEC §12): a worker that never reads its answers,
// one that opens channels until refused, one that sends thousands of descriptors, one that
// announces a 4 GiB frame. The broker's memory and descriptors are sampled from /proc during
// the flood and must stay under the bounds documented in the README ("Reliability"); another
// channel keeps being served; the offender gets a clear error or loses its channel.
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/harness.h"
#include "integration/proc_sampler.h"
#include "tests/testing/temp_dir.h"

namespace airlock::integration {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Documented bounds (README, Reliability). ASan's shadow memory and quarantine inflate RSS.
constexpr uint64_t kMaxBrokerRssKiB = (kSanitized ? 400 : 48) * 1024;
// 64 channels, the audit log, the session file, stdio, the connector and a few of the
// runtime's own; a leak of received descriptors would show hundreds.
constexpr uint64_t kMaxBrokerDescriptors = 64 + 32;
constexpr char kSendTimeoutSeconds[] = "2";

class FloodTest : public ::testing::TestWithParam<RunAs> {
 protected:
  void SetUp() override { workspace_.Write("f", "probe content"); }

  // `airlock run` with the stress worker as its agent, sampled while it runs.
  CommandResult RunWorker(const std::vector<std::string>& worker_args, ProcPeaks* peaks) {
    RunOptions options;
    options.run_as = GetParam();
    options.env = {absl::StrCat("AIRLOCK_HOME=", home_.path()),
                   absl::StrCat("HOME=", home_.path()),
                   absl::StrCat("AIRLOCK_CHANNEL_SEND_TIMEOUT_SECONDS=", kSendTimeoutSeconds)};
    options.timeout_seconds = 120;
    ProcSampler sampler;
    options.started = [&sampler](pid_t pid) { sampler.Start(pid); };
    std::vector<std::string> args = {"run",
                                     "--workspace",
                                     workspace_.path(),
                                     "--audit-log",
                                     home_.Child("audit.jsonl"),
                                     "--",
                                     ExecutableFor(GetParam(), STRESS_WORKER)};
    args.insert(args.end(), worker_args.begin(), worker_args.end());
    CommandResult result = RunAirlock(args, options);
    sampler.Stop();
    *peaks = sampler.peaks();
    std::cout << "[ broker ] " << *peaks << "\n[ worker ]\n" << result.out;
    return result;
  }

  void ExpectBounded(const ProcPeaks& peaks) {
    EXPECT_GE(peaks.samples, 1u) << "the broker was not sampled";
    EXPECT_LE(peaks.rss_kib, kMaxBrokerRssKiB) << peaks;
    EXPECT_LE(peaks.descriptors, kMaxBrokerDescriptors) << peaks;
  }

  void ExpectLogVerifies() {
    RunOptions options;
    options.run_as = GetParam();
    options.env = {absl::StrCat("AIRLOCK_HOME=", home_.path())};
    CommandResult verify = RunAirlock(
        {"audit", "verify", home_.Child("audit.jsonl"), "--key-file", home_.Child("audit.key")},
        options);
    EXPECT_EQ(verify.exit_code, 0) << verify;
  }

  std::string AuditLog() const { return testing::ReadFileOrMissing(home_.Child("audit.jsonl")); }

  Scratch workspace_{GetParam()};
  Scratch home_{GetParam()};
};

TEST_P(FloodTest, HundredThousandUnreadRequestsCostOnlyTheirChannel) {
  ProcPeaks peaks;
  CommandResult result = RunWorker({"flood-requests", "100000"}, &peaks);
  ASSERT_EQ(result.exit_code, 0) << result;
  // The broker stopped reading once its answers went unread (backpressure), then dropped the
  // channel after the send timeout: the flood never got all its requests in.
  EXPECT_THAT(result.out, HasSubstr("flood-stalled-at: ")) << result;
  EXPECT_THAT(result.out, Not(HasSubstr("flood-status: all sent"))) << result;
  EXPECT_THAT(result.err, HasSubstr("dropped: sendmsg")) << result;
  // The other channel was served throughout.
  EXPECT_THAT(result.out, HasSubstr("probes-failed: 0")) << result;
  EXPECT_THAT(result.out, Not(HasSubstr("probes-ok: 0\n"))) << result;
  ExpectBounded(peaks);
  EXPECT_THAT(AuditLog(), HasSubstr("answer not delivered, closing this channel"));
  ExpectLogVerifies();
}

TEST_P(FloodTest, ChannelsPastTheLimitAreRefusedClearly) {
  ProcPeaks peaks;
  CommandResult result = RunWorker({"flood-channels", "1000"}, &peaks);
  ASSERT_EQ(result.exit_code, 0) << result;
  EXPECT_THAT(result.out, HasSubstr("channel-refused-after: 64\n")) << result;
  EXPECT_THAT(result.out, HasSubstr("channel-refusal: BUSY protocol error, closing this channel: too many channels (limit 64)")) << result;
  EXPECT_THAT(result.out, HasSubstr("held-channel-served: yes")) << result;
  EXPECT_THAT(result.out, HasSubstr("last-held-channel-served: yes")) << result;
  EXPECT_THAT(result.out, HasSubstr("reopened-channel-served: yes")) << result;
  ExpectBounded(peaks);
  ExpectLogVerifies();
}

TEST_P(FloodTest, ThousandsOfDescriptorsAreClosedNotKept) {
  ProcPeaks peaks;
  CommandResult result = RunWorker({"flood-descriptors", "20000"}, &peaks);
  ASSERT_EQ(result.exit_code, 0) << result;
  EXPECT_THAT(result.out, HasSubstr("connector-descriptors-sent: 20000")) << result;
  EXPECT_THAT(result.out, HasSubstr("connector-non-sockets-sent: 100")) << result;
  EXPECT_THAT(result.out, HasSubstr("channels-closed-for-descriptors: 100")) << result;
  EXPECT_THAT(result.out, HasSubstr("at most 0 expected")) << result;
  EXPECT_THAT(result.out, HasSubstr("probe-after: ok")) << result;
  EXPECT_THAT(result.out, HasSubstr("new-channel-after: ok")) << result;
  EXPECT_THAT(result.err, HasSubstr("refused a connector message")) << result;
  ExpectBounded(peaks);
  ExpectLogVerifies();
}

TEST_P(FloodTest, AFrameAnnouncingFourGibibytesIsRefusedBeforeItsPayload) {
  ProcPeaks peaks;
  CommandResult result = RunWorker({"huge-frame"}, &peaks);
  ASSERT_EQ(result.exit_code, 0) << result;
  EXPECT_THAT(result.out, HasSubstr("huge-frame-answer: TOO_LARGE protocol error, closing this channel: frame of 4294967295 bytes "
                                    "exceeds the limit of 20971520 bytes")) << result;
  EXPECT_THAT(result.out, HasSubstr("huge-frame-channel-closed: yes")) << result;
  EXPECT_THAT(result.out, HasSubstr("probe-after: ok")) << result;
  ExpectBounded(peaks);
  ExpectLogVerifies();
}

INSTANTIATE_TEST_SUITE_P(Identities, FloodTest, ::testing::ValuesIn(IdentitiesToTest()),
                         RunAsName);

}  // namespace
}  // namespace airlock::integration
