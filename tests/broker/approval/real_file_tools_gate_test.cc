// The approval path over the real FileTools (broker/fs): what an approval allows is exactly
// what gets written, a change while the approver decides writes nothing, and the fences hold
// before anything is asked.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "broker/approval/authorize.h"
#include "broker/wire_error.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/broker/approval/fake_approver.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker {
namespace {

using ::airlock::broker::testing::FakeApprover;
using ::airlock::testing::ReadFileOrMissing;
using ::airlock::testing::WriteFileOrDie;
using ::testing::HasSubstr;

class RealFileToolsGateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteFileOrDie(workspace_.Child("a.txt"), "one\ntwo\n");
    FileToolsOptions options;
    options.roots = {workspace_.path()};
    absl::StatusOr<std::unique_ptr<FileTools>> files = FileTools::Create(options);
    ASSERT_TRUE(files.ok()) << files.status();
    files_ = std::move(*files);
    UsePolicy(v1::PRESET_READ_ONLY, OutsideWorkspace::kDeny);
  }

  void UsePolicy(v1::Preset preset, OutsideWorkspace outside) {
    absl::StatusOr<Policy> policy = PolicyBuilder()
                                        .AddRoot(workspace_.path())
                                        .SetPreset(preset)
                                        .SetOutsideWorkspace(outside)
                                        .Build();
    ASSERT_TRUE(policy.ok());
    policy_ = std::make_unique<Policy>(*policy);
  }

  ApprovalGate Gate(Approver& approver) {
    return ApprovalGate(*files_, approver, absl::Seconds(5), [this] { return *policy_; });
  }

  static v1::WriteRequest Write(const std::string& path, const std::string& content) {
    v1::WriteRequest request;
    request.set_path(path);
    request.set_content(content);
    return request;
  }

  airlock::testing::TempDir workspace_;
  airlock::testing::TempDir outside_;
  std::unique_ptr<FileTools> files_;
  std::unique_ptr<Policy> policy_;
};

TEST_F(RealFileToolsGateTest, ApprovedWriteLandsWithTheApprovedDigest) {
  FakeApprover approver(true);
  ApprovalGate gate = Gate(approver);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(v1::WriteResult result, gate.Write(1, Write("a.txt", "uno\ntwo\n")));
  EXPECT_EQ(result.canonical_path(), workspace_.Child("a.txt"));
  EXPECT_EQ(ReadFileOrMissing(workspace_.Child("a.txt")), "uno\ntwo\n");
  EXPECT_EQ(approver.calls(), 1);
  EXPECT_EQ(approver.last_request().target, workspace_.Child("a.txt"));
  EXPECT_EQ(approver.last_request().content_sha256, result.content_sha256());
  EXPECT_THAT(approver.last_request().diff, HasSubstr("-one\n+uno\n two\n"));
}

TEST_F(RealFileToolsGateTest, ContentChangedWhileAskingWritesNothing) {
  FakeApprover approver(true);
  approver.set_while_asking([this] { WriteFileOrDie(workspace_.Child("a.txt"), "three\n"); });
  ApprovalGate gate = Gate(approver);
  absl::StatusOr<v1::WriteResult> result = gate.Write(1, Write("a.txt", "uno\n"));
  EXPECT_EQ(WireCodeOf(result.status()), v1::APPROVAL_STALE) << result.status();
  EXPECT_EQ(ReadFileOrMissing(workspace_.Child("a.txt")), "three\n");
}

TEST_F(RealFileToolsGateTest, DeniedEditWritesNothing) {
  FakeApprover approver(false);
  ApprovalGate gate = Gate(approver);
  v1::EditRequest edit;
  edit.set_path("a.txt");
  edit.set_old_string("two");
  edit.set_new_string("dos");
  absl::StatusOr<v1::EditResult> result = gate.Edit(1, edit);
  EXPECT_EQ(WireCodeOf(result.status()), v1::NOT_APPROVED);
  EXPECT_EQ(ReadFileOrMissing(workspace_.Child("a.txt")), "one\ntwo\n");
  EXPECT_THAT(result.status().message(), HasSubstr(workspace_.Child("a.txt")));
  EXPECT_THAT(result.status().message(), HasSubstr("[preset read-only]"));
}

TEST_F(RealFileToolsGateTest, OutsideWriteIsFencedUnlessAskIsConfigured) {
  const std::string target = outside_.Child("x.txt");
  FakeApprover approver(true);
  {
    ApprovalGate gate = Gate(approver);
    absl::StatusOr<v1::WriteResult> result = gate.Write(1, Write(target, "x"));
    EXPECT_EQ(WireCodeOf(result.status()), v1::OUTSIDE_SANDBOX) << result.status();
    EXPECT_EQ(approver.calls(), 0);
    EXPECT_EQ(ReadFileOrMissing(target), "<missing>");
  }
  UsePolicy(v1::PRESET_WORKSPACE_WRITE, OutsideWorkspace::kAsk);
  ApprovalGate gate = Gate(approver);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(v1::WriteResult result, gate.Write(2, Write(target, "x")));
  EXPECT_EQ(approver.calls(), 1);
  EXPECT_EQ(ReadFileOrMissing(target), "x");
}

TEST_F(RealFileToolsGateTest, ProtectedPathIsRefusedBeforeAsking) {
  ASSERT_EQ(::mkdir(workspace_.Child(".git").c_str(), 0700), 0);
  UsePolicy(v1::PRESET_WORKSPACE_WRITE, OutsideWorkspace::kDeny);
  FakeApprover approver(true);
  ApprovalGate gate = Gate(approver);
  absl::StatusOr<v1::WriteResult> result = gate.Write(1, Write(".git/hooks/pre-commit", "evil"));
  EXPECT_EQ(WireCodeOf(result.status()), v1::PROTECTED_PATH) << result.status();
  EXPECT_THAT(RuleOf(result.status()), HasSubstr("fence:"));
  EXPECT_EQ(approver.calls(), 0);
  EXPECT_EQ(ReadFileOrMissing(workspace_.Child(".git/hooks/pre-commit")), "<missing>");
}

TEST_F(RealFileToolsGateTest, DangerFullAccessWritesProtectedWithoutAsking) {
  UsePolicy(v1::PRESET_DANGER_FULL_ACCESS, OutsideWorkspace::kDeny);
  FakeApprover approver(false);
  ApprovalGate gate = Gate(approver);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(v1::WriteResult result, gate.Write(1, Write(".envrc", "ok")));
  EXPECT_EQ(approver.calls(), 0);
  EXPECT_EQ(ReadFileOrMissing(workspace_.Child(".envrc")), "ok");
}

}  // namespace
}  // namespace airlock::broker
