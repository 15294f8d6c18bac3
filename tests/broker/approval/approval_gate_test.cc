// The approval path end to end over real files: plan → ask → (something changes while the
// approver decides) → re-plan → ticket redeemed → APPROVAL_STALE, nothing written.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

#include "broker/approval/authorize.h"
#include "broker/wire_error.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/broker/approval/fake_approver.h"
#include "tests/broker/approval/fake_file_tools.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker {
namespace {

using ::airlock::broker::testing::FakeApprover;
using ::airlock::broker::testing::FakeFileTools;
using ::airlock::testing::ReadFileOrMissing;
using ::airlock::testing::WriteFileOrDie;
using ::testing::HasSubstr;

class ApprovalGateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::mkdir(dir().c_str(), 0700), 0);
    WriteFileOrDie(target(), "old line\n");
    files_ = std::make_unique<FakeFileTools>(workspace_.path());
    SetPolicy(v1::PRESET_READ_ONLY, 1);  // every write asks (out of authority)
  }

  void SetPolicy(v1::Preset preset, int changes) {
    absl::StatusOr<Policy> policy =
        PolicyBuilder().AddRoot(workspace_.path()).SetPreset(preset).Build();
    ASSERT_TRUE(policy.ok());
    Policy p = *policy;
    for (int i = 1; i < changes; ++i) p = *PolicyBuilder(p).Build();
    policy_ = std::make_unique<Policy>(p);
  }

  std::unique_ptr<ApprovalGate> Gate(Approver& approver) {
    return std::make_unique<ApprovalGate>(*files_, approver, absl::Seconds(5),
                                          [this] { return *policy_; });
  }

  std::string dir() const { return workspace_.Child("src"); }
  std::string target() const { return workspace_.Child("src/a.txt"); }

  v1::WriteRequest WriteRequest(const std::string& path, const std::string& content) {
    v1::WriteRequest request;
    request.set_path(path);
    request.set_content(content);
    request.set_justification("fix the greeting");
    return request;
  }

  airlock::testing::TempDir workspace_;
  std::unique_ptr<FakeFileTools> files_;
  std::unique_ptr<Policy> policy_;
};

TEST_F(ApprovalGateTest, ApprovedWriteIsCommittedWithTheApprovedBytes) {
  FakeApprover approver(true);
  auto gate = Gate(approver);
  absl::StatusOr<v1::WriteResult> result = gate->Write(7, WriteRequest(target(), "new line\n"));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(approver.calls(), 1);
  EXPECT_EQ(files_->commits(), 1);
  EXPECT_EQ(ReadFileOrMissing(target()), "new line\n");
  // The approver saw the canonical target, a diff, the digest and the justification.
  const ApprovalRequest& shown = approver.last_request();
  EXPECT_EQ(shown.request_id, 7u);
  EXPECT_EQ(shown.tool, "write");
  EXPECT_EQ(shown.target, target());
  EXPECT_THAT(shown.diff, HasSubstr("-old line\n+new line\n"));
  EXPECT_EQ(shown.content_sha256, Sha256Hex("new line\n"));
  EXPECT_EQ(shown.justification, "fix the greeting");
  EXPECT_EQ(shown.preset, "read-only");
  // An approved in-root write crosses no fence.
  EXPECT_FALSE(files_->last_permission().allow_outside);
  EXPECT_FALSE(files_->last_permission().allow_protected);
}

TEST_F(ApprovalGateTest, DeniedWriteWritesNothing) {
  FakeApprover approver(false);
  auto gate = Gate(approver);
  absl::StatusOr<v1::WriteResult> result = gate->Write(7, WriteRequest(target(), "new\n"));
  EXPECT_EQ(WireCodeOf(result.status()), v1::NOT_APPROVED);
  EXPECT_EQ(files_->commits(), 0);
  EXPECT_EQ(ReadFileOrMissing(target()), "old line\n");
}

