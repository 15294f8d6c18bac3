// The test MCP server started by the shell runner in the real bubblewrap sandbox: what it can
// and cannot write, and what is left once it is stopped. The denials are read-only mounts
// (EROFS), which hold for root and for an unprivileged user alike.
#include "broker/mcp/mcp_server_connection.h"

#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <thread>

#include "absl/strings/str_cat.h"
#include "broker/exec/runtime_dir.h"
#include "broker/wire_error.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker {
namespace {

using ::airlock::testing::ReadFileOrMissing;
using ::airlock::testing::TempDir;
using ::google::protobuf::Struct;
using ::testing::AnyOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kServer[] = AIRLOCK_TEST_MCP_SERVER;

Struct Args(const std::string& json) {
  Struct args;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &args).ok()) << json;
  return args;
}

std::string WriteArgs(const std::string& path, const std::string& content) {
  return absl::StrCat(R"({"path":")", path, R"(","content":")", content, R"("})");
}

// Host processes whose command line holds `tag`.
int ProcessesTagged(const std::string& tag) {
  int count = 0;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return -1;
  while (dirent* entry = ::readdir(proc)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    const std::string cmdline = ReadFileOrMissing(absl::StrCat("/proc/", entry->d_name,
                                                               "/cmdline"));
    if (cmdline.find(tag) != std::string::npos) ++count;
  }
  ::closedir(proc);
  return count;
}

// The tagged processes left once a killed tree has had up to `seconds` to exit: SIGKILLed
// processes in the sandbox's pid namespace go a moment after the call that killed them
// returns (they can no longer run anything meanwhile).
int ProcessesTaggedAfterExit(const std::string& tag, int seconds = 5) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int count = ProcessesTagged(tag);
  while (count > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    count = ProcessesTagged(tag);
  }
  return count;
}

class McpServerConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Outside /tmp (which the sandbox replaces by its private one), so that a path beside the
    // workspace is visible — read-only — inside the sandbox. /var/tmp is writable for an
    // unprivileged user too.
    std::string base = "/var/tmp/airlock-mcp-test-XXXXXX";
    ASSERT_NE(::mkdtemp(base.data()), nullptr) << "mkdtemp in /var/tmp";
    char canonical[PATH_MAX];
    ASSERT_NE(::realpath(base.c_str(), canonical), nullptr);
    base_ = canonical;
    workspace_ = base_ + "/ws";
    ASSERT_EQ(::mkdir(workspace_.c_str(), 0755), 0);
    // The build tree may sit under /tmp, which the sandbox hides: run a copy from here.
    server_ = base_ + "/test_mcp_server";
    airlock::testing::WriteFileOrDie(server_, airlock::testing::ReadFileOrMissing(kServer));
    ASSERT_EQ(::chmod(server_.c_str(), 0755), 0);

    ShellRunnerOptions options;
    options.runtime_dir = runtime_.Child("rt");
    AIRLOCK_ASSERT_OK_AND_ASSIGN(runner_, ShellRunner::Create(options));
    tag_ = absl::StrCat("--tag=mcp-test-", ::getpid(), "-", ++counter_);
  }

  void TearDown() override {
    if (!base_.empty()) airlock::testing::RemoveTree(base_);
  }

  bool SandboxWorks() {
    ShellRequest probe;
    probe.command = "true";
    probe.preset = v1::PRESET_WORKSPACE_WRITE;
    probe.roots = {workspace_};
    auto result = runner_->Run(probe);
    if (!result.ok()) std::cerr << "sandbox unavailable here: " << result.status() << "\n";
    return result.ok() && result->exit_code() == 0;
  }

  ServerProcessRequest Request(v1::Preset preset) {
    ServerProcessRequest request;
    request.preset = preset;
    request.roots = {workspace_};
    return request;
  }

  absl::StatusOr<std::unique_ptr<McpServerConnection>> Start(
      v1::Preset preset, std::vector<std::string> flags = {}) {
    std::vector<std::string> argv = {server_, tag_};
    argv.insert(argv.end(), flags.begin(), flags.end());
    return McpServerConnection::Start(*runner_, "files", std::move(argv), Request(preset),
                                      absl::Seconds(20));
  }

  static inline int counter_ = 0;
  TempDir runtime_;
  std::string base_;
  std::string server_;  // a copy of kServer visible inside the sandbox
  std::string workspace_;
  std::string tag_;
  std::unique_ptr<ShellRunner> runner_;
};

