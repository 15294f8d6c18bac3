// The file tools' test fixture: a real tree with every kind of path (links in and out,
// dangling links, loops, protected storage, the broker's own storage), parameterized by the
// walk (openat2 or the O_NOFOLLOW component walk).
#ifndef TESTS_BROKER_FS_FILE_TOOLS_FIXTURE_H_
#define TESTS_BROKER_FS_FILE_TOOLS_FIXTURE_H_

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <set>
#include <string>

#include "broker/fs/beneath.h"
#include "broker/fs/file_tools.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker {

// "$B" in a test path stands for the test's base directory.
inline std::string Expand(std::string text, const std::string& base) {
  for (size_t at = text.find("$B"); at != std::string::npos; at = text.find("$B")) {
    text.replace(at, 2, base);
  }
  return text;
}

// Every entry below `dir` (recursively, links not followed), as relative paths.
inline std::set<std::string> TreeOf(const std::string& dir, const std::string& prefix = "") {
  std::set<std::string> out;
  DIR* stream = ::opendir(dir.c_str());
  if (stream == nullptr) return out;
  while (dirent* entry = ::readdir(stream)) {
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    out.insert(prefix + name);
    struct stat st;
    if (::lstat((dir + "/" + name).c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      for (const std::string& child : TreeOf(dir + "/" + name, prefix + name + "/")) {
        out.insert(child);
      }
    }
  }
  ::closedir(stream);
  return out;
}

class FileToolsTest : public ::testing::TestWithParam<WalkMode> {
 protected:
  void SetUp() override {
    ws_ = base_.Child("ws");
    out_ = base_.Child("out");
    home_ = base_.Child("home");
    for (const std::string& dir : {ws_, out_, home_, ws_ + "/dir", ws_ + "/.git",
                                   ws_ + "/.git/hooks", ws_ + "/sub", ws_ + "/sub/.vscode"}) {
      ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0) << dir;
    }
    testing::WriteFileOrDie(ws_ + "/a.txt", "alpha");
    testing::WriteFileOrDie(ws_ + "/dir/b.txt", "beta");
    testing::WriteFileOrDie(ws_ + "/.git/hooks/pre-commit", "#!/bin/sh\n");
    testing::WriteFileOrDie(ws_ + "/.git/config", "[core]\n");
    testing::WriteFileOrDie(ws_ + "/sub/.vscode/settings.json", "{}");
    testing::WriteFileOrDie(ws_ + "/secret.txt", "guarded");
    testing::WriteFileOrDie(out_ + "/o.txt", "outside");
    testing::WriteFileOrDie(home_ + "/audit.key", "KEY");
    Link("dir/b.txt", ws_ + "/link_in");
    Link(out_ + "/o.txt", ws_ + "/link_out");
    Link("new_in.txt", ws_ + "/dangling_in");
    Link("../out/new_out.txt", ws_ + "/dangling_out");
    Link("chain2", ws_ + "/chain1");
    Link("dir", ws_ + "/chain2");
    Link("loop2", ws_ + "/loop1");
    Link("loop1", ws_ + "/loop2");
    Link(".git/hooks/pre-commit", ws_ + "/hook_link");
    Link(".git/hooks/post-merge", ws_ + "/hook_dangling");
    Link(".git", ws_ + "/git_link");
    Link(home_ + "/audit.key", ws_ + "/key_link");
    Link(out_, ws_ + "/out_dir_link");
    Link(ws_, base_.Child("ws_link"));
    out_before_ = TreeOf(out_);
    home_before_ = TreeOf(home_);
    files_ = Make(Options());
  }

  FileToolsOptions Options() const {
    FileToolsOptions options;
    options.roots = {ws_};
    options.protected_paths = {"secret.txt"};
    options.broker_secret_paths = {home_};
    options.walk_mode = GetParam();
    return options;
  }
  static std::unique_ptr<FileTools> Make(FileToolsOptions options) {
    auto files = FileTools::Create(std::move(options));
    EXPECT_THAT(files, testing::IsOk());
    return files.ok() ? std::move(*files) : nullptr;
  }
  static void Link(const std::string& target, const std::string& path) {
    ASSERT_EQ(::symlink(target.c_str(), path.c_str()), 0) << path;
  }
  absl::StatusOr<v1::WriteResult> Write(const std::string& path, const std::string& content) {
    v1::WriteRequest request;
    request.set_path(Expand(path, base_.path()));
    request.set_content(content);
    return files_->Write(request);
  }
  absl::StatusOr<v1::ReadResult> Read(const std::string& path, uint64_t offset = 0,
                                      uint64_t limit = 0) {
    v1::ReadRequest request;
    request.set_path(Expand(path, base_.path()));
    request.set_offset(offset);
    request.set_limit(limit);
    return files_->Read(request);
  }
  absl::StatusOr<v1::ListResult> List(const std::string& path) {
    v1::ListRequest request;
    request.set_path(Expand(path, base_.path()));
    return files_->List(request);
  }
  absl::StatusOr<v1::EditResult> Edit(const std::string& path, const std::string& old_text,
                                      const std::string& new_text, bool all = false) {
    v1::EditRequest request;
    request.set_path(Expand(path, base_.path()));
    request.set_old_string(old_text);
    request.set_new_string(new_text);
    request.set_replace_all(all);
    return files_->Edit(request);
  }
  void ExpectOutsideAndHomeUntouched() {
    EXPECT_EQ(TreeOf(out_), out_before_);
    EXPECT_EQ(testing::ReadFileOrMissing(out_ + "/o.txt"), "outside");
    EXPECT_EQ(TreeOf(home_), home_before_);
    EXPECT_EQ(testing::ReadFileOrMissing(home_ + "/audit.key"), "KEY");
  }
  void ExpectNoTempFiles() {
    for (const std::string& entry : TreeOf(base_.path())) {
      EXPECT_EQ(entry.find(".airlock-tmp-"), std::string::npos) << entry;
    }
  }

  testing::TempDir base_;
  std::string ws_, out_, home_;
  std::set<std::string> out_before_, home_before_;
  std::unique_ptr<FileTools> files_;
};


// "Openat2" or "ComponentWalk", for test names.
inline std::string WalkName(const ::testing::TestParamInfo<WalkMode>& info) {
  return info.param == WalkMode::kAuto ? "Openat2" : "ComponentWalk";
}

}  // namespace airlock::broker

#endif  // TESTS_BROKER_FS_FILE_TOOLS_FIXTURE_H_
