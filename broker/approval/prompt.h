// How an approval request is shown to a human (the tty approver and `airlock approve` render
// it identically) and how it travels as JSON (the socket and command approvers).
#ifndef BROKER_APPROVAL_PROMPT_H_
#define BROKER_APPROVAL_PROMPT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "broker/approval/approver.h"

namespace airlock::broker {

// The prompt body: tool, canonical target or command and cwd, justification, preset and mode,
// the first 12 hex digits of the content digest, the diff; every field escaped
// (broker/approval/terminal_text.h). Ends with a newline; the question is separate.
std::string RenderPrompt(const ApprovalRequest& request);

// The question that follows the prompt; QuestionFor adds the session choice when offered.
inline constexpr absl::string_view kApprovalQuestion = "Approve this one call? [y/N] ";
inline constexpr absl::string_view kSessionApprovalQuestion =
    "Approve? [y = this call, s = this tool for the rest of the session, N = no] ";
absl::string_view QuestionFor(const ApprovalRequest& request);

// Only "y" or "yes", case-insensitive, surrounding whitespace ignored, approves.
bool IsAffirmativeAnswer(absl::string_view line);

// What a typed line means: "y"/"yes" approves once; "s"/"session" approves the tool for the
// session when the request offered it (a denial otherwise); anything else denies. `approved_by`
// names who answered ("on the terminal").
Answer AnswerFromTypedLine(absl::string_view line, const ApprovalRequest& request,
                           absl::string_view approved_by);

// One JSON object (no newline inside): {"request_id":"7","tool":…,"target":…,
// "content_sha256":…,"command":…,"cwd":…,"escalated":…,"justification":…,"preset":…,
// "mode":…,"diff":…,"rule":…,"reason":…,"session_grant_offered":…}. Strings are
// JSON-escaped; fields are always present.
std::string RequestToJson(const ApprovalRequest& request);
// The inverse, for `airlock approve`: unknown fields are ignored, wrong types are errors.
[[nodiscard]] absl::StatusOr<ApprovalRequest> RequestFromJson(absl::string_view json);

}  // namespace airlock::broker

#endif  // BROKER_APPROVAL_PROMPT_H_
