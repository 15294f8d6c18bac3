// Every string the broker sends is valid UTF-8. Protobuf's string fields must hold UTF-8 — a
// receiver refuses the whole message otherwise — but much of what the broker reports is text
// it did not choose: a file name in a listing, a link's target in a canonical path, a path in
// an error message. Bytes of such text that are not UTF-8 are sent escaped as `\xNN`.
#ifndef BROKER_WIRE_TEXT_H_
#define BROKER_WIRE_TEXT_H_

#include "google/protobuf/message.h"

namespace airlock::broker {

// Escapes, in place, every string field of `message` and of the messages in it (bytes fields
// are left as they are: they carry any bytes).
void EscapeInvalidUtf8Strings(google::protobuf::Message* message);

}  // namespace airlock::broker

#endif  // BROKER_WIRE_TEXT_H_
