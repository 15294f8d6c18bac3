// Fuzzes `airlock mcp`'s protocol side with arbitrary client lines: every line gets at most
// one answer, which is valid JSON-RPC, or is handed out as a call that a broker answer turns
// into a valid result — no crash, nothing unbounded.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/str_split.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "worker/mcp_bridge.h"

namespace {

void RequireJsonRpc(const std::string& line) {
  google::protobuf::Struct message;
  if (!google::protobuf::util::JsonStringToMessage(line, &message).ok() ||
      message.fields().count("id") == 0 ||
      (message.fields().count("result") == 0) == (message.fields().count("error") == 0)) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  for (absl::string_view line : absl::StrSplit(input, '\n')) {
    const airlock::worker::McpIncoming incoming = airlock::worker::ReadMcpLine(line);
    if (incoming.answer.has_value() + incoming.call.has_value() +
            incoming.cancelled.has_value() > 1) {
      std::abort();
    }
    if (incoming.answer.has_value()) RequireJsonRpc(*incoming.answer);
    if (incoming.call.has_value()) {
      RequireJsonRpc(airlock::worker::RunMcpToolCall(
          *incoming.call, [](airlock::v1::Request request) {
            airlock::v1::Response response;
            response.set_id(request.id());
            response.mutable_error()->set_code(airlock::v1::DENIED);
            response.mutable_error()->set_message("denied by the fuzzer");
            return absl::StatusOr<airlock::v1::Response>(response);
          }));
    }
  }
  return 0;
}
