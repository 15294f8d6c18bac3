#include "broker/dispatcher.h"

#include "absl/strings/str_cat.h"
#include "broker/wire_error.h"

namespace airlock::broker {
namespace {

template <typename Result>
void SetResult(v1::Response& response, absl::StatusOr<Result> result, v1::Preset preset,
               Result* (v1::Response::*mutable_field)()) {
  if (result.ok()) {
    *(response.*mutable_field)() = std::move(*result);
  } else {
    *response.mutable_error() = ToWireError(result.status(), preset);
  }
}

}  // namespace

v1::Response Dispatcher::Handle(const v1::Request& request) {
  v1::Response response;
  response.set_id(request.id());
  const v1::Context context = context_();
  const v1::Preset preset = context.preset();
  switch (request.body_case()) {
    case v1::Request::kRead:
      SetResult(response, files_.Read(request.read()), preset, &v1::Response::mutable_read);
      break;
    case v1::Request::kList:
      SetResult(response, files_.List(request.list()), preset, &v1::Response::mutable_list);
      break;
    case v1::Request::kWrite:
      SetResult(response, files_.Write(request.write()), preset, &v1::Response::mutable_write);
      break;
    case v1::Request::kEdit:
      SetResult(response, files_.Edit(request.edit()), preset, &v1::Response::mutable_edit);
      break;
    case v1::Request::kGetContext:
      *response.mutable_context() = context;
      break;
    case v1::Request::kBash:
    case v1::Request::kCancel:
      *response.mutable_error() = ToWireError(
          WireError(v1::INTERNAL, absl::StrCat("request ", request.id(), ": this broker does not "
                                               "implement ", request.has_bash() ? "bash" : "cancel",
                                               " yet; nothing was run")),
          preset);
      break;
    case v1::Request::BODY_NOT_SET:
      *response.mutable_error() = ToWireError(
          WireError(v1::INVALID_ARGUMENT,
                    absl::StrCat("request ", request.id(), " names no tool (unknown or empty body)")),
          preset);
      break;
  }
  return response;
}

}  // namespace airlock::broker
