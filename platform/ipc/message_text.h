// The text of a message on the wire. Protobuf's string fields must hold UTF-8 — a receiver
// refuses the whole message otherwise — yet both sides put text they did not choose in them:
// the broker reports file names, link targets and paths in errors; a client sends paths and
// commands it was given. The broker escapes what is not UTF-8 before it sends; a client
// refuses to send it, saying which field.
#ifndef PLATFORM_IPC_MESSAGE_TEXT_H_
#define PLATFORM_IPC_MESSAGE_TEXT_H_

#include "absl/status/status.h"
#include "google/protobuf/message.h"

namespace airlock::ipc {

// Escapes, in place, every string field of `message` and of the messages in it: each byte
// that is not part of UTF-8 is written as `\xNN` (bytes fields are left as they are: they
// carry any bytes).
void EscapeInvalidUtf8Strings(google::protobuf::Message* message);

// InvalidArgument naming the first string field (as a path of field names) that is not
// UTF-8; OK when every one is.
absl::Status CheckUtf8Strings(const google::protobuf::Message& message);

}  // namespace airlock::ipc

#endif  // PLATFORM_IPC_MESSAGE_TEXT_H_
