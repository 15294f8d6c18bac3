// Crash consistency (SPEC §12): a write killed with SIGKILL at a random point leaves the old
// content or the new, never a mix; the startup sweep then leaves no temp file.
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <random>
#include <string>

#include "broker/fs/file_tools.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker {
namespace {

constexpr size_t kFileBytes = 1u << 20;
constexpr int kKills = 200;

int CountTempFiles(const std::string& dir) {
  int count = 0;
  DIR* stream = ::opendir(dir.c_str());
  while (dirent* entry = stream ? ::readdir(stream) : nullptr) {
    if (std::string(entry->d_name).rfind(".airlock-tmp-", 0) == 0) ++count;
  }
  if (stream) ::closedir(stream);
  return count;
}

// Runs in the forked child: writes A and B alternately until killed.
[[noreturn]] void WriteForever(const std::string& ws) {
  FileToolsOptions options;
  options.roots = {ws};
  options.sweep_temporary_files = false;  // the parent checks what a crash leaves
  auto files = FileTools::Create(options);
  if (!files.ok()) ::_exit(2);
  const std::string a(kFileBytes, 'a');
  const std::string b(kFileBytes, 'b');
  for (uint64_t i = 0;; ++i) {
    v1::WriteRequest request;
    request.set_path("target");
    request.set_content(i % 2 == 0 ? b : a);
    if (!(*files)->Write(request).ok()) ::_exit(3);
  }
}

TEST(CrashTest, AKilledWriteLeavesOldOrNewNeverAMixAndTheSweepCleansUp) {
  testing::TempDir ws;
  testing::WriteFileOrDie(ws.Child("target"), std::string(kFileBytes, 'a'));
  std::mt19937 random(12345);
  std::uniform_int_distribution<int> delay_us(0, 40000);
  int debris_seen = 0;
  for (int kill_number = 0; kill_number < kKills; ++kill_number) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) WriteForever(ws.path());
    ::usleep(static_cast<useconds_t>(delay_us(random)));
    ASSERT_EQ(::kill(child, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer stopped by itself: " << status;

    const std::string content = testing::ReadFileOrMissing(ws.Child("target"));
    ASSERT_EQ(content.size(), kFileBytes) << "after kill " << kill_number;
    const char first = content[0];
    ASSERT_TRUE(first == 'a' || first == 'b');
    ASSERT_EQ(content.find_first_not_of(first), std::string::npos)
        << "a mix of old and new content after kill " << kill_number;
    debris_seen += CountTempFiles(ws.path());
  }
  std::cerr << "temp files left by " << kKills << " kills: " << debris_seen << "\n";
  // The next start sweeps what the crashes left.
  FileToolsOptions options;
  options.roots = {ws.path()};
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<FileTools> files, FileTools::Create(options));
  EXPECT_EQ(CountTempFiles(ws.path()), 0);
}

}  // namespace
}  // namespace airlock::broker
