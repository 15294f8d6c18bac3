#include "broker/policy/decision.h"

#include "absl/strings/str_cat.h"
#include "broker/wire_error.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace airlock::broker {
namespace {

using ::testing::HasSubstr;

Policy MakePolicy(v1::Preset preset, v1::Mode mode = v1::MODE_UNSPECIFIED,
                  OutsideWorkspace outside = OutsideWorkspace::kDeny,
                  ReadScope scope = ReadScope::kAny, absl::string_view edit_tools = "write,edit") {
  PolicyBuilder builder;
  builder.AddRoot("/w").SetPreset(preset).SetOutsideWorkspace(outside).SetReadScope(scope);
  builder.SetEditTools(edit_tools);
  if (mode != v1::MODE_UNSPECIFIED) builder.SetMode(mode);
  absl::StatusOr<Policy> policy = builder.Build();
  EXPECT_TRUE(policy.ok()) << policy.status();
  return *policy;
}

MutationPlan Plan(const std::string& path, TargetClass target_class, std::string rule = "") {
  MutationPlan plan;
  plan.tool = "write";
  plan.canonical_path = path;
  plan.target_class = target_class;
  plan.rule = std::move(rule);
  return plan;
}

ToolCall Write(const std::string& path, TargetClass c, std::string rule = "") {
  return ToolCall::Mutation(Plan(path, c, std::move(rule)), v1::SANDBOX_PERMISSIONS_UNSPECIFIED,
                            "");
}

TEST(DecideTest, ReadOnlyWriteIsOutOfAuthorityAndAsks) {
  const Decision d = Decide(MakePolicy(v1::PRESET_READ_ONLY),
                            Write("/w/a.txt", TargetClass::kInsideRoots));
  EXPECT_EQ(d.verdict, Verdict::kAsk);
  EXPECT_FALSE(d.in_authority);
  EXPECT_EQ(d.rule, "read-only:write-out-of-authority");
  EXPECT_FALSE(d.allow_outside);
  EXPECT_FALSE(d.allow_protected);
}

TEST(DecideTest, WorkspaceWriteInsideRunsInAuthority) {
  const Decision d = Decide(MakePolicy(v1::PRESET_WORKSPACE_WRITE),
                            Write("/w/a.txt", TargetClass::kInsideRoots));
  EXPECT_EQ(d.verdict, Verdict::kRun);
  EXPECT_TRUE(d.in_authority);
  EXPECT_EQ(d.rule, "workspace-write:write-inside-roots");
}

TEST(DecideTest, ProtectedRuleNamesTheProtectedEntry) {
  const Decision d =
      Decide(MakePolicy(v1::PRESET_WORKSPACE_WRITE, v1::MODE_DEFAULT),
             Write("/w/.git/hooks/pre-commit", TargetClass::kProtected, "protected:.git/hooks"));
  EXPECT_EQ(d.verdict, Verdict::kRefuse);
  EXPECT_EQ(d.code, v1::PROTECTED_PATH);
  EXPECT_EQ(d.rule, "fence:protected:.git/hooks");
}

TEST(DecideTest, DangerFullAccessOpensTheWriteFencesButNotTheBrokersSecrets) {
  const Policy full = MakePolicy(v1::PRESET_DANGER_FULL_ACCESS);
  for (TargetClass c : {TargetClass::kInsideRoots, TargetClass::kOutsideRoots,
                        TargetClass::kProtected}) {
    const Decision d = Decide(full, Write("/x", c));
    EXPECT_EQ(d.verdict, Verdict::kRun);
    EXPECT_TRUE(d.in_authority);
    EXPECT_TRUE(d.allow_outside);
    EXPECT_TRUE(d.allow_protected);
  }
  const Decision secret = Decide(full, Write("/home/u/.airlock/audit.key",
                                             TargetClass::kBrokerSecret));
  EXPECT_EQ(secret.verdict, Verdict::kRefuse);
  EXPECT_EQ(secret.code, v1::PROTECTED_PATH);
  EXPECT_EQ(secret.rule, "fence:broker-secret");
}

TEST(DecideTest, OutsideWithAskIsOutOfAuthorityAndMayCrossTheFenceOnlyIfApproved) {
  const Decision d = Decide(MakePolicy(v1::PRESET_WORKSPACE_WRITE, v1::MODE_ON_REQUEST,
                                       OutsideWorkspace::kAsk),
                            Write("/etc/x", TargetClass::kOutsideRoots));
  EXPECT_EQ(d.verdict, Verdict::kAsk);
  EXPECT_FALSE(d.in_authority);
  EXPECT_TRUE(d.allow_outside);
  EXPECT_EQ(d.rule, "workspace-write:write-outside-roots");
}

TEST(DecideTest, FileToolsRejectSandboxPermissions) {
  for (v1::SandboxPermissions p :
       {v1::SANDBOX_PERMISSIONS_USE_DEFAULT, v1::SANDBOX_PERMISSIONS_REQUIRE_ESCALATED}) {
    const Decision d = Decide(MakePolicy(v1::PRESET_DANGER_FULL_ACCESS),
                              ToolCall::Mutation(Plan("/w/a", TargetClass::kInsideRoots), p,
                                                 "because"));
    EXPECT_EQ(d.verdict, Verdict::kRefuse);
    EXPECT_EQ(d.code, v1::INVALID_ARGUMENT);
    EXPECT_EQ(d.rule, "file-tools:no-sandbox-permissions");
  }
}

TEST(DecideTest, WhitespaceJustificationIsNoJustification) {
  const Decision d = Decide(
      MakePolicy(v1::PRESET_WORKSPACE_WRITE),
      ToolCall::Bash("make install", v1::SANDBOX_PERMISSIONS_REQUIRE_ESCALATED, " \t\n "));
  EXPECT_EQ(d.verdict, Verdict::kRefuse);
  EXPECT_EQ(d.code, v1::INVALID_ARGUMENT);
  EXPECT_EQ(d.rule, "bash:escalation-needs-justification");
}

TEST(DecideTest, UnknownSandboxPermissionsAreInvalid) {
  const Decision d =
      Decide(MakePolicy(v1::PRESET_WORKSPACE_WRITE),
             ToolCall::Bash("ls", static_cast<v1::SandboxPermissions>(7), "x"));
  EXPECT_EQ(d.verdict, Verdict::kRefuse);
  EXPECT_EQ(d.code, v1::INVALID_ARGUMENT);
}

TEST(DecideTest, BashFlags) {
  const Decision sandboxed = Decide(MakePolicy(v1::PRESET_READ_ONLY),
                                    ToolCall::Bash("ls", v1::SANDBOX_PERMISSIONS_USE_DEFAULT, ""));
  EXPECT_EQ(sandboxed.verdict, Verdict::kRun);
  EXPECT_TRUE(sandboxed.in_authority);
  EXPECT_FALSE(sandboxed.unsandboxed);
  EXPECT_EQ(sandboxed.rule, "read-only:bash-sandboxed");
  // An unspecified value means use_default for bash.
  EXPECT_EQ(Decide(MakePolicy(v1::PRESET_READ_ONLY),
                   ToolCall::Bash("ls", v1::SANDBOX_PERMISSIONS_UNSPECIFIED, ""))
                .verdict,
            Verdict::kRun);
  const Decision escalated =
      Decide(MakePolicy(v1::PRESET_READ_ONLY),
             ToolCall::Bash("ls", v1::SANDBOX_PERMISSIONS_REQUIRE_ESCALATED, "need it"));
  EXPECT_EQ(escalated.verdict, Verdict::kAsk);
  EXPECT_FALSE(escalated.in_authority);
  EXPECT_TRUE(escalated.unsandboxed);
  EXPECT_EQ(escalated.rule, "read-only:bash-escalated");
  const Decision full = Decide(MakePolicy(v1::PRESET_DANGER_FULL_ACCESS),
                               ToolCall::Bash("ls", v1::SANDBOX_PERMISSIONS_USE_DEFAULT, ""));
  EXPECT_EQ(full.verdict, Verdict::kRun);
  EXPECT_TRUE(full.unsandboxed);
}

TEST(DecideTest, AcceptEditsRunsOnlyTheListedEditTools) {
  const Policy policy = MakePolicy(v1::PRESET_WORKSPACE_WRITE, v1::MODE_ACCEPT_EDITS,
                                   OutsideWorkspace::kDeny, ReadScope::kAny, "edit");
  MutationPlan plan = Plan("/w/a", TargetClass::kInsideRoots);
  EXPECT_EQ(Decide(policy, ToolCall::Mutation(plan, v1::SANDBOX_PERMISSIONS_UNSPECIFIED, ""))
                .verdict,
            Verdict::kAsk);  // write is not listed
  plan.tool = "edit";
  EXPECT_EQ(Decide(policy, ToolCall::Mutation(plan, v1::SANDBOX_PERMISSIONS_UNSPECIFIED, ""))
                .verdict,
            Verdict::kRun);
  // A declared destructive tool runs when listed, asks otherwise.
  const Policy fmt = MakePolicy(v1::PRESET_WORKSPACE_WRITE, v1::MODE_ACCEPT_EDITS,
                                OutsideWorkspace::kDeny, ReadScope::kAny, "write,edit,fmt");
  EXPECT_EQ(Decide(fmt, ToolCall::Declared("fmt", true, false, TargetClass::kInsideRoots))
                .verdict,
            Verdict::kRun);
  EXPECT_EQ(Decide(fmt, ToolCall::Declared("deploy", true, false, TargetClass::kInsideRoots))
                .verdict,
            Verdict::kAsk);
}

TEST(DecideTest, ReadsNeverAskButHonourTheirFences) {
  for (v1::Mode mode : {v1::MODE_DEFAULT, v1::MODE_ACCEPT_EDITS, v1::MODE_ON_REQUEST,
                        v1::MODE_NEVER}) {
    const Policy policy = MakePolicy(v1::PRESET_READ_ONLY, mode);
    EXPECT_EQ(Decide(policy, ToolCall::Read("/w/a", TargetClass::kInsideRoots)).verdict,
              Verdict::kRun);
    EXPECT_EQ(Decide(policy, ToolCall::List("/etc", TargetClass::kOutsideRoots)).verdict,
              Verdict::kRun);
    // Protected storage is write-protected, not read-protected.
    EXPECT_EQ(Decide(policy, ToolCall::Read("/w/.git/config", TargetClass::kProtected)).verdict,
              Verdict::kRun);
  }
  const Policy scoped = MakePolicy(v1::PRESET_DANGER_FULL_ACCESS, v1::MODE_UNSPECIFIED,
                                   OutsideWorkspace::kDeny, ReadScope::kWorkspace);
  const Decision outside = Decide(scoped, ToolCall::Read("/etc/passwd", TargetClass::kOutsideRoots));
  EXPECT_EQ(outside.verdict, Verdict::kRefuse);
  EXPECT_EQ(outside.code, v1::OUTSIDE_SANDBOX);
  EXPECT_EQ(outside.rule, "read-scope:workspace");
  const Decision listing = Decide(scoped, ToolCall::List("/etc", TargetClass::kOutsideRoots));
  EXPECT_EQ(listing.verdict, Verdict::kRefuse);
}

TEST(DecideTest, DeclaredToolPathArgumentsAreFencedBeforeAnythingIsAsked) {
  const Policy policy = MakePolicy(v1::PRESET_WORKSPACE_WRITE, v1::MODE_DEFAULT);
  const Decision outside =
      Decide(policy, ToolCall::Declared("lint", false, true, TargetClass::kOutsideRoots));
  EXPECT_EQ(outside.verdict, Verdict::kRefuse);
  EXPECT_EQ(outside.code, v1::OUTSIDE_SANDBOX);
  const Decision protected_path = Decide(
      policy, ToolCall::Declared("fmt", true, true, TargetClass::kProtected, "protected:.envrc"));
  EXPECT_EQ(protected_path.verdict, Verdict::kRefuse);
  EXPECT_EQ(protected_path.rule, "fence:protected:.envrc");
  EXPECT_EQ(Decide(policy, ToolCall::Declared("lint", false, true, TargetClass::kInsideRoots))
                .verdict,
            Verdict::kRun);
  EXPECT_EQ(Decide(policy, ToolCall::Declared("fmt", true, true, TargetClass::kInsideRoots))
                .verdict,
            Verdict::kAsk);  // mode default asks every destructive call
  const Decision read_only =
      Decide(MakePolicy(v1::PRESET_READ_ONLY, v1::MODE_NEVER),
             ToolCall::Declared("deploy", true, false, TargetClass::kInsideRoots));
  EXPECT_EQ(read_only.verdict, Verdict::kRefuse);
  EXPECT_EQ(read_only.code, v1::DENIED);
  // A tool that is not destructive reads its paths: --read-scope workspace confines them as it
  // confines the file tools, even where an outside write would only be asked about.
  const Policy scoped = MakePolicy(v1::PRESET_WORKSPACE_WRITE, v1::MODE_DEFAULT,
                                   OutsideWorkspace::kAsk, ReadScope::kWorkspace);
  const Decision scoped_read =
      Decide(scoped, ToolCall::Declared("sortf", false, true, TargetClass::kOutsideRoots));
  EXPECT_EQ(scoped_read.verdict, Verdict::kRefuse);
  EXPECT_EQ(scoped_read.rule, "read-scope:workspace");
  EXPECT_EQ(Decide(MakePolicy(v1::PRESET_WORKSPACE_WRITE, v1::MODE_DEFAULT,
                              OutsideWorkspace::kAsk, ReadScope::kAny),
                   ToolCall::Declared("sortf", false, true, TargetClass::kOutsideRoots))
                .verdict,
            Verdict::kRun);
}

TEST(DecideTest, McpCallsAskUnderRestrictedPresetsUnlessTheToolHoldsAGrant) {
  for (v1::Preset preset : {v1::PRESET_READ_ONLY, v1::PRESET_WORKSPACE_WRITE}) {
    for (v1::Mode mode : {v1::MODE_DEFAULT, v1::MODE_ACCEPT_EDITS, v1::MODE_ON_REQUEST}) {
      const Policy policy = MakePolicy(preset, mode);
      const Decision asked =
          Decide(policy, ToolCall::Mcp("docs.search", false, TargetClass::kInsideRoots, "", false));
      EXPECT_EQ(asked.verdict, Verdict::kAsk) << PresetName(preset) << " " << ModeName(mode);
      EXPECT_EQ(asked.rule, absl::StrCat(PresetName(preset), ":mcp-call"));
      const Decision granted =
          Decide(policy, ToolCall::Mcp("docs.search", false, TargetClass::kInsideRoots, "", true));
      EXPECT_EQ(granted.verdict, Verdict::kRun) << PresetName(preset) << " " << ModeName(mode);
      EXPECT_EQ(granted.rule, absl::StrCat(PresetName(preset), ":mcp-session-grant"));
    }
    const Decision never = Decide(MakePolicy(preset, v1::MODE_NEVER),
                                  ToolCall::Mcp("docs.search", false, TargetClass::kInsideRoots,
                                                "", false));
    EXPECT_EQ(never.verdict, Verdict::kRefuse);
    EXPECT_EQ(never.code, v1::DENIED);
  }
  // Full access calls without asking (its default mode never); mode default still asks.
  EXPECT_EQ(Decide(MakePolicy(v1::PRESET_DANGER_FULL_ACCESS, v1::MODE_NEVER),
                   ToolCall::Mcp("docs.search", false, TargetClass::kInsideRoots, "", false))
                .verdict,
            Verdict::kRun);
  EXPECT_EQ(Decide(MakePolicy(v1::PRESET_DANGER_FULL_ACCESS, v1::MODE_DEFAULT),
                   ToolCall::Mcp("docs.search", false, TargetClass::kInsideRoots, "", false))
                .verdict,
            Verdict::kAsk);
}

TEST(DecideTest, McpPathArgumentsAreFencedEvenWithAGrant) {
  const Policy policy = MakePolicy(v1::PRESET_WORKSPACE_WRITE, v1::MODE_ON_REQUEST);
  const Decision outside = Decide(
      policy, ToolCall::Mcp("fs.write", true, TargetClass::kOutsideRoots, "", /*granted=*/true));
  EXPECT_EQ(outside.verdict, Verdict::kRefuse);
  EXPECT_EQ(outside.code, v1::OUTSIDE_SANDBOX);
  const Decision secret = Decide(
      MakePolicy(v1::PRESET_DANGER_FULL_ACCESS, v1::MODE_NEVER),
      ToolCall::Mcp("fs.read", true, TargetClass::kBrokerSecret, "broker-secret", false));
  EXPECT_EQ(secret.verdict, Verdict::kRefuse);
  EXPECT_EQ(secret.code, v1::PROTECTED_PATH);
}

TEST(RefusalStatusTest, NamesToolTargetRuleAndPreset) {
  const Policy policy = MakePolicy(v1::PRESET_READ_ONLY);
  const ToolCall call = Write("/w/a.txt", TargetClass::kInsideRoots);
  const absl::Status status =
      RefusalStatus(policy, call, v1::DENIED, "read-only:write-out-of-authority",
                    "out of authority under preset read-only");
  EXPECT_EQ(WireCodeOf(status), v1::DENIED);
  EXPECT_EQ(RuleOf(status), "read-only:write-out-of-authority");
  EXPECT_EQ(status.message(),
            "write /w/a.txt refused: out of authority under preset read-only (rule "
            "read-only:write-out-of-authority) [preset read-only]");
  // ToWireError does not add the preset twice.
  const v1::Error error = ToWireError(status, v1::PRESET_READ_ONLY);
  EXPECT_EQ(error.message(), status.message());
}

}  // namespace
}  // namespace airlock::broker
