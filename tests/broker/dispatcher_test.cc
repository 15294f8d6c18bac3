// The dispatcher with real services (file tools, shell runner, audit log, session store,
// policy state) and a fake approver: routing, the approval path, the write-ahead audit
// discipline, staleness on a policy change, and the session record.
#include "broker/dispatcher.h"

#include <errno.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "broker/audit/audit_key.h"
#include "broker/audit/audit_log.h"
#include "broker/exec/shell_runner.h"
#include "broker/fs/file_tools.h"
#include "broker/gateway/tool_config.h"
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
    if (!tools_json_.empty()) {
      auto config = ParseToolsConfig(tools_json_, "tools.json");
      ASSERT_TRUE(config.ok()) << config.status();
      tools_ = std::make_unique<ToolGateway>(std::move(*config), *shell_, absl::Seconds(30));
      services.tools = tools_.get();
    }
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

  // Before Start: once the returned flag is set, every sync of the audit log fails (EIO).
  std::shared_ptr<std::atomic<bool>> FailAuditSyncsOnceArmed() {
    auto fail = std::make_shared<std::atomic<bool>>(false);
    audit_options_.sync_for_testing = [fail](int fd) {
      if (fail->load()) {
        errno = EIO;
        return -1;
      }
      return ::fdatasync(fd);
    };
    return fail;
  }

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
  std::string tools_json_;  // set before Start() to declare tools
  std::unique_ptr<ToolGateway> tools_;
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
  std::shared_ptr<std::atomic<bool>> fail = FailAuditSyncsOnceArmed();
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
  std::shared_ptr<std::atomic<bool>> fail = FailAuditSyncsOnceArmed();
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
  ASSERT_THAT(session_->Flush(), airlock::testing::IsOk());  // the writer thread has written
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

TEST_F(DispatcherTest, ABashIntentThatCannotBeMadeDurableRunsNothing) {
  // The intent's sync runs while the sandbox is laid out and is awaited before the command
  // starts: when it fails (EIO), the command must not run at all.
  std::shared_ptr<std::atomic<bool>> fail = FailAuditSyncsOnceArmed();
  Start(v1::PRESET_WORKSPACE_WRITE, v1::MODE_ON_REQUEST, true);
  v1::Request request;
  request.set_id(9);
  request.mutable_bash()->set_command("touch ran.txt");
  v1::Response response = dispatcher_->Handle(request, 1, nullptr);
  ASSERT_TRUE(response.has_bash()) << response.DebugString();
  ASSERT_EQ(response.bash().exit_code(), 0);
  ASSERT_EQ(ReadFileOrMissing(workspace_.Child("ran.txt")), "");  // the command does run
  fail->store(true);
  request.set_id(10);
  request.mutable_bash()->set_command("touch refused.txt");
  response = dispatcher_->Handle(request, 1, nullptr);
  ASSERT_TRUE(response.has_error()) << response.DebugString();
  EXPECT_EQ(response.error().code(), v1::INTERNAL);
  EXPECT_EQ(response.error().rule(), "audit:unwritable");
  EXPECT_THAT(response.error().message(), HasSubstr("nothing ran"));
  EXPECT_EQ(ReadFileOrMissing(workspace_.Child("refused.txt")), "<missing>");
}

// Refused before anyone is asked: an escalation without a justification, and a command line
// longer than one argument may be (the kernel's bound; not reported as an unavailable sandbox
// when bash cannot be started).
TEST_F(DispatcherTest, EscalatedBashWithoutJustificationOrATooLongCommandIsRefused) {
  Start(v1::PRESET_WORKSPACE_WRITE, v1::MODE_DEFAULT, true);
  v1::Request request;
  request.set_id(9);
  request.mutable_bash()->set_command("true");
  request.mutable_bash()->set_sandbox_permissions(v1::SANDBOX_PERMISSIONS_REQUIRE_ESCALATED);
  v1::Response response = dispatcher_->Handle(request, 1, nullptr);
  EXPECT_EQ(response.error().code(), v1::INVALID_ARGUMENT);
  request.mutable_bash()->set_command(std::string(ShellRunner::kMaxCommandBytes + 1, ':'));
  request.mutable_bash()->clear_sandbox_permissions();
  response = dispatcher_->Handle(request, 1, nullptr);
  EXPECT_EQ(response.error().code(), v1::TOO_LARGE);
  EXPECT_THAT(response.error().message(), HasSubstr("a command line may be at most 131071 bytes"));
  EXPECT_EQ(approver_->calls(), 0);
}

