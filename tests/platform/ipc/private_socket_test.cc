#include "platform/ipc/private_socket.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock::ipc {
namespace {

using ::airlock::testing::IsOk;
using ::airlock::testing::StatusIs;
using ::testing::HasSubstr;

TEST(PrivateSocketTest, ListensInANewPrivateDirectoryAndConnectsSameUser) {
  testing::TempDir dir;
  const std::string path = dir.Child("run/s.sock");
  AIRLOCK_ASSERT_OK_AND_ASSIGN(PrivateListener listener, ListenPrivate(path));
  EXPECT_EQ(listener.created_directory, dir.Child("run"));
  struct stat st {};
  ASSERT_EQ(::stat(dir.Child("run").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 077, 0u) << "bound under umask 077";
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ScopedFd client, ConnectSameUser(path));
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ScopedFd server, AcceptSameUser(listener.fd.get()));
  ASSERT_EQ(::write(client.get(), "x", 1), 1);
  char byte = 0;
  EXPECT_EQ(::read(server.get(), &byte, 1), 1);
  EXPECT_EQ(byte, 'x');
}

TEST(PrivateSocketTest, AStaleSocketOfOursIsReplacedAnythingElseIsNot) {
  testing::TempDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0700), 0);
  const std::string path = dir.Child("s.sock");
  {
    AIRLOCK_ASSERT_OK_AND_ASSIGN(PrivateListener first, ListenPrivate(path));
    EXPECT_EQ(first.created_directory, "");  // the directory existed
  }
  EXPECT_THAT(ListenPrivate(path).status(), IsOk());  // the stale socket is replaced
  const std::string file = dir.Child("file.sock");
  testing::WriteFileOrDie(file, "not a socket");
  EXPECT_THAT(ListenPrivate(file).status(), StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_EQ(testing::ReadFileOrMissing(file), "not a socket");
}

TEST(PrivateSocketTest, AnOpenDirectoryOrALinkIsRefused) {
  testing::TempDir dir;
  ASSERT_EQ(::mkdir(dir.Child("open").c_str(), 0755), 0);
  ASSERT_EQ(::chmod(dir.Child("open").c_str(), 0755), 0);
  EXPECT_THAT(ListenPrivate(dir.Child("open/s.sock"), {.what = "control socket"}).status(),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("control socket directory")));
  ASSERT_EQ(::mkdir(dir.Child("real").c_str(), 0700), 0);
  ASSERT_EQ(::symlink(dir.Child("real").c_str(), dir.Child("link").c_str()), 0);
  EXPECT_THAT(ListenPrivate(dir.Child("link/s.sock")).status(),
              StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(ListenPrivate(std::string(200, 'x')).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace airlock::ipc
