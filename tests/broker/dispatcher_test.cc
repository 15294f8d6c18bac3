// The dispatcher with real services (file tools, shell runner, audit log, session store,
// policy state) and a fake approver: routing, the approval path, the write-ahead audit
// discipline, staleness on a policy change, and the session record.
#include "broker/dispatcher.h"

#include <errno.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "broker/audit/audit_key.h"
#include "broker/audit/audit_log.h"
#include "broker/exec/shell_runner.h"
#include "broker/fs/file_tools.h"
#include "broker/policy/policy.h"
#include "broker/policy_state.h"
#include "broker/session/session_store.h"
#include "broker/wire_error.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/broker/approval/fake_approver.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker {
namespace {

using ::airlock::testing::ReadFileOrMissing;
using ::airlock::testing::TempDir;
using ::airlock::testing::WriteFileOrDie;
using ::testing::HasSubstr;
using ::testing::Not;

class DispatcherTest : public ::testing::Test {
 protected:
  // Builds the services for `preset`/`mode`, answering approvals with `approve`.
  void Start(v1::Preset preset, v1::Mode mode, bool approve) {
    WriteFileOrDie(workspace_.Child("a.txt"), "alpha");
    FileToolsOptions file_options;
    file_options.roots = {workspace_.path()};
    file_options.reads_confined_to_roots = true;
    file_options.broker_secret_paths = {home_.path()};
    auto files = FileTools::Create(file_options);
    ASSERT_TRUE(files.ok()) << files.status();
    files_ = std::move(*files);

    ShellRunnerOptions shell_options;
    shell_options.runtime_dir = home_.Child("run");
    auto shell = ShellRunner::Create(shell_options);
    ASSERT_TRUE(shell.ok()) << shell.status();
    shell_ = std::move(*shell);

    audit::AuditKeyOptions key_options;
    key_options.env_key = std::string(64, 'a');
    key_options.airlock_home = home_.path();
    key_options.create_default = false;
    auto key = audit::LoadOrCreateAuditKey(key_options);
    ASSERT_TRUE(key.ok()) << key.status();
    auto log = audit::AuditLog::Open(home_.Child("audit.jsonl"), *key, "s", audit_options_);
    ASSERT_TRUE(log.ok()) << log.status();
    audit_ = std::move(*log);

    auto session = SessionStore::Create(home_.Child("sessions"), "s", "read-only",
                                        workspace_.path());
    ASSERT_TRUE(session.ok()) << session.status();
    session_ = std::move(*session);

    auto policy =
        PolicyBuilder().SetPreset(preset).SetMode(mode).AddRoot(workspace_.path()).Build();
    ASSERT_TRUE(policy.ok()) << policy.status();
    v1::Context base;
    base.set_session_id("s");
    policy_ = std::make_unique<PolicyState>(std::move(*policy), base);

    approver_ = std::make_unique<testing::FakeApprover>(approve);
    BrokerServices services;
    services.files = files_.get();
    services.shell = shell_.get();
    services.approver = approver_.get();
    services.approval_timeout = absl::Seconds(5);
    services.audit = audit_.get();
    services.session = session_.get();
    services.policy = policy_.get();
    dispatcher_ = std::make_unique<Dispatcher>(services);
  }

  v1::Response Write(const std::string& path, const std::string& content) {
    v1::Request request;
    request.set_id(next_id_++);
    request.mutable_write()->set_path(path);
    request.mutable_write()->set_content(content);
    return dispatcher_->Handle(request, 1, nullptr);
  }

  std::string AuditText() { return ReadFileOrMissing(home_.Child("audit.jsonl")); }

  // Names in the workspace, sorted.
  std::vector<std::string> WorkspaceNames() {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(workspace_.path())) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  audit::AuditLogOptions audit_options_;

