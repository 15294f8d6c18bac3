// FileTools for approval tests: plans from the real filesystem (stat + SHA-256), commits by
// plainly writing, and counts commits. It checks nothing on Commit on purpose, so a test sees
// that the approval ticket — not the file layer — caught a change.
#ifndef TESTS_BROKER_APPROVAL_FAKE_FILE_TOOLS_H_
#define TESTS_BROKER_APPROVAL_FAKE_FILE_TOOLS_H_

#include <sys/stat.h>

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "broker/approval/ticket.h"
#include "broker/fs/file_tools.h"
#include "broker/wire_error.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker::testing {

class FakeFileTools final : public FileTools {
 public:
  explicit FakeFileTools(std::string root) : root_(std::move(root)) {}

  absl::StatusOr<v1::ReadResult> Read(const v1::ReadRequest&) override {
    return absl::UnimplementedError("fake");
  }
  absl::StatusOr<v1::ListResult> List(const v1::ListRequest&) override {
    return absl::UnimplementedError("fake");
  }
  absl::StatusOr<v1::WriteResult> Write(const v1::WriteRequest&) override {
    return absl::UnimplementedError("fake");
  }
  absl::StatusOr<v1::EditResult> Edit(const v1::EditRequest&) override {
    return absl::UnimplementedError("fake");
  }

  absl::StatusOr<MutationPlan> PlanWrite(const v1::WriteRequest& request) override {
    MutationPlan plan = PlanFor("write", request.path());
    plan.new_content = request.content();
    plan.new_content_sha256 = Sha256Hex(plan.new_content);
    return plan;
  }

  absl::StatusOr<MutationPlan> PlanEdit(const v1::EditRequest& request) override {
    MutationPlan plan = PlanFor("edit", request.path());
    const size_t at = plan.old_content.find(request.old_string());
    if (at == std::string::npos) return absl::NotFoundError("old string not found");
    plan.new_content = plan.old_content;
    plan.new_content.replace(at, request.old_string().size(), request.new_string());
    plan.new_content_sha256 = Sha256Hex(plan.new_content);
    plan.replacements = 1;
    return plan;
  }

  absl::StatusOr<v1::WriteResult> Commit(const MutationPlan& plan,
                                         CommitPermission permission) override {
    ++commits_;
    last_permission_ = permission;
    if (stale_commits_ > 0) {
      --stale_commits_;
      return WireError(v1::APPROVAL_STALE, "fake: the directories on the path changed");
    }
    airlock::testing::WriteFileOrDie(plan.canonical_path, plan.new_content);
    v1::WriteResult result;
    result.set_canonical_path(plan.canonical_path);
    result.set_bytes_written(plan.new_content.size());
    result.set_content_sha256(plan.new_content_sha256);
    result.set_created(!plan.target.exists);
    return result;
  }

  int commits() const { return commits_; }
  // The next `n` commits fail as stale (a concurrent call changed the path), writing nothing.
  void set_stale_commits(int n) { stale_commits_ = n; }
  CommitPermission last_permission() const { return last_permission_; }

 private:
  static FileIdentity Identify(const std::string& path, bool with_content) {
    FileIdentity id;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return id;
    id.exists = true;
    id.device = st.st_dev;
    id.inode = st.st_ino;
    if (with_content) id.content_sha256 = Sha256Hex(airlock::testing::ReadFileOrMissing(path));
    return id;
  }

  MutationPlan PlanFor(const std::string& tool, const std::string& path) {
    MutationPlan plan;
    plan.tool = tool;
    plan.canonical_path = path;
    if (absl::EndsWith(path, "/.envrc")) {
      plan.target_class = TargetClass::kProtected;
      plan.rule = "protected:.envrc";
    } else if (absl::StartsWith(path, root_ + "/")) {
      plan.target_class = TargetClass::kInsideRoots;
      plan.rule = "inside-roots";
    } else {
      plan.target_class = TargetClass::kOutsideRoots;
      plan.rule = "outside-roots";
    }
    plan.target = Identify(path, true);
    if (plan.target.exists) plan.old_content = airlock::testing::ReadFileOrMissing(path);
    plan.parent = Identify(path.substr(0, path.rfind('/')), false);
    return plan;
  }

  std::string root_;
  int commits_ = 0;
  CommitPermission last_permission_;
  int stale_commits_ = 0;
};

}  // namespace airlock::broker::testing

#endif  // TESTS_BROKER_APPROVAL_FAKE_FILE_TOOLS_H_
