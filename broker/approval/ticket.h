// One-call approval tickets (SPEC §4). A ticket remembers exactly what a human or program
// approved — request id, tool, the validated arguments' digest, canonical target, the target's
// and its parent's identity, the resulting content's digest and the policy epoch — and is
// redeemed once, right before acting, against a plan computed afresh. Any difference is
// APPROVAL_STALE and nothing is done. Tickets live in memory only: there is no way to
// serialize one.
#ifndef BROKER_APPROVAL_TICKET_H_
#define BROKER_APPROVAL_TICKET_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "airlock/v1/wire.pb.h"
#include "broker/fs/digest.h"
#include "broker/fs/file_tools.h"
#include "broker/policy/policy.h"
#include "google/protobuf/message_lite.h"

namespace airlock::broker {

// SHA-256 (raw 32 bytes) of the message's deterministic serialization. Digests are compared
// with ConstantTimeEquals (broker/fs/digest.h, CRYPTO_memcmp).
std::string ArgumentsDigest(const google::protobuf::MessageLite& arguments);

class ApprovalTicket {
 public:
  // A write or edit: `arguments` is the Write/EditRequest as validated.
  static ApprovalTicket ForMutation(uint64_t request_id,
                                    const google::protobuf::MessageLite& arguments,
                                    const MutationPlan& plan, const Policy& policy);
  // A shell command: the command, cwd (canonical), escalation and justification are bound.
  static ApprovalTicket ForBash(uint64_t request_id, const v1::BashRequest& request,
                                absl::string_view canonical_cwd, const Policy& policy);

  ApprovalTicket(ApprovalTicket&&) = default;
  ApprovalTicket& operator=(ApprovalTicket&&) = default;
  ApprovalTicket(const ApprovalTicket&) = delete;
  ApprovalTicket& operator=(const ApprovalTicket&) = delete;

  // OK when `fresh` (re-planned right before acting) matches everything bound and the policy
  // epoch is unchanged; else APPROVAL_STALE naming what changed (content, inode, parent
  // directory, preset/epoch, target, arguments). Either way the ticket is used up.
  [[nodiscard]] absl::Status RedeemMutation(uint64_t request_id,
                                            const google::protobuf::MessageLite& arguments,
                                            const MutationPlan& fresh, const Policy& current);
  [[nodiscard]] absl::Status RedeemBash(uint64_t request_id, const v1::BashRequest& request,
                                        absl::string_view canonical_cwd, const Policy& current);

  bool used() const { return used_; }

 private:
  ApprovalTicket() = default;
  absl::Status Stale(absl::string_view what, absl::string_view rule_suffix,
                     const Policy& current) const;
  absl::Status CheckCommon(uint64_t request_id, absl::string_view tool,
                           absl::string_view arguments_digest, const Policy& current);

  bool used_ = false;
  bool is_bash_ = false;
  uint64_t request_id_ = 0;
  std::string tool_;
  std::string arguments_digest_;  // raw SHA-256
  uint64_t epoch_ = 0;
  v1::Preset preset_ = v1::PRESET_UNSPECIFIED;
  // Mutations.
  std::string canonical_target_;
  FileIdentity target_;
  FileIdentity parent_;
  std::string new_content_sha256_;
  // Bash.
  std::string command_;
  std::string cwd_;
  v1::SandboxPermissions sandbox_permissions_ = v1::SANDBOX_PERMISSIONS_UNSPECIFIED;
  std::string justification_;
};

}  // namespace airlock::broker

#endif  // BROKER_APPROVAL_TICKET_H_
