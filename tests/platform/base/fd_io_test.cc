#include "platform/base/fd_io.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "gtest/gtest.h"

namespace airlock {
namespace {

// With SIGPIPE at its default action (it would end this test process), writing to a pipe
// whose reader is gone is an EPIPE, leaves no SIGPIPE pending, and restores the mask.
TEST(FdIoTest, WriteWithoutSigpipeToAGoneReaderIsEpipe) {
  struct sigaction previous {};
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  ASSERT_EQ(::sigaction(SIGPIPE, &default_action, &previous), 0);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);
  sigset_t before, after, pending;
  ASSERT_EQ(::pthread_sigmask(SIG_SETMASK, nullptr, &before), 0);
  errno = 0;
  EXPECT_EQ(WriteWithoutSigpipe(fds[1], "go", 2), -1);
  EXPECT_EQ(errno, EPIPE);
  ASSERT_EQ(::pthread_sigmask(SIG_SETMASK, nullptr, &after), 0);
  EXPECT_EQ(::sigismember(&after, SIGPIPE), ::sigismember(&before, SIGPIPE));
  ASSERT_EQ(::sigpending(&pending), 0);
  EXPECT_EQ(::sigismember(&pending, SIGPIPE), 0);
  ::close(fds[1]);
  ::sigaction(SIGPIPE, &previous, nullptr);
}

TEST(FdIoTest, WriteWithoutSigpipeWritesToALiveReader) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  EXPECT_EQ(WriteWithoutSigpipe(fds[1], "go", 2), 2);
  char buffer[2] = {};
  EXPECT_EQ(::read(fds[0], buffer, 2), 2);
  EXPECT_EQ(std::string(buffer, 2), "go");
  ::close(fds[0]);
  ::close(fds[1]);
}

}  // namespace
}  // namespace airlock