// A destructive command tool writing TEXT to PATH, and a declared MCP server that is never
// started by these tests.
constexpr char kToolsJson[] = R"({
  "commandTools": [
    {"name": "stamp", "destructive": true,
     "parameters": {"type": "object",
                    "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
                    "required": ["path", "text"]},
     "argv": ["/bin/sh", "-c", "printf '%s' \"$1\" > \"$0\"", "{path}", "{text}"]}
  ],
  "mcpServers": [{"name": "docs", "command": "/nonexistent/server"}]
})";

v1::Request CallTool(uint64_t id, const std::string& name, const std::string& arguments) {
  v1::Request request;
  request.set_id(id);
  request.mutable_call_tool()->set_name(name);
  request.mutable_call_tool()->set_arguments_json(arguments);
  return request;
}

TEST_F(DispatcherTest, WithoutDeclaredToolsListToolsIsEmptyAndCallToolNotFound) {
  Start(v1::PRESET_WORKSPACE_WRITE, v1::MODE_ON_REQUEST, true);
  v1::Request list;
  list.set_id(1);
  list.mutable_list_tools();
  v1::Response listed = dispatcher_->Handle(list, 1, nullptr);
  ASSERT_TRUE(listed.has_list_tools()) << listed.DebugString();
  EXPECT_EQ(listed.list_tools().tools_size(), 0);
  v1::Response called = dispatcher_->Handle(CallTool(2, "stamp", "{}"), 1, nullptr);
  ASSERT_TRUE(called.has_error());
  EXPECT_EQ(called.error().code(), v1::NOT_FOUND);
}

TEST_F(DispatcherTest, ACommandToolRunsInTheSandboxWithItsIntentAudited) {
  tools_json_ = kToolsJson;
  Start(v1::PRESET_WORKSPACE_WRITE, v1::MODE_ON_REQUEST, false);
  v1::Response response = dispatcher_->Handle(
      CallTool(3, "stamp", R"({"path":"s.txt","text":"stamped"})"), 1, nullptr);
  ASSERT_TRUE(response.has_call_tool()) << response.DebugString();
  EXPECT_EQ(response.call_tool().exit_code(), 0) << response.call_tool().stderr();
  EXPECT_FALSE(response.call_tool().is_error());
  EXPECT_EQ(ReadFileOrMissing(workspace_.Child("s.txt")), "stamped");
  ASSERT_EQ(response.call_tool().checked_paths_size(), 1);
  EXPECT_EQ(response.call_tool().checked_paths(0), workspace_.Child("s.txt"));
  EXPECT_EQ(approver_->calls(), 0);  // in authority under on-request
  ASSERT_THAT(audit_->Flush(), airlock::testing::IsOk());
  EXPECT_THAT(AuditText(), HasSubstr("intent: run command tool stamp sandboxed"));
  EXPECT_THAT(AuditText(), HasSubstr("call_tool:stamp"));
}

TEST_F(DispatcherTest, ACommandToolAsksInDefaultModeAndADenialRunsNothing) {
  tools_json_ = kToolsJson;
  Start(v1::PRESET_WORKSPACE_WRITE, v1::MODE_DEFAULT, false);
  v1::Response response = dispatcher_->Handle(
      CallTool(4, "stamp", R"({"path":"s.txt","text":"stamped"})"), 1, nullptr);
  ASSERT_TRUE(response.has_error()) << response.DebugString();
  EXPECT_EQ(response.error().code(), v1::NOT_APPROVED);
  EXPECT_EQ(approver_->calls(), 1);
  EXPECT_EQ(approver_->last_request().tool, "stamp");
  EXPECT_THAT(approver_->last_request().command, HasSubstr("printf"));
  EXPECT_FALSE(approver_->last_request().session_grant_offered);
  EXPECT_EQ(ReadFileOrMissing(workspace_.Child("s.txt")), "<missing>");
}