TEST_F(ApprovalGateTest, StaleWhenTheContentChangesWhileTheApproverDecides) {
  FakeApprover approver(true);
  approver.set_while_asking([this] {
    struct stat before {};
    ASSERT_EQ(::stat(target().c_str(), &before), 0);
    WriteFileOrDie(target(), "changed behind the approver's back\n");  // same inode
    struct stat after {};
    ASSERT_EQ(::stat(target().c_str(), &after), 0);
    ASSERT_EQ(before.st_ino, after.st_ino);
  });
  auto gate = Gate(approver);
  absl::StatusOr<v1::WriteResult> result = gate->Write(1, WriteRequest(target(), "new\n"));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(WireCodeOf(result.status()), v1::APPROVAL_STALE);
  EXPECT_EQ(RuleOf(result.status()), "approval:stale:content");
  EXPECT_THAT(result.status().message(), HasSubstr("content changed"));
  EXPECT_THAT(result.status().message(), HasSubstr(target()));
  EXPECT_THAT(result.status().message(), HasSubstr("[preset read-only]"));
  EXPECT_EQ(files_->commits(), 0);
  EXPECT_EQ(ReadFileOrMissing(target()), "changed behind the approver's back\n");
}

TEST_F(ApprovalGateTest, StaleWhenTheInodeChangesWhileTheApproverDecides) {
  FakeApprover approver(true);
  approver.set_while_asking([this] {
    // The same bytes under a new inode (a rename over the target).
    const std::string other = workspace_.Child("src/other");
    WriteFileOrDie(other, "old line\n");
    ASSERT_EQ(::rename(other.c_str(), target().c_str()), 0);
  });
  auto gate = Gate(approver);
  absl::StatusOr<v1::WriteResult> result = gate->Write(1, WriteRequest(target(), "new\n"));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(WireCodeOf(result.status()), v1::APPROVAL_STALE);
  EXPECT_EQ(RuleOf(result.status()), "approval:stale:inode");
  EXPECT_EQ(files_->commits(), 0);
  EXPECT_EQ(ReadFileOrMissing(target()), "old line\n");
}

TEST_F(ApprovalGateTest, StaleWhenTheParentDirectoryChangesWhileTheApproverDecides) {
  const std::string created = workspace_.Child("src/new.txt");  // absent: a create
  FakeApprover approver(true);
  approver.set_while_asking([this] {
    ASSERT_EQ(::rename(dir().c_str(), workspace_.Child("src.moved").c_str()), 0);
    ASSERT_EQ(::mkdir(dir().c_str(), 0700), 0);
  });
  auto gate = Gate(approver);
  absl::StatusOr<v1::WriteResult> result = gate->Write(1, WriteRequest(created, "new\n"));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(WireCodeOf(result.status()), v1::APPROVAL_STALE);
  EXPECT_EQ(RuleOf(result.status()), "approval:stale:parent");
  EXPECT_THAT(result.status().message(), HasSubstr("parent directory changed"));
  EXPECT_EQ(files_->commits(), 0);
  EXPECT_EQ(ReadFileOrMissing(created), "<missing>");
}

TEST_F(ApprovalGateTest, StaleWhenThePresetChangesWhileTheApproverDecides) {
  FakeApprover approver(true);
  approver.set_while_asking([this] { SetPolicy(v1::PRESET_WORKSPACE_WRITE, 2); });
  auto gate = Gate(approver);
  absl::StatusOr<v1::WriteResult> result = gate->Write(1, WriteRequest(target(), "new\n"));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(WireCodeOf(result.status()), v1::APPROVAL_STALE);
  EXPECT_EQ(RuleOf(result.status()), "approval:stale:policy-epoch");
  EXPECT_THAT(result.status().message(),
              HasSubstr("preset read-only epoch 1 -> preset workspace-write epoch 2"));
  EXPECT_EQ(files_->commits(), 0);
  EXPECT_EQ(ReadFileOrMissing(target()), "old line\n");
}

