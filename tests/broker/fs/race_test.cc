// Race resistance (SPEC §5): while another thread swaps a directory inside the workspace with
// a link to outside as fast as it can, broker writes land only inside; nothing appears outside.
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "broker/fs/file_tools.h"
#include "broker/wire_error.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker {
namespace {

std::set<std::string> Names(const std::string& dir) {
  std::set<std::string> out;
  DIR* stream = ::opendir(dir.c_str());
  while (dirent* entry = stream ? ::readdir(stream) : nullptr) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") out.insert(name);
  }
  if (stream) ::closedir(stream);
  return out;
}

struct RaceParam {
  WalkMode mode;
  int writes;
  int pause_us;  // 0: swap as fast as possible; else a pause so that more writes get through
};

// Every kQuietEvery-th write asks the swapper to stand still with the real directory under its
// own name, so that some writes must land however slow the machine (sanitizers, load): the
// test then shows both that writes land and that none lands outside.
constexpr int kQuietEvery = 50;

class SwapRaceTest : public ::testing::TestWithParam<RaceParam> {};

TEST_P(SwapRaceTest, WritesLandOnlyInsideWhileADirectoryIsSwappedWithALinkOutside) {
  testing::TempDir base;
  const std::string ws = base.Child("ws");
  const std::string outside = base.Child("outside");
  ASSERT_EQ(::mkdir(ws.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(outside.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((ws + "/d").c_str(), 0755), 0);
  ASSERT_EQ(::symlink(outside.c_str(), (ws + "/alt").c_str()), 0);

  FileToolsOptions options;
  options.roots = {ws};
  options.walk_mode = GetParam().mode;
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<FileTools> files, FileTools::Create(options));

  std::atomic<bool> stop{false};
  std::atomic<bool> hold{false};      // the writer wants the swapper to stand still
  std::atomic<int> requested{0};      // quiet periods asked for
  std::atomic<int> granted{0};        // quiet periods the swapper has entered
  std::atomic<uint64_t> swaps{0};
  std::thread swapper([&] {
    const std::string d = ws + "/d";
    const std::string alt = ws + "/alt";
    bool swapped = false;  // true while "d" names the link
    while (!stop.load()) {
      if (requested.load() != granted.load()) {
        if (swapped &&
            ::renameat2(AT_FDCWD, d.c_str(), AT_FDCWD, alt.c_str(), RENAME_EXCHANGE) == 0) {
          swapped = false;
          swaps.fetch_add(1);
        }
        granted = requested.load();
        while (hold.load() && !stop.load()) std::this_thread::yield();
        continue;
      }
      if (::renameat2(AT_FDCWD, d.c_str(), AT_FDCWD, alt.c_str(), RENAME_EXCHANGE) == 0) {
        swapped = !swapped;
        swaps.fetch_add(1);
      }
      if (GetParam().pause_us > 0) ::usleep(static_cast<useconds_t>(GetParam().pause_us));
    }
  });

  std::vector<int> written;
  int refused = 0;
  int quiet_writes = 0;
  std::map<v1::ErrorCode, int> by_code;
  for (int i = 0; i < GetParam().writes; ++i) {
    v1::WriteRequest request;
    // New files and replacements both.
    request.set_path(absl::StrCat("d/f", i % 500));
    request.set_content(absl::StrCat(i));
    const bool quiet_write = i % kQuietEvery == kQuietEvery - 1;
    if (quiet_write) {
      hold = true;
      const int period = ++requested;
      while (granted.load() != period) std::this_thread::yield();
    }
    auto result = files->Write(request);
    if (quiet_write) {
      hold = false;
      ++quiet_writes;
      EXPECT_TRUE(result.ok()) << "a write with the directory standing still: "
                               << result.status();
    }
    if (result.ok()) {
      written.push_back(i);
    } else {
      ++refused;
      const v1::ErrorCode code = WireCodeOf(result.status());
      ++by_code[code];
      EXPECT_TRUE(code == v1::OUTSIDE_SANDBOX || code == v1::APPROVAL_STALE ||
                  code == v1::INVALID_ARGUMENT || code == v1::NOT_FOUND)
          << result.status();
    }
  }
  stop = true;
  swapper.join();
  std::cerr << "swaps " << swaps.load() << ", writes " << written.size() << " landed, "
            << refused << " refused:";
  for (const auto& [code, count] : by_code) std::cerr << " " << ErrorCodeName(code) << "=" << count;
  std::cerr << "\n";

  EXPECT_TRUE(Names(outside).empty()) << "a write landed outside the workspace";
  // The real directory is whichever name it has now; every write that reported success is in
  // it with its last content.
  struct stat st;
  ASSERT_EQ(::lstat((ws + "/d").c_str(), &st), 0);
  const std::string real = S_ISDIR(st.st_mode) ? ws + "/d" : ws + "/alt";
  std::vector<int> last(500, -1);
  for (int i : written) last[static_cast<size_t>(i % 500)] = i;
  for (int slot = 0; slot < 500; ++slot) {
    if (last[static_cast<size_t>(slot)] < 0) continue;
    const std::string content = testing::ReadFileOrMissing(absl::StrCat(real, "/f", slot));
    // A later refused write never changes it, so it holds the last successful content.
    EXPECT_EQ(content, absl::StrCat(last[static_cast<size_t>(slot)])) << slot;
  }
  for (const std::string& name : Names(real)) {
    EXPECT_EQ(name.find(".airlock-tmp-"), std::string::npos) << name;
  }
  EXPECT_GT(swaps.load(), 0u);
  EXPECT_GE(written.size(), static_cast<size_t>(quiet_writes));
  EXPECT_GT(quiet_writes, 0);
}

INSTANTIATE_TEST_SUITE_P(Walks, SwapRaceTest,
                         ::testing::Values(RaceParam{WalkMode::kAuto, 10000, 0},
                                           RaceParam{WalkMode::kComponentWalk, 10000, 0},
                                           RaceParam{WalkMode::kAuto, 2000, 200},
                                           RaceParam{WalkMode::kComponentWalk, 2000, 200}),
                         [](const ::testing::TestParamInfo<RaceParam>& info) {
                           return absl::StrCat(
                               info.param.mode == WalkMode::kAuto ? "Openat2" : "ComponentWalk",
                               info.param.pause_us == 0 ? "FullSpeed" : "Paced");
                         });

}  // namespace
}  // namespace airlock::broker
