// The whole decision table of SPEC §4, driven through Authorize(): every preset × mode × call
// × approver answer → outcome, and whether the approver was asked at all.
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "broker/approval/authorize.h"
#include "broker/wire_error.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/broker/approval/fake_approver.h"

namespace airlock::broker {
namespace {

using ::airlock::broker::testing::FakeApprover;
using ::testing::HasSubstr;

enum class Call {
  kRead,
  kWriteInside,
  kEditInside,
  kWriteOutsideDeny,
  kWriteOutsideAsk,
  kProtectedWrite,
  kBrokerSecretRead,
  kBashDefault,
  kBashEscalated,
  kBashEscalatedNoJustification,
};

const char* CallName(Call call) {
  switch (call) {
    case Call::kRead: return "Read";
    case Call::kWriteInside: return "WriteInside";
    case Call::kEditInside: return "EditInside";
    case Call::kWriteOutsideDeny: return "WriteOutsideDeny";
    case Call::kWriteOutsideAsk: return "WriteOutsideAsk";
    case Call::kProtectedWrite: return "ProtectedWrite";
    case Call::kBrokerSecretRead: return "BrokerSecretRead";
    case Call::kBashDefault: return "BashDefault";
    case Call::kBashEscalated: return "BashEscalated";
    case Call::kBashEscalatedNoJustification: return "BashEscalatedNoJustification";
  }
  return "?";
}

// Authority, written out literally from SPEC §4 for every call × preset (the test's own
// reading of the spec, independent of the code under test). kIn/kOut: in or out of
// authority; anything else is the wire code of a refusal before anything is asked.
enum Authority { kIn, kOut, kNonDestructive, kFence };
struct AuthorityRow {
  Call call;
  Authority read_only, workspace_write, full_access;
  v1::ErrorCode fence_code;  // for kFence entries
};
const AuthorityRow kAuthority[] = {
    {Call::kRead, kNonDestructive, kNonDestructive, kNonDestructive},
    {Call::kWriteInside, kOut, kIn, kIn},
    {Call::kEditInside, kOut, kIn, kIn},
    {Call::kWriteOutsideDeny, kFence, kFence, kIn, v1::OUTSIDE_SANDBOX},
    {Call::kWriteOutsideAsk, kOut, kOut, kIn},
    {Call::kProtectedWrite, kFence, kFence, kIn, v1::PROTECTED_PATH},
    {Call::kBrokerSecretRead, kFence, kFence, kFence, v1::PROTECTED_PATH},
    {Call::kBashDefault, kIn, kIn, kIn},
    {Call::kBashEscalated, kOut, kOut, kIn},
    {Call::kBashEscalatedNoJustification, kFence, kFence, kFence, v1::INVALID_ARGUMENT},
};

// The modes table: does an in-authority destructive call ask (edit tools aside), does an
// out-of-authority call ask, or is it refused?
struct ModeRow {
  v1::Mode mode;
  bool in_authority_asks;         // for tools not in --edit-tools under accept-edits
  bool edit_tools_ask;            // in-authority write/edit
  bool out_of_authority_refused;  // never: refused, nothing asked
};
const ModeRow kModes[] = {
    {v1::MODE_DEFAULT, true, true, false},
    {v1::MODE_ACCEPT_EDITS, true, false, false},
    {v1::MODE_ON_REQUEST, false, false, false},
    {v1::MODE_NEVER, false, false, true},
};

struct Expected {
  bool runs = false;
  v1::ErrorCode code = v1::ERROR_CODE_UNSPECIFIED;
  bool asked = false;
};

Expected Expect(v1::Preset preset, v1::Mode mode, Call call, bool approver_says_yes) {
  const AuthorityRow* row = nullptr;
  for (const AuthorityRow& r : kAuthority) {
    if (r.call == call) row = &r;
  }
  const ModeRow* mode_row = nullptr;
  for (const ModeRow& m : kModes) {
    if (m.mode == mode) mode_row = &m;
  }
  const Authority authority = preset == v1::PRESET_READ_ONLY         ? row->read_only
                              : preset == v1::PRESET_WORKSPACE_WRITE ? row->workspace_write
                                                                     : row->full_access;
  Expected e;
  bool ask = false;
  switch (authority) {
    case kFence:
      e.code = row->fence_code;
      return e;
    case kNonDestructive:
      e.runs = true;
      return e;
    case kIn: {
      const bool is_edit_tool = call == Call::kWriteInside || call == Call::kEditInside ||
                                call == Call::kWriteOutsideAsk || call == Call::kWriteOutsideDeny ||
                                call == Call::kProtectedWrite;
      ask = is_edit_tool ? mode_row->edit_tools_ask : mode_row->in_authority_asks;
      break;
    }
    case kOut:
      if (mode_row->out_of_authority_refused) {
        e.code = v1::DENIED;
        return e;
      }
      ask = true;
      break;
  }
  if (!ask) {
    e.runs = true;
    return e;
  }
  e.asked = true;
  e.runs = approver_says_yes;
  if (!approver_says_yes) e.code = v1::NOT_APPROVED;
  return e;
}

Policy MakePolicy(v1::Preset preset, v1::Mode mode, OutsideWorkspace outside) {
  absl::StatusOr<Policy> policy = PolicyBuilder()
                                      .AddRoot("/w")
                                      .SetPreset(preset)
                                      .SetMode(mode)
                                      .SetOutsideWorkspace(outside)
                                      .Build();
  EXPECT_TRUE(policy.ok()) << policy.status();
  return *policy;
}

ToolCall MakeCall(Call call) {
  MutationPlan plan;
  plan.tool = "write";
  plan.canonical_path = "/w/src/a.txt";
  plan.target_class = TargetClass::kInsideRoots;
  switch (call) {
    case Call::kRead:
      return ToolCall::Read("/w/src/a.txt", TargetClass::kInsideRoots);
    case Call::kWriteInside:
      break;
    case Call::kEditInside:
      plan.tool = "edit";
      break;
    case Call::kWriteOutsideDeny:
    case Call::kWriteOutsideAsk:
      plan.canonical_path = "/etc/motd";
      plan.target_class = TargetClass::kOutsideRoots;
      plan.rule = "outside-roots";
      break;
    case Call::kProtectedWrite:
      plan.canonical_path = "/w/.git/hooks/pre-commit";
      plan.target_class = TargetClass::kProtected;
      plan.rule = "protected:.git/hooks";
      break;
    case Call::kBrokerSecretRead:
      return ToolCall::Read("/root/.airlock/audit.key", TargetClass::kBrokerSecret,
                            "broker-secret");
    case Call::kBashDefault:
      return ToolCall::Bash("make test", v1::SANDBOX_PERMISSIONS_USE_DEFAULT, "");
    case Call::kBashEscalated:
      return ToolCall::Bash("make install", v1::SANDBOX_PERMISSIONS_REQUIRE_ESCALATED,
                            "needs /usr/local");
    case Call::kBashEscalatedNoJustification:
      return ToolCall::Bash("make install", v1::SANDBOX_PERMISSIONS_REQUIRE_ESCALATED, "  ");
  }
  return ToolCall::Mutation(plan, v1::SANDBOX_PERMISSIONS_UNSPECIFIED, "display only");
}

using Param = std::tuple<v1::Preset, v1::Mode, Call, bool>;

class AuthorizeTableTest : public ::testing::TestWithParam<Param> {};

TEST_P(AuthorizeTableTest, OutcomeAndWhetherAsked) {
  const auto [preset, mode, call_kind, says_yes] = GetParam();
  const OutsideWorkspace outside =
      call_kind == Call::kWriteOutsideAsk ? OutsideWorkspace::kAsk : OutsideWorkspace::kDeny;
  const Policy policy = MakePolicy(preset, mode, outside);
  const ToolCall call = MakeCall(call_kind);
  FakeApprover approver(says_yes);
  ApprovalRequest request;
  request.request_id = 9;
  absl::StatusOr<Authorization> result =
      Authorize(policy, call, request, approver, absl::Seconds(42));

  const Expected expected = Expect(preset, mode, call_kind, says_yes);
  EXPECT_EQ(approver.calls(), expected.asked ? 1 : 0);
  if (expected.runs) {
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->asked, expected.asked);
    EXPECT_EQ(result->decision.verdict, expected.asked ? Verdict::kAsk : Verdict::kRun);
  } else {
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(WireCodeOf(result.status()), expected.code) << result.status();
    // Every refusal names the tool, its target, the rule and the preset.
    const std::string message(result.status().message());
    EXPECT_THAT(message, HasSubstr(absl::StrCat(call.tool, " ", call.target, " refused: ")));
    EXPECT_FALSE(RuleOf(result.status()).empty());
    EXPECT_THAT(message, HasSubstr(absl::StrCat("(rule ", RuleOf(result.status()), ")")));
    EXPECT_THAT(message, HasSubstr(absl::StrCat("[preset ", PresetName(preset), "]")));
    if (expected.code == v1::NOT_APPROVED) {
      EXPECT_THAT(message, HasSubstr("the approver said no"));
    }
  }
  if (expected.asked) {
    // The approver sees the request with the policy filled in, within the timeout given.
    EXPECT_EQ(approver.last_request().request_id, 9u);
    EXPECT_EQ(approver.last_request().tool, call.tool);
    EXPECT_EQ(approver.last_request().preset, PresetName(preset));
    EXPECT_EQ(approver.last_request().mode, ModeName(mode));
    EXPECT_FALSE(approver.last_request().rule.empty());
    EXPECT_EQ(approver.last_timeout(), absl::Seconds(42));
  }
}

std::string TestName(const ::testing::TestParamInfo<Param>& info) {
  std::string name = absl::StrCat(
      PresetName(std::get<0>(info.param)), "_", ModeName(std::get<1>(info.param)), "_",
      CallName(std::get<2>(info.param)), std::get<3>(info.param) ? "_ApproverYes" : "_ApproverNo");
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(
    WholeTable, AuthorizeTableTest,
    ::testing::Combine(::testing::Values(v1::PRESET_READ_ONLY, v1::PRESET_WORKSPACE_WRITE,
                                         v1::PRESET_DANGER_FULL_ACCESS),
                       ::testing::Values(v1::MODE_DEFAULT, v1::MODE_ACCEPT_EDITS,
                                         v1::MODE_ON_REQUEST, v1::MODE_NEVER),
                       ::testing::Values(Call::kRead, Call::kWriteInside, Call::kEditInside,
                                         Call::kWriteOutsideDeny, Call::kWriteOutsideAsk,
                                         Call::kProtectedWrite, Call::kBrokerSecretRead,
                                         Call::kBashDefault, Call::kBashEscalated,
                                         Call::kBashEscalatedNoJustification),
                       ::testing::Bool()),
    TestName);

// A few rows spelled out, so a reader sees the table's meaning without the generator.
TEST(AuthorizeExamplesTest, ReadOnlyWriteAsksAndTheMessageNamesEverything) {
  const Policy policy = MakePolicy(v1::PRESET_READ_ONLY, v1::MODE_ON_REQUEST,
                                   OutsideWorkspace::kDeny);
  FakeApprover approver(false);
  absl::StatusOr<Authorization> result =
      Authorize(policy, MakeCall(Call::kWriteInside), {}, approver, absl::Seconds(1));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(WireCodeOf(result.status()), v1::NOT_APPROVED);
  EXPECT_EQ(result.status().message(),
            "write /w/src/a.txt refused: out of authority under preset read-only; mode "
            "on-request asks for a one-call approval, and the approver said no (fake: fake no) "
            "(rule read-only:write-out-of-authority) [preset read-only]");
}

TEST(AuthorizeExamplesTest, DangerFullAccessDefaultsToNeverAndAsksNothing) {
  absl::StatusOr<Policy> policy =
      PolicyBuilder().AddRoot("/w").SetPreset(v1::PRESET_DANGER_FULL_ACCESS).Build();
  ASSERT_TRUE(policy.ok());
  FakeApprover approver(false);
  for (Call call : {Call::kWriteInside, Call::kProtectedWrite, Call::kBashEscalated}) {
    absl::StatusOr<Authorization> result =
        Authorize(*policy, MakeCall(call), {}, approver, absl::Seconds(1));
    EXPECT_TRUE(result.ok()) << CallName(call) << ": " << result.status();
  }
  EXPECT_EQ(approver.calls(), 0);
}

TEST(AuthorizeExamplesTest, NeverRefusesOutOfAuthorityWithDenied) {
  const Policy policy = MakePolicy(v1::PRESET_WORKSPACE_WRITE, v1::MODE_NEVER,
                                   OutsideWorkspace::kDeny);
  FakeApprover approver(true);
  absl::StatusOr<Authorization> result =
      Authorize(policy, MakeCall(Call::kBashEscalated), {}, approver, absl::Seconds(1));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(WireCodeOf(result.status()), v1::DENIED);
  EXPECT_THAT(result.status().message(), HasSubstr("bash make install refused"));
  EXPECT_THAT(result.status().message(), HasSubstr("mode never asks nothing"));
  EXPECT_EQ(approver.calls(), 0);
}

// Answers yes for the session, whatever was offered.
class SessionApprover final : public Approver {
 public:
  Answer Ask(const ApprovalRequest&, absl::Duration) override {
    return Answer::YesForSession("test: for the session");
  }
  std::string Describe() const override { return "session"; }
};

TEST(AuthorizeTest, ASessionAnswerCountsOnlyForAnMcpToolThatWasOfferedIt) {
  absl::StatusOr<Policy> policy = PolicyBuilder()
                                      .SetPreset(v1::PRESET_WORKSPACE_WRITE)
                                      .SetMode(v1::MODE_DEFAULT)
                                      .AddRoot("/w")
                                      .Build();
  ASSERT_TRUE(policy.ok()) << policy.status();
  SessionApprover approver;
  const ToolCall mcp = ToolCall::Mcp("docs.search", false, TargetClass::kInsideRoots, "", false);
  ApprovalRequest offered;
  offered.session_grant_offered = true;
  absl::StatusOr<Authorization> granted =
      Authorize(*policy, mcp, offered, approver, absl::Seconds(1));
  ASSERT_TRUE(granted.ok()) << granted.status();
  EXPECT_TRUE(granted->asked);
  EXPECT_EQ(granted->answer.scope, Answer::Scope::kSession);

  // Not offered, or not an MCP tool: a one-call approval.
  absl::StatusOr<Authorization> unoffered =
      Authorize(*policy, mcp, ApprovalRequest{}, approver, absl::Seconds(1));
  ASSERT_TRUE(unoffered.ok()) << unoffered.status();
  EXPECT_EQ(unoffered->answer.scope, Answer::Scope::kOnce);
  absl::StatusOr<Authorization> bash = Authorize(
      *policy, ToolCall::Bash("ls", v1::SANDBOX_PERMISSIONS_USE_DEFAULT, ""), offered, approver,
      absl::Seconds(1));
  ASSERT_TRUE(bash.ok()) << bash.status();
  EXPECT_EQ(bash->answer.scope, Answer::Scope::kOnce);
}

}  // namespace
}  // namespace airlock::broker