TEST_F(ApprovalGateTest, EditIsBoundTheSameWay) {
  FakeApprover approver(true);
  approver.set_while_asking([this] { WriteFileOrDie(target(), "old line, edited\n"); });
  auto gate = Gate(approver);
  v1::EditRequest edit;
  edit.set_path(target());
  edit.set_old_string("old");
  edit.set_new_string("new");
  absl::StatusOr<v1::EditResult> result = gate->Edit(3, edit);
  EXPECT_EQ(WireCodeOf(result.status()), v1::APPROVAL_STALE);
  EXPECT_EQ(files_->commits(), 0);

  FakeApprover quiet(true);
  auto gate2 = Gate(quiet);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(v1::EditResult done, gate2->Edit(4, edit));
  EXPECT_EQ(done.replacements(), 1u);
  EXPECT_EQ(done.canonical_path(), target());
  EXPECT_EQ(ReadFileOrMissing(target()), "new line, edited\n");
}

TEST_F(ApprovalGateTest, InAuthorityWritesRunWithoutAsking) {
  SetPolicy(v1::PRESET_WORKSPACE_WRITE, 1);
  FakeApprover approver(false);
  auto gate = Gate(approver);
  EXPECT_TRUE(gate->Write(1, WriteRequest(target(), "new\n")).ok());
  EXPECT_EQ(approver.calls(), 0);
  EXPECT_EQ(files_->commits(), 1);
}

TEST_F(ApprovalGateTest, FencesRefuseBeforeAsking) {
  SetPolicy(v1::PRESET_WORKSPACE_WRITE, 1);
  FakeApprover approver(true);
  auto gate = Gate(approver);
  absl::StatusOr<v1::WriteResult> result =
      gate->Write(1, WriteRequest(workspace_.Child(".envrc"), "evil"));
  EXPECT_EQ(WireCodeOf(result.status()), v1::PROTECTED_PATH);
  EXPECT_EQ(RuleOf(result.status()), "fence:protected:.envrc");
  v1::WriteRequest with_permissions = WriteRequest(target(), "x");
  with_permissions.set_sandbox_permissions(v1::SANDBOX_PERMISSIONS_REQUIRE_ESCALATED);
  EXPECT_EQ(WireCodeOf(gate->Write(1, with_permissions).status()), v1::INVALID_ARGUMENT);
  EXPECT_EQ(approver.calls(), 0);
  EXPECT_EQ(files_->commits(), 0);
}

TEST_F(ApprovalGateTest, ObserverSeesDecisionAnswerAndIntentInOrder) {
  FakeApprover approver(true);
  auto gate = Gate(approver);
  std::vector<std::string> events;
  gate->set_observer([&events](const GateEvent& event) {
    switch (event.kind) {
      case GateEvent::Kind::kDecided:
        events.push_back(absl::StrCat("decided ", VerdictName(event.decision->verdict), " ",
                                      event.decision->rule, " ", event.target));
        break;
      case GateEvent::Kind::kAnswered:
        events.push_back(absl::StrCat("answered ", event.answer->approved ? "yes" : "no"));
        break;
      case GateEvent::Kind::kCommitting:
        events.push_back(absl::StrCat("committing ", event.content_sha256));
        break;
    }
    return absl::OkStatus();
  });
  ASSERT_TRUE(gate->Write(1, WriteRequest(target(), "new\n")).ok());
  EXPECT_THAT(events, ::testing::ElementsAre(
                          absl::StrCat("decided ask read-only:write-out-of-authority ", target()),
                          "answered yes", absl::StrCat("committing ", Sha256Hex("new\n"))));
}