TEST_F(McpServerConnectionTest, WorkspaceWriteConfinesTheServer) {
  if (!SandboxWorks()) GTEST_SKIP() << "bwrap is not usable here";
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<McpServerConnection> server,
                               Start(v1::PRESET_WORKSPACE_WRITE));
  ASSERT_TRUE(server->process()->sandboxed());
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::vector<McpTool> tools, server->ListTools());
  std::vector<std::string> names;
  for (const McpTool& tool : tools) names.push_back(tool.name);
  EXPECT_THAT(names, Contains("write_file"));

  // Inside the workspace: written on the host.
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      McpCallResult inside,
      server->CallTool("write_file", Args(WriteArgs(workspace_ + "/inside.txt", "hello"))));
  EXPECT_FALSE(inside.is_error) << inside.text;
  EXPECT_EQ(inside.text, absl::StrCat("wrote 5 bytes to ", workspace_, "/inside.txt"));
  EXPECT_EQ(ReadFileOrMissing(workspace_ + "/inside.txt"), "hello");

  // Beside the workspace: the server's own write fails (read-only mount), nothing on the host.
  const std::string outside = base_ + "/outside.txt";
  AIRLOCK_ASSERT_OK_AND_ASSIGN(McpCallResult refused,
                               server->CallTool("write_file", Args(WriteArgs(outside, "x"))));
  EXPECT_TRUE(refused.is_error);
  EXPECT_THAT(refused.text, AnyOf(HasSubstr("Read-only file system"),
                                  HasSubstr("Permission denied")));
  EXPECT_NE(::access(outside.c_str(), F_OK), 0);

  // Protected storage inside the workspace stays read-only too.
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      McpCallResult envrc,
      server->CallTool("write_file", Args(WriteArgs(workspace_ + "/.envrc", "x"))));
  EXPECT_TRUE(envrc.is_error) << envrc.text;

  // /tmp is the private temp directory, on the host inside the call directory.
  AIRLOCK_ASSERT_OK_AND_ASSIGN(McpCallResult temp,
                               server->CallTool("write_file", Args(WriteArgs("/tmp/t", "tmp"))));
  EXPECT_FALSE(temp.is_error) << temp.text;
  const std::string call_dir = server->process()->call_dir();
  ASSERT_FALSE(call_dir.empty());
  EXPECT_EQ(ReadFileOrMissing(call_dir + "/tmp/t"), "tmp");
  EXPECT_GE(ProcessesTagged(tag_), 1);

  server->Stop();
  EXPECT_FALSE(server->usable());
  EXPECT_NE(::access(call_dir.c_str(), F_OK), 0);
  EXPECT_EQ(ProcessesTaggedAfterExit(tag_), 0);
  EXPECT_THAT(testing::SortedNames(runner_->runtime_dir()), IsEmpty());
  // The masks' mount points are gone from the workspace as well.
  EXPECT_NE(::access((workspace_ + "/.envrc").c_str(), F_OK), 0);
  auto after = server->CallTool("echo", Args(R"({"text":"x"})"));
  EXPECT_THAT(std::string(after.status().message()), HasSubstr("stopped"));
}

TEST_F(McpServerConnectionTest, DestructionKillsTheTreeAndRemovesTheCallDirectory) {
  if (!SandboxWorks()) GTEST_SKIP() << "bwrap is not usable here";
  std::string call_dir;
  {
    AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<McpServerConnection> server,
                                 Start(v1::PRESET_WORKSPACE_WRITE));
    call_dir = server->process()->call_dir();
    EXPECT_GT(ProcessesTagged(tag_), 0);
  }
  EXPECT_EQ(ProcessesTaggedAfterExit(tag_), 0);
  EXPECT_NE(::access(call_dir.c_str(), F_OK), 0);
  EXPECT_EQ(SweepStaleCallDirs(runner_->runtime_dir()), 0);
}