  TempDir workspace_;
  TempDir home_;
  std::unique_ptr<FileTools> files_;
  std::unique_ptr<ShellRunner> shell_;
  std::unique_ptr<audit::AuditLog> audit_;
  std::unique_ptr<SessionStore> session_;
  std::unique_ptr<PolicyState> policy_;
  std::unique_ptr<testing::FakeApprover> approver_;
  std::unique_ptr<Dispatcher> dispatcher_;
  uint64_t next_id_ = 1;
};

TEST_F(DispatcherTest, ReadAnswersWithTheSameIdAndIsAudited) {
  Start(v1::PRESET_READ_ONLY, v1::MODE_ON_REQUEST, false);
  v1::Request request;
  request.set_id(42);
  request.mutable_read()->set_path("a.txt");
  v1::Response response = dispatcher_->Handle(request, 1, nullptr);
  EXPECT_EQ(response.id(), 42u);
  ASSERT_TRUE(response.has_read()) << response.DebugString();
  EXPECT_EQ(response.read().content(), "alpha");
  ASSERT_THAT(audit_->Flush(), airlock::testing::IsOk());
  EXPECT_THAT(AuditText(), HasSubstr("\"request\""));
  EXPECT_THAT(AuditText(), Not(HasSubstr("alpha")));  // never file contents
  EXPECT_EQ(approver_->calls(), 0);
}

TEST_F(DispatcherTest, EmptyBodyIsInvalidArgumentNamingThePreset) {
  Start(v1::PRESET_READ_ONLY, v1::MODE_ON_REQUEST, false);
  v1::Request request;
  request.set_id(7);
  v1::Response response = dispatcher_->Handle(request, 1, nullptr);
  EXPECT_EQ(response.id(), 7u);
  ASSERT_TRUE(response.has_error());
  EXPECT_EQ(response.error().code(), v1::INVALID_ARGUMENT);
  EXPECT_THAT(response.error().message(), HasSubstr("preset read-only"));
}

TEST_F(DispatcherTest, GetContextReturnsTheCurrentContext) {
  Start(v1::PRESET_WORKSPACE_WRITE, v1::MODE_ON_REQUEST, false);
  v1::Request request;
  request.set_id(1);
  request.mutable_get_context();
  v1::Response response = dispatcher_->Handle(request, 1, nullptr);
  ASSERT_TRUE(response.has_context());
  EXPECT_EQ(response.context().session_id(), "s");
  EXPECT_EQ(response.context().preset(), v1::PRESET_WORKSPACE_WRITE);
}

TEST_F(DispatcherTest, ReadOnlyWriteAsksAndANoRefusesWithNothingWritten) {
  Start(v1::PRESET_READ_ONLY, v1::MODE_ON_REQUEST, false);
  v1::Response response = Write("a.txt", "changed");
  ASSERT_TRUE(response.has_error()) << response.DebugString();
  EXPECT_EQ(response.error().code(), v1::NOT_APPROVED);
  EXPECT_THAT(response.error().message(), HasSubstr("read-only"));
  EXPECT_EQ(approver_->calls(), 1);
  EXPECT_EQ(ReadFileOrMissing(workspace_.Child("a.txt")), "alpha");
  EXPECT_THAT(AuditText(), HasSubstr("approval_asked"));
  EXPECT_THAT(AuditText(), HasSubstr("approval_answered"));
}

TEST_F(DispatcherTest, ApprovedWriteIsPerformedAfterADurableIntent) {
  Start(v1::PRESET_READ_ONLY, v1::MODE_ON_REQUEST, true);
  v1::Response response = Write("a.txt", "changed");
  ASSERT_TRUE(response.has_write()) << response.DebugString();
  EXPECT_EQ(ReadFileOrMissing(workspace_.Child("a.txt")), "changed");
  const std::string log = AuditText();
  // The intent is on disk already (durable), before the result that follows it.
  EXPECT_THAT(log, HasSubstr("intent: replace atomically"));
}

TEST_F(DispatcherTest, InAuthorityWriteRunsWithoutAsking) {
  Start(v1::PRESET_WORKSPACE_WRITE, v1::MODE_ON_REQUEST, false);
  v1::Response response = Write("new/b.txt", "bee");
  ASSERT_TRUE(response.has_write()) << response.DebugString();
  EXPECT_EQ(approver_->calls(), 0);
  EXPECT_EQ(ReadFileOrMissing(workspace_.Child("new/b.txt")), "bee");
}

TEST_F(DispatcherTest, ProtectedWriteIsRefusedBeforeAnyoneIsAsked) {
  Start(v1::PRESET_WORKSPACE_WRITE, v1::MODE_DEFAULT, true);
  v1::Response response = Write(".git/hooks/pre-commit", "evil");
  ASSERT_TRUE(response.has_error());
  EXPECT_EQ(response.error().code(), v1::PROTECTED_PATH);
  EXPECT_EQ(approver_->calls(), 0);
  EXPECT_EQ(ReadFileOrMissing(workspace_.Child(".git/hooks/pre-commit")), "<missing>");
}

TEST_F(DispatcherTest, PresetChangeWhileTheApproverDecidesMakesTheApprovalStale) {
  Start(v1::PRESET_READ_ONLY, v1::MODE_ON_REQUEST, true);
  approver_->set_while_asking([this] {
    auto changed = policy_->ChangePreset(
        v1::PRESET_WORKSPACE_WRITE, [](const v1::Context&) { return absl::OkStatus(); },
        [](const v1::Context&) {});
    ASSERT_TRUE(changed.ok()) << changed.status();
  });
  v1::Response response = Write("a.txt", "changed");
  ASSERT_TRUE(response.has_error()) << response.DebugString();
  EXPECT_EQ(response.error().code(), v1::APPROVAL_STALE);
  EXPECT_EQ(ReadFileOrMissing(workspace_.Child("a.txt")), "alpha");
}

TEST_F(DispatcherTest, PresetChangeIsBusyWhileACallExecutes) {
  Start(v1::PRESET_WORKSPACE_WRITE, v1::MODE_ON_REQUEST, true);
  auto execution = policy_->BeginExecution(policy_->Current()->epoch());
  ASSERT_TRUE(execution.ok());
  bool persisted = false;
  auto changed = policy_->ChangePreset(
      v1::PRESET_READ_ONLY,
      [&persisted](const v1::Context&) {
        persisted = true;
        return absl::OkStatus();
      },
      [](const v1::Context&) {});
  EXPECT_EQ(WireCodeOf(changed.status()), v1::BUSY);
  EXPECT_FALSE(persisted);
  EXPECT_EQ(policy_->Current()->preset(), v1::PRESET_WORKSPACE_WRITE);
}

TEST_F(DispatcherTest, FailedPersistenceKeepsThePreviousPreset) {
  Start(v1::PRESET_WORKSPACE_WRITE, v1::MODE_ON_REQUEST, true);
  bool published = false;
  auto changed = policy_->ChangePreset(
      v1::PRESET_READ_ONLY, [](const v1::Context&) { return absl::InternalError("disk full"); },
      [&published](const v1::Context&) { published = true; });
  EXPECT_FALSE(changed.ok());
  EXPECT_THAT(std::string(changed.status().message()), HasSubstr("disk full"));
  EXPECT_FALSE(published);
  EXPECT_EQ(policy_->Current()->preset(), v1::PRESET_WORKSPACE_WRITE);
}

TEST_F(DispatcherTest, AnUnwritableAuditLogRefusesTheWrite) {
  Start(v1::PRESET_WORKSPACE_WRITE, v1::MODE_ON_REQUEST, true);
  ASSERT_THAT(audit_->Seal("test"), airlock::testing::IsOk());  // every later append fails
  v1::Response response = Write("a.txt", "changed");
  ASSERT_TRUE(response.has_error()) << response.DebugString();
  EXPECT_THAT(response.error().message(), HasSubstr("audit log"));
  EXPECT_EQ(ReadFileOrMissing(workspace_.Child("a.txt")), "alpha");
}

TEST_F(DispatcherTest, AnIntentThatCannotBeMadeDurableRefusesTheWriteWithNothingRenamed) {
  // Every background sync of the log fails (EIO) once armed: the intent is written, but it
  // cannot reach the disk, so the write must not happen — the temp file was written and
  // synced in parallel, and is removed.
  auto fail = std::make_shared<std::atomic<bool>>(false);
  audit_options_.sync_for_testing = [fail](int fd) {
    if (fail->load()) {
      errno = EIO;
      return -1;
    }
    return ::fdatasync(fd);
  };
  Start(v1::PRESET_WORKSPACE_WRITE, v1::MODE_ON_REQUEST, true);
  const std::vector<std::string> before = WorkspaceNames();
  fail->store(true);
  v1::Response response = Write("a.txt", "changed");
  ASSERT_TRUE(response.has_error()) << response.DebugString();
  EXPECT_EQ(response.error().code(), v1::INTERNAL);
  EXPECT_EQ(response.error().rule(), "audit:unwritable");
  EXPECT_THAT(response.error().message(), HasSubstr("audit log"));
  EXPECT_THAT(response.error().message(), HasSubstr("nothing was changed"));
  EXPECT_EQ(ReadFileOrMissing(workspace_.Child("a.txt")), "alpha");
  EXPECT_EQ(WorkspaceNames(), before) << "a temp file or directory was left behind";
  // The log is broken now: a new file in a new directory is refused before anything is made.
  response = Write("new/b.txt", "bee");
  ASSERT_TRUE(response.has_error()) << response.DebugString();
  EXPECT_EQ(ReadFileOrMissing(workspace_.Child("new")), "<missing>");
  EXPECT_EQ(WorkspaceNames(), before);
}

TEST_F(DispatcherTest, ANewDirectoryWaitsForTheDurableIntent) {
  // The intent's sync fails only for the first write, which creates a directory: the
  // directory must not be made either.
  auto fail = std::make_shared<std::atomic<bool>>(false);
  audit_options_.sync_for_testing = [fail](int fd) {
    if (fail->load()) {
      errno = EIO;
      return -1;
    }
    return ::fdatasync(fd);
  };
  Start(v1::PRESET_WORKSPACE_WRITE, v1::MODE_ON_REQUEST, true);
  const std::vector<std::string> before = WorkspaceNames();
  fail->store(true);
  v1::Response response = Write("deep/er/b.txt", "bee");
  ASSERT_TRUE(response.has_error()) << response.DebugString();
  EXPECT_EQ(response.error().rule(), "audit:unwritable");
  EXPECT_EQ(WorkspaceNames(), before);
}

TEST_F(DispatcherTest, AnAcknowledgedWriteHasADurableIntentAndItsOutcomeFollows) {
  std::atomic<int> syncs{0};
  audit_options_.sync_for_testing = [&syncs](int fd) {
    ++syncs;
    return ::fdatasync(fd);
  };
  Start(v1::PRESET_WORKSPACE_WRITE, v1::MODE_ON_REQUEST, true);
  const int before = syncs.load();
  v1::Response response = Write("a.txt", "changed");
  ASSERT_TRUE(response.has_write()) << response.DebugString();
  // At least the intent's sync happened before the reply.
  EXPECT_GE(syncs.load(), before + 1);
  EXPECT_THAT(AuditText(), HasSubstr("intent: replace atomically"));
  // The outcome is in the file at once, and durable after a flush.
  EXPECT_THAT(AuditText(), HasSubstr("\"event\":\"result\""));
  ASSERT_THAT(audit_->Flush(), airlock::testing::IsOk());
}

TEST_F(DispatcherTest, TheSessionRecordsTheContextOnceAndEveryCall) {
  Start(v1::PRESET_WORKSPACE_WRITE, v1::MODE_ON_REQUEST, true);
  (void)Write("x.txt", "1");
  (void)Write("y.txt", "2");
  const std::string session = ReadFileOrMissing(session_->path());
  size_t snapshots = 0;
  for (size_t at = session.find("\"context\""); at != std::string::npos;
       at = session.find("\"context\"", at + 1)) {
    ++snapshots;
  }
  EXPECT_EQ(snapshots, 1u) << session;
  EXPECT_THAT(session, HasSubstr("\"toolCall\""));
  EXPECT_THAT(session, HasSubstr("\"toolResult\""));
  EXPECT_THAT(session, Not(HasSubstr("approval")));
}

TEST_F(DispatcherTest, BashRunsInTheSandboxAndReportsThePreset) {
  Start(v1::PRESET_READ_ONLY, v1::MODE_ON_REQUEST, false);
  v1::Request request;
  request.set_id(9);
  request.mutable_bash()->set_command("echo hi; touch inside.txt; exit 3");
  v1::Response response = dispatcher_->Handle(request, 1, nullptr);
  ASSERT_TRUE(response.has_bash()) << response.DebugString();
  EXPECT_EQ(response.bash().exit_code(), 3);
  EXPECT_EQ(response.bash().stdout(), "hi\n");
  EXPECT_EQ(response.bash().preset(), v1::PRESET_READ_ONLY);
  EXPECT_EQ(ReadFileOrMissing(workspace_.Child("inside.txt")), "<missing>");
  EXPECT_EQ(approver_->calls(), 0);
}

TEST_F(DispatcherTest, EscalatedBashWithoutJustificationIsInvalid) {
  Start(v1::PRESET_WORKSPACE_WRITE, v1::MODE_ON_REQUEST, true);
  v1::Request request;
  request.set_id(9);
  request.mutable_bash()->set_command("true");
  request.mutable_bash()->set_sandbox_permissions(v1::SANDBOX_PERMISSIONS_REQUIRE_ESCALATED);
  v1::Response response = dispatcher_->Handle(request, 1, nullptr);
  ASSERT_TRUE(response.has_error());
  EXPECT_EQ(response.error().code(), v1::INVALID_ARGUMENT);
  EXPECT_EQ(approver_->calls(), 0);
}

}  // namespace
}  // namespace airlock::broker
