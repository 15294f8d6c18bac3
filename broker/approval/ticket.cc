#include "broker/approval/ticket.h"

#include <openssl/evp.h>
#include <openssl/sha.h>

#include "absl/strings/str_cat.h"
#include "broker/wire_error.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "platform/base/check.h"

namespace airlock::broker {
namespace {

std::string Sha256Raw(absl::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  unsigned int length = 0;
  AIRLOCK_CHECK(EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr) == 1);
  AIRLOCK_CHECK(length == SHA256_DIGEST_LENGTH);
  return std::string(reinterpret_cast<const char*>(digest), length);
}

std::string Serialize(const google::protobuf::MessageLite& message) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeWithCachedSizes(&coded);
  }
  return bytes;
}

std::string IdentityText(const FileIdentity& id) {
  if (!id.exists) return "absent";
  return absl::StrCat("dev ", id.device, " inode ", id.inode);
}

}  // namespace

std::string ArgumentsDigest(const google::protobuf::MessageLite& arguments) {
  arguments.ByteSizeLong();  // fills the cached sizes SerializeWithCachedSizes needs
  return Sha256Raw(Serialize(arguments));
}

ApprovalTicket ApprovalTicket::ForMutation(uint64_t request_id,
                                           const google::protobuf::MessageLite& arguments,
                                           const MutationPlan& plan, const Policy& policy) {
  ApprovalTicket ticket;
  ticket.request_id_ = request_id;
  ticket.tool_ = plan.tool;
  ticket.arguments_digest_ = ArgumentsDigest(arguments);
  ticket.epoch_ = policy.epoch();
  ticket.preset_ = policy.preset();
  ticket.canonical_target_ = plan.canonical_path;
  ticket.target_ = plan.target;
  ticket.parent_ = plan.parent;
  ticket.new_content_sha256_ = plan.new_content_sha256;
  return ticket;
}

ApprovalTicket ApprovalTicket::ForBash(uint64_t request_id, const v1::BashRequest& request,
                                       absl::string_view canonical_cwd, const Policy& policy) {
  ApprovalTicket ticket;
  ticket.is_bash_ = true;
  ticket.request_id_ = request_id;
  ticket.tool_ = "bash";
  ticket.arguments_digest_ = ArgumentsDigest(request);
  ticket.epoch_ = policy.epoch();
  ticket.preset_ = policy.preset();
  ticket.command_ = request.command();
  ticket.cwd_ = std::string(canonical_cwd);
  ticket.sandbox_permissions_ = request.sandbox_permissions();
  ticket.justification_ = request.justification();
  return ticket;
}

absl::Status ApprovalTicket::Stale(absl::string_view what, absl::string_view rule_suffix,
                                   const Policy& current) const {
  const std::string rule = absl::StrCat("approval:stale:", rule_suffix);
  const std::string subject = is_bash_ ? absl::StrCat("bash ", command_)
                                       : absl::StrCat(tool_, " ", canonical_target_);
  return WithRule(
      WireError(v1::APPROVAL_STALE,
                absl::StrCat(subject, " refused: the approval is stale: ", what,
                             " since it was asked; nothing was ", is_bash_ ? "run" : "written",
                             " (rule ", rule, ") [preset ", PresetName(current.preset()), "]")),
      rule);
}

absl::Status ApprovalTicket::CheckCommon(uint64_t request_id, absl::string_view tool,
                                         absl::string_view arguments_digest,
                                         const Policy& current) {
  if (used_) return Stale("the approval was already used once", "used", current);
  used_ = true;
  if (current.epoch() != epoch_) {
    return Stale(absl::StrCat("the policy changed (preset ", PresetName(preset_), " epoch ",
                              epoch_, " -> preset ", PresetName(current.preset()), " epoch ",
                              current.epoch(), ")"),
                 "policy-epoch", current);
  }
  if (request_id != request_id_ || tool != tool_) {
    return Stale("the request is not the one approved", "request", current);
  }
  if (!ConstantTimeEquals(arguments_digest, arguments_digest_)) {
    return Stale("the request's arguments changed", "arguments", current);
  }
  return absl::OkStatus();
}

absl::Status ApprovalTicket::RedeemMutation(uint64_t request_id,
                                            const google::protobuf::MessageLite& arguments,
                                            const MutationPlan& fresh, const Policy& current) {
  if (is_bash_) {
    used_ = true;
    return Stale("a shell approval cannot be redeemed for a file mutation", "request", current);
  }
  absl::Status common = CheckCommon(request_id, fresh.tool, ArgumentsDigest(arguments), current);
  if (!common.ok()) return common;
  if (fresh.canonical_path != canonical_target_) {
    return Stale(absl::StrCat("the target now resolves to ", fresh.canonical_path), "target",
                 current);
  }
  if (fresh.target.exists != target_.exists || fresh.target.device != target_.device ||
      fresh.target.inode != target_.inode) {
    return Stale(absl::StrCat("the target's identity changed (", IdentityText(target_), " -> ",
                              IdentityText(fresh.target), ")"),
                 "inode", current);
  }
  if (!ConstantTimeEquals(fresh.target.content_sha256, target_.content_sha256)) {
    return Stale("the target's content changed", "content", current);
  }
  if (fresh.parent.exists != parent_.exists || fresh.parent.device != parent_.device ||
      fresh.parent.inode != parent_.inode) {
    return Stale(absl::StrCat("the parent directory changed (", IdentityText(parent_), " -> ",
                              IdentityText(fresh.parent), ")"),
                 "parent", current);
  }
  if (!ConstantTimeEquals(fresh.new_content_sha256, new_content_sha256_)) {
    return Stale("the resulting content changed", "result", current);
  }
  return absl::OkStatus();
}

absl::Status ApprovalTicket::RedeemBash(uint64_t request_id, const v1::BashRequest& request,
                                        absl::string_view canonical_cwd, const Policy& current) {
  if (!is_bash_) {
    used_ = true;
    return Stale("a file approval cannot be redeemed for a shell command", "request", current);
  }
  absl::Status common = CheckCommon(request_id, "bash", ArgumentsDigest(request), current);
  if (!common.ok()) return common;
  if (request.command() != command_ || request.sandbox_permissions() != sandbox_permissions_ ||
      request.justification() != justification_) {
    return Stale("the command, its escalation or its justification changed", "arguments",
                 current);
  }
  if (canonical_cwd != cwd_) {
    return Stale(absl::StrCat("the working directory now resolves to ", canonical_cwd), "cwd",
                 current);
  }
  return absl::OkStatus();
}

}  // namespace airlock::broker