TEST_F(McpServerConnectionTest, ReadOnlyPresetWritesNothing) {
  if (!SandboxWorks()) GTEST_SKIP() << "bwrap is not usable here";
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<McpServerConnection> server,
                               Start(v1::PRESET_READ_ONLY));
  for (const std::string& path : {workspace_ + "/x", base_ + "/y"}) {
    AIRLOCK_ASSERT_OK_AND_ASSIGN(McpCallResult result,
                                 server->CallTool("write_file", Args(WriteArgs(path, "x"))));
    EXPECT_TRUE(result.is_error) << path;
    EXPECT_THAT(result.text, HasSubstr("Read-only file system"));
    EXPECT_NE(::access(path.c_str(), F_OK), 0);
  }
  // Reads work.
  airlock::testing::WriteFileOrDie(workspace_ + "/r", "readable");
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      McpCallResult read,
      server->CallTool("read_file", Args(R"({"path":")" + workspace_ + R"(/r"})")));
  EXPECT_EQ(read.text, "readable");
}

TEST_F(McpServerConnectionTest, OutlivesTheThreadThatStartedIt) {
  if (!SandboxWorks()) GTEST_SKIP() << "bwrap is not usable here";
  absl::StatusOr<std::unique_ptr<McpServerConnection>> started;
  std::thread([&] { started = Start(v1::PRESET_WORKSPACE_WRITE); }).join();
  ASSERT_TRUE(started.ok()) << started.status();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_TRUE((*started)->usable());
  AIRLOCK_ASSERT_OK_AND_ASSIGN(McpCallResult echo,
                               (*started)->CallTool("echo", Args(R"({"text":"alive"})")));
  EXPECT_EQ(echo.text, "alive");
}

TEST_F(McpServerConnectionTest, ConcurrentCallsAreSerialized) {
  if (!SandboxWorks()) GTEST_SKIP() << "bwrap is not usable here";
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<McpServerConnection> server,
                               Start(v1::PRESET_WORKSPACE_WRITE));
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        const std::string text = absl::StrCat("t", t, "-", i);
        auto echo = server->CallTool("echo", Args(R"({"text":")" + text + R"("})"));
        if (echo.ok() && echo->text == text) ++good;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(good.load(), 40);
}

TEST_F(McpServerConnectionTest, StopEndsACallInFlight) {
  if (!SandboxWorks()) GTEST_SKIP() << "bwrap is not usable here";
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<McpServerConnection> server,
                               Start(v1::PRESET_WORKSPACE_WRITE));
  absl::StatusOr<McpCallResult> slow;
  const auto start = std::chrono::steady_clock::now();
  std::thread caller([&] { slow = server->CallTool("sleep", Args(R"({"seconds":30})")); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  server->Stop();
  caller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_FALSE(slow.ok());
  EXPECT_EQ(ProcessesTaggedAfterExit(tag_), 0);
}

TEST_F(McpServerConnectionTest, CancelStopsTheServer) {
  if (!SandboxWorks()) GTEST_SKIP() << "bwrap is not usable here";
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<McpServerConnection> server,
                               Start(v1::PRESET_WORKSPACE_WRITE));
  CancelToken cancel;
  std::thread canceller([&cancel] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel.Cancel();
  });
  auto slow = server->CallTool("sleep", Args(R"({"seconds":30})"), &cancel);
  canceller.join();
  EXPECT_EQ(WireCodeOf(slow.status()), v1::CANCELLED);
  // The server's work is abandoned with it: the tree is gone, a new connection is needed.
  EXPECT_FALSE(server->usable());
  EXPECT_EQ(ProcessesTaggedAfterExit(tag_), 0);
}

