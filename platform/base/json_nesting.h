// A bound on how deeply JSON text nests, checked before a parser sees it.
#ifndef PLATFORM_BASE_JSON_NESTING_H_
#define PLATFORM_BASE_JSON_NESTING_H_

#include <cstddef>

#include "absl/strings/string_view.h"

namespace airlock {

// Whether objects and arrays in `json` nest at most `limit` deep (brackets inside strings —
// double- or single-quoted, as protobuf's parser takes both — do not count; the text need not
// be valid JSON). Protobuf's JSON parser takes time that grows
// with the square of the depth, so untrusted lines are checked with this first.
bool JsonNestingWithin(absl::string_view json, size_t limit);

}  // namespace airlock

#endif  // PLATFORM_BASE_JSON_NESTING_H_