TEST_F(ApprovalGateTest, AnObserverThatCannotRecordStopsTheWrite) {
  SetPolicy(v1::PRESET_WORKSPACE_WRITE, 1);
  FakeApprover approver(true);
  auto gate = Gate(approver);
  gate->set_observer([](const GateEvent& event) {
    return event.kind == GateEvent::Kind::kCommitting
               ? absl::UnavailableError("audit log: no space left on device")
               : absl::OkStatus();
  });
  absl::StatusOr<v1::WriteResult> result = gate->Write(1, WriteRequest(target(), "new\n"));
  EXPECT_THAT(result.status().message(), HasSubstr("no space left"));
  EXPECT_EQ(files_->commits(), 0);
  EXPECT_EQ(ReadFileOrMissing(target()), "old line\n");
}

TEST_F(ApprovalGateTest, BashEscalationIsBoundToTheEpoch) {
  SetPolicy(v1::PRESET_WORKSPACE_WRITE, 1);
  v1::BashRequest bash;
  bash.set_command("make install");
  bash.set_sandbox_permissions(v1::SANDBOX_PERMISSIONS_REQUIRE_ESCALATED);
  bash.set_justification("install into /usr/local");

  FakeApprover yes(true);
  auto gate = Gate(yes);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ApprovalGate::BashPermit permit,
                               gate->AuthorizeBash(5, bash, workspace_.path()));
  EXPECT_TRUE(permit.unsandboxed);
  EXPECT_TRUE(permit.asked);
  EXPECT_EQ(yes.last_request().command, "make install");
  EXPECT_EQ(yes.last_request().cwd, workspace_.path());
  EXPECT_TRUE(yes.last_request().escalated);

  FakeApprover racing(true);
  racing.set_while_asking([this] { SetPolicy(v1::PRESET_READ_ONLY, 2); });
  auto gate2 = Gate(racing);
  EXPECT_EQ(WireCodeOf(gate2->AuthorizeBash(6, bash, workspace_.path()).status()),
            v1::APPROVAL_STALE);

  v1::BashRequest plain;
  plain.set_command("ls");
  FakeApprover unused(false);
  auto gate3 = Gate(unused);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(ApprovalGate::BashPermit sandboxed,
                               gate3->AuthorizeBash(7, plain, workspace_.path()));
  EXPECT_FALSE(sandboxed.unsandboxed);
  EXPECT_FALSE(sandboxed.asked);
  EXPECT_EQ(unused.calls(), 0);
}

TEST_F(ApprovalGateTest, AnUnaskedWriteThatWentStaleIsPlannedAndDecidedAgain) {
  SetPolicy(v1::PRESET_WORKSPACE_WRITE, 1);  // in authority: nobody is asked
  FakeApprover approver(true);
  auto gate = Gate(approver);
  files_->set_stale_commits(2);
  absl::StatusOr<v1::WriteResult> result = gate->Write(7, WriteRequest(target(), "new\n"));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(files_->commits(), 3);
  EXPECT_EQ(approver.calls(), 0);
  EXPECT_EQ(ReadFileOrMissing(target()), "new\n");

  // Bounded: a path that keeps changing is refused in the end.
  files_->set_stale_commits(100);
  result = gate->Write(8, WriteRequest(target(), "newer\n"));
  EXPECT_EQ(WireCodeOf(result.status()), v1::APPROVAL_STALE);
  EXPECT_EQ(ReadFileOrMissing(target()), "new\n");
}

TEST_F(ApprovalGateTest, AnApprovedWriteThatWentStaleIsNeverRetried) {
  FakeApprover approver(true);  // read-only: every write asks
  auto gate = Gate(approver);
  files_->set_stale_commits(1);
  absl::StatusOr<v1::WriteResult> result = gate->Write(7, WriteRequest(target(), "new\n"));
  EXPECT_EQ(WireCodeOf(result.status()), v1::APPROVAL_STALE);
  EXPECT_EQ(approver.calls(), 1);
  EXPECT_EQ(files_->commits(), 1);
  EXPECT_EQ(ReadFileOrMissing(target()), "old line\n");
}

}  // namespace
}  // namespace airlock::broker