TEST_F(DispatcherTest, PathArgumentsAreFencedBeforeTheApproverIsAsked) {
  tools_json_ = kToolsJson;
  Start(v1::PRESET_WORKSPACE_WRITE, v1::MODE_DEFAULT, true);
  for (const char* path : {"/etc/passwd", "../escape.txt", ".git/hooks/pre-commit"}) {
    v1::Response response = dispatcher_->Handle(
        CallTool(5, "stamp", absl::StrCat(R"({"path":")", path, R"(","text":"x"})")), 1, nullptr);
    ASSERT_TRUE(response.has_error()) << path;
    EXPECT_TRUE(response.error().code() == v1::OUTSIDE_SANDBOX ||
                response.error().code() == v1::PROTECTED_PATH)
        << path << ": " << response.error().message();
  }
  EXPECT_EQ(approver_->calls(), 0);
  EXPECT_EQ(ReadFileOrMissing(workspace_.Child("../escape.txt")), "<missing>");
}

TEST_F(DispatcherTest, BadToolArgumentsAreInvalidArgument) {
  tools_json_ = kToolsJson;
  Start(v1::PRESET_WORKSPACE_WRITE, v1::MODE_ON_REQUEST, true);
  for (const char* arguments : {"[1,2]", "{\"path\":", R"({"path":"a"})",
                                R"({"path":"a","text":"b","extra":1})", "17"}) {
    v1::Response response = dispatcher_->Handle(CallTool(6, "stamp", arguments), 1, nullptr);
    ASSERT_TRUE(response.has_error()) << arguments;
    EXPECT_EQ(response.error().code(), v1::INVALID_ARGUMENT) << arguments;
  }
  EXPECT_EQ(approver_->calls(), 0);
}

TEST_F(DispatcherTest, ADisabledServerIsRefusedAndGrantsEndWithThePolicyEpoch) {
  tools_json_ = kToolsJson;
  Start(v1::PRESET_WORKSPACE_WRITE, v1::MODE_ON_REQUEST, true);
  const uint64_t epoch = policy_->Current()->epoch();
  tools_->Grant("docs.search", epoch);
  EXPECT_TRUE(tools_->HasGrant("docs.search", epoch));
  EXPECT_FALSE(tools_->HasGrant("docs.fetch", epoch));  // that exact tool only
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      v1::Context changed,
      policy_->ChangePreset(v1::PRESET_READ_ONLY, [](const v1::Context&) { return absl::OkStatus(); },
                            [](const v1::Context&) {}));
  EXPECT_FALSE(tools_->HasGrant("docs.search", changed.policy_epoch()));

  EXPECT_EQ(WireCodeOf(tools_->DisableServer("nosuch")), v1::NOT_FOUND);
  ASSERT_THAT(tools_->DisableServer("docs"), airlock::testing::IsOk());
  v1::Response response = dispatcher_->Handle(CallTool(7, "docs.search", "{}"), 1, nullptr);
  ASSERT_TRUE(response.has_error());
  EXPECT_EQ(response.error().code(), v1::DENIED);
  EXPECT_EQ(response.error().rule(), "mcp:server-disabled");
  EXPECT_EQ(approver_->calls(), 0);
}

