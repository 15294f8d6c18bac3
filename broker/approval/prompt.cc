#include "broker/approval/prompt.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "broker/approval/terminal_text.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace airlock::broker {
namespace {

constexpr size_t kDigestPrefix = 12;

void Field(std::string* out, absl::string_view label, absl::string_view value) {
  absl::StrAppend(out, "  ", label, ": ", EscapeForTerminal(value), "\n");
}

void PutString(google::protobuf::Struct* s, const std::string& key, const std::string& value) {
  (*s->mutable_fields())[key].set_string_value(ToValidUtf8(value));
}

absl::Status GetString(const google::protobuf::Struct& s, const std::string& key,
                       std::string* out) {
  auto it = s.fields().find(key);
  if (it == s.fields().end()) return absl::OkStatus();
  if (it->second.kind_case() != google::protobuf::Value::kStringValue) {
    return absl::InvalidArgumentError(absl::StrCat("field '", key, "' is not a string"));
  }
  *out = it->second.string_value();
  return absl::OkStatus();
}

}  // namespace

std::string RenderPrompt(const ApprovalRequest& request) {
  std::string out = "airlock: approval requested\n";
  Field(&out, "tool", request.tool);
  if (request.tool == "bash") {
    Field(&out, "command", request.command);
    Field(&out, "cwd", request.cwd);
    Field(&out, "sandbox", request.escalated ? "NONE: escalated, runs with host filesystem, "
                                               "network and environment"
                                             : "the preset's shell sandbox");
  } else {
    Field(&out, "target", request.target);
  }
  Field(&out, "justification", request.justification.empty() ? "(none)" : request.justification);
  Field(&out, "preset", request.preset);
  Field(&out, "mode", request.mode);
  if (!request.rule.empty()) Field(&out, "rule", request.rule);
  if (!request.reason.empty()) Field(&out, "why asked", request.reason);
  if (request.session_grant_offered) {
    Field(&out, "grant", "'s' allows this exact tool, unasked, until the session ends or the "
                         "preset changes");
  }
  if (!request.content_sha256.empty()) {
    Field(&out, "content sha256",
          absl::StrCat(request.content_sha256.substr(0, kDigestPrefix), "..."));
  }
  if (!request.diff.empty()) {
    absl::StrAppend(&out, "  diff:\n");
    std::string diff = EscapeLinesForTerminal(request.diff);
    if (!diff.empty() && diff.back() == '\n') diff.pop_back();
    for (absl::string_view line : absl::StrSplit(diff, '\n')) {
      absl::StrAppend(&out, "    ", line, "\n");
    }
  }
  return out;
}

bool IsAffirmativeAnswer(absl::string_view line) {
  const std::string answer = absl::AsciiStrToLower(absl::StripAsciiWhitespace(line));
  return answer == "y" || answer == "yes";
}

absl::string_view QuestionFor(const ApprovalRequest& request) {
  return request.session_grant_offered ? kSessionApprovalQuestion : kApprovalQuestion;
}

Answer AnswerFromTypedLine(absl::string_view line, const ApprovalRequest& request,
                           absl::string_view approved_by) {
  if (IsAffirmativeAnswer(line)) return Answer::Yes(absl::StrCat("approved ", approved_by));
  const std::string answer = absl::AsciiStrToLower(absl::StripAsciiWhitespace(line));
  if (answer == "s" || answer == "session") {
    if (!request.session_grant_offered) {
      return Answer::No("answered 'session', which is not offered for this tool");
    }
    return Answer::YesForSession(
        absl::StrCat("approved for the rest of the session ", approved_by));
  }
  return Answer::No(answer.empty() ? "empty answer" : "answered no");
}

std::string RequestToJson(const ApprovalRequest& request) {
  google::protobuf::Struct s;
  PutString(&s, "request_id", absl::StrCat(request.request_id));
  PutString(&s, "tool", request.tool);
  PutString(&s, "target", request.target);
  PutString(&s, "content_sha256", request.content_sha256);
  PutString(&s, "command", request.command);
  PutString(&s, "cwd", request.cwd);
  (*s.mutable_fields())["escalated"].set_bool_value(request.escalated);
  PutString(&s, "justification", request.justification);
  PutString(&s, "preset", request.preset);
  PutString(&s, "mode", request.mode);
  PutString(&s, "diff", request.diff);
  PutString(&s, "rule", request.rule);
  PutString(&s, "reason", request.reason);
  (*s.mutable_fields())["session_grant_offered"].set_bool_value(request.session_grant_offered);
  std::string json;
  // Every string was made valid UTF-8 above; should the converter still fail, send an object
  // no approver can mistake for a request.
  if (!google::protobuf::util::MessageToJsonString(s, &json).ok()) {
    return R"({"error":"request not representable as JSON"})";
  }
  return json;
}

absl::StatusOr<ApprovalRequest> RequestFromJson(absl::string_view json) {
  google::protobuf::Struct s;
  auto parsed = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &s);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("approval request is not a JSON object: ", parsed.ToString()));
  }
  ApprovalRequest request;
  std::string id;
  for (const auto& [key, out] : std::initializer_list<std::pair<const char*, std::string*>>{
           {"request_id", &id},
           {"tool", &request.tool},
           {"target", &request.target},
           {"content_sha256", &request.content_sha256},
           {"command", &request.command},
           {"cwd", &request.cwd},
           {"justification", &request.justification},
           {"preset", &request.preset},
           {"mode", &request.mode},
           {"diff", &request.diff},
           {"rule", &request.rule},
           {"reason", &request.reason}}) {
    absl::Status status = GetString(s, key, out);
    if (!status.ok()) return status;
  }
  if (!id.empty() && !absl::SimpleAtoi(id, &request.request_id)) {
    return absl::InvalidArgumentError("field 'request_id' is not a number");
  }
  for (const auto& [key, out] : std::initializer_list<std::pair<const char*, bool*>>{
           {"escalated", &request.escalated},
           {"session_grant_offered", &request.session_grant_offered}}) {
    auto field = s.fields().find(key);
    if (field == s.fields().end()) continue;
    if (field->second.kind_case() != google::protobuf::Value::kBoolValue) {
      return absl::InvalidArgumentError(absl::StrCat("field '", key, "' is not a boolean"));
    }
    *out = field->second.bool_value();
  }
  if (request.tool.empty()) return absl::InvalidArgumentError("approval request names no tool");
  return request;
}

}  // namespace airlock::broker
