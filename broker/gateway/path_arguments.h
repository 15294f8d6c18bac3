// The tool gateway's path-argument detector (seed 000's FilesystemSandbox, SPEC §4 "Declared
// tools"): before a declared tool runs or anyone is asked, every string among its JSON
// arguments that looks like a path is resolved and classified exactly like a file-tool path,
// so the policy can refuse a target outside the roots or in protected storage.
//
// A string is a path argument when
//  - its name is path-like: compared case-insensitively with separators (_ - . space) removed,
//    it is one of path, paths, file, files, filename, filepath, dir, dirs, directory, folder,
//    target, source, src, dest, dst, destination, cwd, root, workdir, output, input,
//    location, … (kPathLikeNames in path_arguments.cc), or its last word (split at separators
//    and camelCase) is path, file, filename, dir, directory, folder or a plural of them
//    (config_file, outputDir, XMLFile); or
//  - its value contains '/' or '\', or starts with '.' (`.envrc`, `.git`, `..`: the protected
//    names are such names, and a program takes them relative to its working directory).
// Names come from object keys; an array's elements carry the name of the field holding it. An
// object key containing '/' or '\' is a path argument too ({"edits": {"src/a.c": "…"}}); its
// pointer names its member.
//
// Each is checked as the file tools would check it, relative to the first root. What a program
// could read differently from the file tools is refused (INVALID_ARGUMENT naming the argument):
//  - a '\' anywhere: the file tools refuse backslashes, and a program may read one as a
//    separator the fences never saw (so a regular expression cannot pass as a path argument);
//  - a leading '~': the broker does not expand it, a program may;
//  - a file: URI naming another host or with a bad percent escape. A local file: URI
//    (file:///p, file://localhost/p, file:/p) is checked as its percent-decoded path;
//  - an empty path-like string, and whatever Classify refuses (NUL, too long, a link loop).
// These are the safe answers; a tool taking Windows paths cannot be offered with them.
#ifndef BROKER_GATEWAY_PATH_ARGUMENTS_H_
#define BROKER_GATEWAY_PATH_ARGUMENTS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "broker/fs/file_tools.h"
#include "google/protobuf/struct.pb.h"

namespace airlock::broker {

// Bounds of the walk; beyond them the call is INVALID_ARGUMENT.
inline constexpr int kMaxArgumentDepth = 32;
inline constexpr size_t kMaxPathArguments = 1000;

struct PathArgument {
  std::string pointer;  // JSON pointer (RFC 6901) into the arguments, e.g. "/files/0"
  std::string value;    // the string as requested (a key, for a key)
  ClassifiedTarget target;
};

// Whether an argument named `name` is path-like (see above).
bool IsPathLikeName(absl::string_view name);

// The path-like strings as (JSON pointer, value), in a deterministic order (object keys
// sorted, arrays in order). Pure: touches no file system.
[[nodiscard]] absl::StatusOr<std::vector<std::pair<std::string, std::string>>>
FindPathArguments(const google::protobuf::Struct& arguments);

// Finds the path arguments and classifies each with files.Classify (a file: URI by its path).
// The first failure is returned with the argument's pointer prefixed and its wire code and
// rule kept.
[[nodiscard]] absl::StatusOr<std::vector<PathArgument>> ClassifyPathArguments(
    FileTools& files, const google::protobuf::Struct& arguments);

// The most restrictive class among the path arguments (broker secret > protected > outside the
// roots > inside), for ToolCall::Declared (broker/policy/decision.h).
struct WorstPathTarget {
  bool has_path = false;  // false: no path arguments; the rest is meaningless
  TargetClass target_class = TargetClass::kInsideRoots;
  std::string rule;            // the classification rule, e.g. "protected:.git/hooks"
  std::string pointer;         // which argument (the first of the worst class)
  std::string canonical_path;  // where it resolved
};
WorstPathTarget MostRestrictive(const std::vector<PathArgument>& arguments);

}  // namespace airlock::broker

#endif  // BROKER_GATEWAY_PATH_ARGUMENTS_H_