// A copy of the test MCP server outside /tmp (the build tree may sit under /tmp, which the
// shell sandbox replaces by its private one), removed afterwards.
class McpServerCopy {
 public:
  McpServerCopy() {
    std::string dir = "/var/tmp/airlock-dispatcher-test-XXXXXX";
    if (::mkdtemp(dir.data()) == nullptr) return;
    dir_ = dir;
    path_ = dir_ + "/test_mcp_server";
    WriteFileOrDie(path_, ReadFileOrMissing(AIRLOCK_TEST_MCP_SERVER));
    ::chmod(path_.c_str(), 0755);
  }
  ~McpServerCopy() {
    if (!dir_.empty()) airlock::testing::RemoveTree(dir_);
  }
  std::string ToolsJson() const {
    return absl::StrCat(R"({"mcpServers": [{"name": "fs", "command": ")", path_, R"("}]})");
  }

 private:
  std::string dir_;
  std::string path_;
};

TEST_F(DispatcherTest, ASessionGrantSkipsLaterQuestionsForThatMcpToolOnlyUntilThePresetChanges) {
  McpServerCopy server;
  tools_json_ = server.ToolsJson();
  // Full access would never ask; workspace-write asks every MCP call without a grant. The
  // server runs in the real shell sandbox.
  Start(v1::PRESET_WORKSPACE_WRITE, v1::MODE_ON_REQUEST, true);
  approver_->set_for_session(true);
  for (int i = 0; i < 3; ++i) {
    v1::Response echoed =
        dispatcher_->Handle(CallTool(10 + i, "fs.echo", R"({"text":"hi"})"), 1, nullptr);
    ASSERT_TRUE(echoed.has_call_tool()) << echoed.DebugString();
    EXPECT_EQ(echoed.call_tool().text(), "hi");
  }
  EXPECT_EQ(approver_->calls(), 1);
  EXPECT_TRUE(approver_->last_request().session_grant_offered);
  v1::Response other = dispatcher_->Handle(
      CallTool(20, "fs.read_file", absl::StrCat(R"({"path":"a.txt"})")), 1, nullptr);
  ASSERT_TRUE(other.has_call_tool()) << other.DebugString();
  EXPECT_EQ(other.call_tool().text(), "alpha");
  EXPECT_EQ(approver_->calls(), 2);  // another tool: asked

  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      v1::Context changed,
      policy_->ChangePreset(v1::PRESET_READ_ONLY, [](const v1::Context&) { return absl::OkStatus(); },
                            [](const v1::Context&) {}));
  (void)changed;
  v1::Response after = dispatcher_->Handle(CallTool(21, "fs.echo", R"({"text":"ro"})"), 1, nullptr);
  ASSERT_TRUE(after.has_call_tool()) << after.DebugString();
  EXPECT_EQ(approver_->calls(), 3);  // the grant ended with the preset
  ASSERT_THAT(audit_->Flush(), airlock::testing::IsOk());
  EXPECT_THAT(AuditText(), HasSubstr("session-grant"));
  EXPECT_THAT(AuditText(), HasSubstr("approved-for-session"));
}

TEST_F(DispatcherTest, ACancelledMcpCallEndsPromptly) {
  McpServerCopy server;
  tools_json_ = server.ToolsJson();
  Start(v1::PRESET_DANGER_FULL_ACCESS, v1::MODE_NEVER, false);
  CancelToken cancel;
  std::thread canceller([&cancel] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    cancel.Cancel();
  });
  const absl::Time start = absl::Now();
  v1::Response response =
      dispatcher_->Handle(CallTool(30, "fs.sleep", R"({"seconds":60})"), 1, &cancel);
  canceller.join();
  ASSERT_TRUE(response.has_error()) << response.DebugString();
  EXPECT_EQ(response.error().code(), v1::CANCELLED) << response.error().message();
  EXPECT_LT(absl::Now() - start, absl::Seconds(20));
  // The server was stopped with the call; the next call starts a fresh one.
  v1::Response next = dispatcher_->Handle(CallTool(31, "fs.echo", R"({"text":"again"})"), 1, nullptr);
  ASSERT_TRUE(next.has_call_tool()) << next.DebugString();
  EXPECT_EQ(next.call_tool().text(), "again");
}

}  // namespace
}  // namespace airlock::broker
