#include "broker/approval/ticket.h"

#include "broker/wire_error.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace airlock::broker {
namespace {

using ::airlock::testing::IsOk;
using ::testing::HasSubstr;

Policy MakePolicy() {
  absl::StatusOr<Policy> policy = PolicyBuilder().AddRoot("/w").Build();
  EXPECT_TRUE(policy.ok());
  return *policy;
}

MutationPlan Plan() {
  MutationPlan plan;
  plan.tool = "write";
  plan.canonical_path = "/w/a.txt";
  plan.target = FileIdentity{true, 10, 20, Sha256Hex("old")};
  plan.parent = FileIdentity{true, 10, 2, ""};
  plan.old_content = "old";
  plan.new_content = "new";
  plan.new_content_sha256 = Sha256Hex("new");
  return plan;
}

v1::WriteRequest Request() {
  v1::WriteRequest request;
  request.set_path("a.txt");
  request.set_content("new");
  return request;
}

TEST(DigestTest, Sha256AndConstantTimeEquality) {
  EXPECT_EQ(Sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abcd"));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_EQ(ArgumentsDigest(Request()).size(), 32u);
  v1::WriteRequest other = Request();
  other.set_content("newer");
  EXPECT_NE(ArgumentsDigest(Request()), ArgumentsDigest(other));
}

TEST(TicketTest, UnchangedPlanRedeemsOnceOnly) {
  const Policy policy = MakePolicy();
  ApprovalTicket ticket = ApprovalTicket::ForMutation(1, Request(), Plan(), policy);
  EXPECT_FALSE(ticket.used());
  EXPECT_THAT(ticket.RedeemMutation(1, Request(), Plan(), policy), IsOk());
  EXPECT_TRUE(ticket.used());
  const absl::Status again = ticket.RedeemMutation(1, Request(), Plan(), policy);
  EXPECT_EQ(WireCodeOf(again), v1::APPROVAL_STALE);
  EXPECT_EQ(RuleOf(again), "approval:stale:used");
}

struct StaleCase {
  const char* name;
  void (*change)(MutationPlan&, v1::WriteRequest&, uint64_t&);
  const char* rule;
  const char* message;
};

TEST(TicketTest, AnyBoundChangeIsStale) {
  const StaleCase cases[] = {
      {"content", [](MutationPlan& p, v1::WriteRequest&, uint64_t&) {
         p.target.content_sha256 = Sha256Hex("tampered");
       }, "approval:stale:content", "content changed"},
      {"inode", [](MutationPlan& p, v1::WriteRequest&, uint64_t&) { p.target.inode = 21; },
       "approval:stale:inode", "dev 10 inode 20 -> dev 10 inode 21"},
      {"device", [](MutationPlan& p, v1::WriteRequest&, uint64_t&) { p.target.device = 11; },
       "approval:stale:inode", "identity changed"},
      {"deleted", [](MutationPlan& p, v1::WriteRequest&, uint64_t&) {
         p.target = FileIdentity{};
       }, "approval:stale:inode", "-> absent"},
      {"parent", [](MutationPlan& p, v1::WriteRequest&, uint64_t&) { p.parent.inode = 3; },
       "approval:stale:parent", "parent directory changed"},
      {"target", [](MutationPlan& p, v1::WriteRequest&, uint64_t&) {
         p.canonical_path = "/w/b.txt";
       }, "approval:stale:target", "now resolves to /w/b.txt"},
      {"result", [](MutationPlan& p, v1::WriteRequest&, uint64_t&) {
         p.new_content_sha256 = Sha256Hex("other");
       }, "approval:stale:result", "resulting content changed"},
      {"arguments", [](MutationPlan&, v1::WriteRequest& r, uint64_t&) {
         r.set_justification("different");
       }, "approval:stale:arguments", "arguments changed"},
      {"request id", [](MutationPlan&, v1::WriteRequest&, uint64_t& id) { id = 2; },
       "approval:stale:request", "not the one approved"},
      {"tool", [](MutationPlan& p, v1::WriteRequest&, uint64_t&) { p.tool = "edit"; },
       "approval:stale:request", "not the one approved"},
  };
  const Policy policy = MakePolicy();
  for (const StaleCase& c : cases) {
    ApprovalTicket ticket = ApprovalTicket::ForMutation(1, Request(), Plan(), policy);
    MutationPlan fresh = Plan();
    v1::WriteRequest request = Request();
    uint64_t id = 1;
    c.change(fresh, request, id);
    const absl::Status status = ticket.RedeemMutation(id, request, fresh, policy);
    EXPECT_EQ(WireCodeOf(status), v1::APPROVAL_STALE) << c.name;
    EXPECT_EQ(RuleOf(status), c.rule) << c.name;
    EXPECT_THAT(status.message(), HasSubstr(c.message)) << c.name;
    EXPECT_THAT(status.message(), HasSubstr("nothing was written")) << c.name;
    EXPECT_TRUE(ticket.used()) << c.name;
  }
}

TEST(TicketTest, PolicyChangeIsStale) {
  const Policy policy = MakePolicy();
  ApprovalTicket ticket = ApprovalTicket::ForMutation(1, Request(), Plan(), policy);
  absl::StatusOr<Policy> changed =
      PolicyBuilder(policy).SetPreset(v1::PRESET_WORKSPACE_WRITE).Build();
  ASSERT_TRUE(changed.ok());
  const absl::Status status = ticket.RedeemMutation(1, Request(), Plan(), *changed);
  EXPECT_EQ(RuleOf(status), "approval:stale:policy-epoch");
  EXPECT_THAT(status.message(), HasSubstr("[preset workspace-write]"));
}

TEST(TicketTest, BashTicketBindsCommandCwdEscalationAndJustification) {
  const Policy policy = MakePolicy();
  v1::BashRequest bash;
  bash.set_command("rm -rf build");
  bash.set_sandbox_permissions(v1::SANDBOX_PERMISSIONS_REQUIRE_ESCALATED);
  bash.set_justification("clean");
  {
    ApprovalTicket ticket = ApprovalTicket::ForBash(1, bash, "/w", policy);
    EXPECT_THAT(ticket.RedeemBash(1, bash, "/w", policy), IsOk());
    EXPECT_EQ(RuleOf(ticket.RedeemBash(1, bash, "/w", policy)), "approval:stale:used");
  }
  {
    ApprovalTicket ticket = ApprovalTicket::ForBash(1, bash, "/w", policy);
    EXPECT_EQ(RuleOf(ticket.RedeemBash(1, bash, "/w/sub", policy)), "approval:stale:cwd");
  }
  {
    ApprovalTicket ticket = ApprovalTicket::ForBash(1, bash, "/w", policy);
    v1::BashRequest other = bash;
    other.set_command("rm -rf /");
    EXPECT_EQ(WireCodeOf(ticket.RedeemBash(1, other, "/w", policy)), v1::APPROVAL_STALE);
  }
  {
    ApprovalTicket ticket = ApprovalTicket::ForBash(1, bash, "/w", policy);
    EXPECT_EQ(WireCodeOf(ticket.RedeemMutation(1, Request(), Plan(), policy)),
              v1::APPROVAL_STALE);
  }
}

}  // namespace
}  // namespace airlock::broker
