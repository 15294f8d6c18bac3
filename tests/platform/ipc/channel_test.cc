#include "platform/ipc/channel.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>

#include <string>
#include <thread>

#include "airlock/v1/wire.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "platform/ipc/connector.h"
#include "platform/ipc/socket_io.h"
#include "tests/testing/status_matchers.h"

namespace airlock::ipc {
namespace {

using ::airlock::testing::IsOk;
using ::airlock::testing::StatusIs;

struct Pair {
  ScopedFd a, b;
};

Pair StreamPair() {
  int fds[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  return {ScopedFd(fds[0]), ScopedFd(fds[1])};
}

int CountOpenDescriptors() {
  int count = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  ::closedir(dir);
  return count - 1;  // the directory stream itself
}

TEST(ChannelTest, ExchangesMessagesOnTwoThreads) {
  Pair pair = StreamPair();
  Channel client(std::move(pair.a));
  Channel server(std::move(pair.b));
  constexpr int kMessages = 500;

  std::thread echo([&server] {
    for (int i = 0; i < kMessages; ++i) {
      v1::ClientMessage in;
      ASSERT_THAT(server.Receive(&in), IsOk());
      v1::BrokerMessage out;
      out.mutable_response()->set_id(in.request().id());
      out.mutable_response()->mutable_read()->set_content(in.request().read().path());
      ASSERT_THAT(server.Send(out), IsOk());
    }
  });
  std::thread sender([&client] {
    for (int i = 0; i < kMessages; ++i) {
      v1::ClientMessage message;
      message.mutable_request()->set_id(i + 1);
      message.mutable_request()->mutable_read()->set_path(std::string(i * 37 % 70000, 'p'));
      ASSERT_THAT(client.Send(message), IsOk());
    }
  });
  for (int i = 0; i < kMessages; ++i) {
    v1::BrokerMessage reply;
    ASSERT_THAT(client.Receive(&reply), IsOk());
    EXPECT_EQ(reply.response().id(), static_cast<uint64_t>(i + 1));
    EXPECT_EQ(reply.response().read().content().size(), static_cast<size_t>(i * 37 % 70000));
  }
  sender.join();
  echo.join();
}

TEST(ChannelTest, CleanCloseIsOutOfRangeAndTornFrameIsDataLoss) {
  {
    Pair pair = StreamPair();
    Channel reader(std::move(pair.b));
    pair.a.reset();
    EXPECT_THAT(reader.ReceiveFrame(), StatusIs(absl::StatusCode::kOutOfRange));
  }
  {
    Pair pair = StreamPair();
    Channel reader(std::move(pair.b));
    ASSERT_EQ(::write(pair.a.get(), "\x10\x00\x00\x00" "abc", 7), 7);
    pair.a.reset();
    EXPECT_THAT(reader.ReceiveFrame(), StatusIs(absl::StatusCode::kDataLoss));
  }
}

TEST(ChannelTest, OversizedAnnouncementFailsBeforeThePayloadIsRead) {
  Pair pair = StreamPair();
  Channel reader(std::move(pair.b), /*max_payload=*/1024);
  ASSERT_EQ(::write(pair.a.get(), "\xff\xff\xff\xff", 4), 4);
  EXPECT_THAT(reader.ReceiveFrame(), StatusIs(absl::StatusCode::kResourceExhausted));
}

TEST(ChannelTest, GarbagePayloadIsInvalidArgument) {
  Pair pair = StreamPair();
  Channel reader(std::move(pair.b));
  ASSERT_EQ(::write(pair.a.get(), "\x03\x00\x00\x00\xff\xff\xff", 7), 7);
  v1::ClientMessage message;
  EXPECT_THAT(reader.Receive(&message), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ChannelTest, UnexpectedDescriptorsAreRefusedAndClosed) {
  Pair pair = StreamPair();
  Channel reader(std::move(pair.b));
  const int before = CountOpenDescriptors();
  {
    ScopedFd a(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    ScopedFd b(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    const int fds[] = {a.get(), b.get()};
    ASSERT_THAT(SendWithDescriptors(pair.a.get(), std::string("\x01\x00\x00\x00" "x", 5), fds),
                IsOk());
  }
  EXPECT_THAT(reader.ReceiveFrame(/*max_fds=*/0), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(CountOpenDescriptors(), before);
}

TEST(ChannelTest, DescriptorsWithinTheLimitArrive) {
  Pair pair = StreamPair();
  Channel sender(std::move(pair.a));
  Channel reader(std::move(pair.b));
  ScopedFd file(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int fds[] = {file.get()};
  ASSERT_THAT(sender.SendFrame("payload", fds), IsOk());
  AIRLOCK_ASSERT_OK_AND_ASSIGN(Frame frame, reader.ReceiveFrame(/*max_fds=*/1));
  EXPECT_EQ(frame.payload, "payload");
  ASSERT_EQ(frame.fds.size(), 1u);
  struct stat a, b;
  ASSERT_EQ(::fstat(file.get(), &a), 0);
  ASSERT_EQ(::fstat(frame.fds[0].get(), &b), 0);
  EXPECT_EQ(a.st_ino, b.st_ino);
}

TEST(ConnectorTest, OpensChannelsAndReportsHangUp) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ConnectorPair connector, MakeConnector());
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ScopedFd client_end, OpenChannel(connector.worker_end.get()));
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ScopedFd broker_end, AcceptChannel(connector.broker_end.get()));
  Channel client(std::move(client_end));
  Channel broker(std::move(broker_end));
  ASSERT_THAT(client.SendFrame("hi"), IsOk());
  AIRLOCK_ASSERT_OK_AND_ASSIGN(Frame frame, broker.ReceiveFrame());
  EXPECT_EQ(frame.payload, "hi");

  connector.worker_end.reset();
  EXPECT_THAT(AcceptChannel(connector.broker_end.get()), StatusIs(absl::StatusCode::kOutOfRange));
}

TEST(ConnectorTest, WrongDescriptorCountOrTypeIsRefusedAndClosed) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ConnectorPair connector, MakeConnector());
  const int before = CountOpenDescriptors();
  {
    // No descriptor at all.
    ASSERT_THAT(SendWithDescriptors(connector.worker_end.get(), "C", {}), IsOk());
    EXPECT_THAT(AcceptChannel(connector.broker_end.get()),
                StatusIs(absl::StatusCode::kInvalidArgument));
    // Two descriptors.
    Pair a = StreamPair();
    const int two[] = {a.a.get(), a.b.get()};
    ASSERT_THAT(SendWithDescriptors(connector.worker_end.get(), "C", two), IsOk());
    EXPECT_THAT(AcceptChannel(connector.broker_end.get()),
                StatusIs(absl::StatusCode::kInvalidArgument));
    // A file instead of a socket.
    ScopedFd file(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    const int one[] = {file.get()};
    ASSERT_THAT(SendWithDescriptors(connector.worker_end.get(), "C", one), IsOk());
    EXPECT_THAT(AcceptChannel(connector.broker_end.get()),
                StatusIs(absl::StatusCode::kInvalidArgument));
  }
  EXPECT_EQ(CountOpenDescriptors(), before);
  // The connector still works afterwards.
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ScopedFd client_end, OpenChannel(connector.worker_end.get()));
  EXPECT_THAT(AcceptChannel(connector.broker_end.get()), IsOk());
}

}  // namespace
}  // namespace airlock::ipc