TEST_F(McpServerConnectionTest, ChattyStderrNeitherBlocksNorGrows) {
  if (!SandboxWorks()) GTEST_SKIP() << "bwrap is not usable here";
  // 4 MiB on stderr before the server reads anything: without draining, the pipe fills and
  // the handshake times out.
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<McpServerConnection> server,
                               Start(v1::PRESET_WORKSPACE_WRITE, {"--stderr-flood=4194304"}));
  AIRLOCK_ASSERT_OK_AND_ASSIGN(McpCallResult echo,
                               server->CallTool("echo", Args(R"({"text":"ok"})")));
  EXPECT_EQ(echo.text, "ok");
  const std::string tail = server->process()->TakeStderr();
  EXPECT_GT(tail.size(), 0u);
  EXPECT_LE(tail.size(), 8u * 1024);
}

TEST_F(McpServerConnectionTest, ADeadServerIsReportedWithItsStderr) {
  if (!SandboxWorks()) GTEST_SKIP() << "bwrap is not usable here";
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<McpServerConnection> server,
                               Start(v1::PRESET_WORKSPACE_WRITE, {"--exit-after-init"}));
  auto tools = server->ListTools();
  ASSERT_FALSE(tools.ok());
  // Gone before tools/list is written ("closed its input") or after ("closed its output"):
  // which one is a race, both break the connection.
  EXPECT_THAT(std::string(tools.status().message()),
              AnyOf(HasSubstr("MCP server 'files' closed its output"),
                    HasSubstr("MCP server 'files' closed its input")));
  EXPECT_FALSE(server->usable());

  // A program the sandbox cannot run: the start fails, naming the server and saying why.
  auto missing = McpServerConnection::Start(*runner_, "ghost", {"airlock-no-such-program"},
                                            Request(v1::PRESET_WORKSPACE_WRITE),
                                            absl::Seconds(10));
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("MCP server 'ghost'"));
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("not found"));
  EXPECT_THAT(testing::SortedNames(runner_->runtime_dir()), IsEmpty());
}

TEST_F(McpServerConnectionTest, CwdOutsideTheRootsIsRefused) {
  ServerProcessRequest request = Request(v1::PRESET_WORKSPACE_WRITE);
  request.cwd = base_;
  auto server = McpServerConnection::Start(*runner_, "files", {server_}, request,
                                           absl::Seconds(10));
  EXPECT_EQ(WireCodeOf(server.status()), v1::OUTSIDE_SANDBOX);
  EXPECT_THAT(std::string(server.status().message()), HasSubstr("MCP server 'files'"));
}

TEST_F(McpServerConnectionTest, MissingRootsAreSandboxUnavailable) {
  ServerProcessRequest request = Request(v1::PRESET_WORKSPACE_WRITE);
  request.roots.clear();
  auto server = McpServerConnection::Start(*runner_, "files", {server_}, request,
                                           absl::Seconds(10));
  EXPECT_EQ(WireCodeOf(server.status()), v1::SANDBOX_UNAVAILABLE);
  request = Request(v1::PRESET_UNSPECIFIED);
  server = McpServerConnection::Start(*runner_, "files", {server_}, request, absl::Seconds(10));
  EXPECT_EQ(WireCodeOf(server.status()), v1::INVALID_ARGUMENT);
}

TEST_F(McpServerConnectionTest, DangerFullAccessRunsOnTheHost) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<McpServerConnection> server,
                               Start(v1::PRESET_DANGER_FULL_ACCESS));
  EXPECT_FALSE(server->process()->sandboxed());
  const std::string outside = base_ + "/host.txt";
  AIRLOCK_ASSERT_OK_AND_ASSIGN(McpCallResult result,
                               server->CallTool("write_file", Args(WriteArgs(outside, "h"))));
  EXPECT_FALSE(result.is_error) << result.text;
  EXPECT_EQ(ReadFileOrMissing(outside), "h");
  server->Stop();
  EXPECT_EQ(ProcessesTaggedAfterExit(tag_), 0);
}

}  // namespace
}  // namespace airlock::broker
