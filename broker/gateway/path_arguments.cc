#include "broker/gateway/path_arguments.h"

#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "broker/wire_error.h"

namespace airlock::broker {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

// Whole names, lower case with separators removed.
constexpr absl::string_view kPathLikeNames[] = {
    "path",       "paths",       "pathname",  "pathnames",  "file",       "files",
    "filename",   "filenames",   "filepath",  "filepaths",  "dir",        "dirs",
    "dirname",    "dirpath",     "directory", "directories", "folder",    "folders",
    "target",     "targets",     "source",    "sources",    "src",        "srcs",
    "dest",       "dests",       "dst",       "destination", "destinations", "cwd",
    "root",       "roots",       "rootdir",   "workdir",    "workingdir", "workingdirectory",
    "output",     "outputs",     "outdir",    "outfile",    "outpath",    "input",
    "inputs",     "infile",      "inpath",    "location",   "locations",  "basedir",
    "basepath",   "mount",       "mountpoint"};

// Last words that make any name path-like: config_file, outputDir, XMLFile.
constexpr absl::string_view kPathLikeLastWords[] = {
    "path",      "paths",       "pathname", "file",    "files", "filename",
    "filenames", "dir",         "dirs",     "dirname", "directory",
    "directories", "folder",    "folders"};

bool IsSeparator(char c) { return c == '_' || c == '-' || c == '.' || c == ' '; }

// The last word of a name, split at separators and camelCase boundaries, in lower case.
std::string LastWord(absl::string_view name) {
  size_t end = name.size();
  while (end > 0 && IsSeparator(name[end - 1])) --end;
  size_t start = end;
  while (start > 0) {
    const char c = name[start - 1];
    if (IsSeparator(c)) break;
    // A boundary before position start-1: lower/digit→Upper, or Upper→Upper lower (XMLFile).
    if (absl::ascii_isupper(c) && start - 1 > 0) {
      const char before = name[start - 2];
      const bool next_lower = start < end && absl::ascii_islower(name[start]);
      if (absl::ascii_islower(before) || absl::ascii_isdigit(before) ||
          (absl::ascii_isupper(before) && next_lower)) {
        --start;
        break;
      }
    }
    --start;
  }
  return absl::AsciiStrToLower(name.substr(start, end - start));
}

std::string EscapePointerToken(absl::string_view token) {
  std::string out;
  for (char c : token) {
    if (c == '~') {
      out.append("~0");
    } else if (c == '/') {
      out.append("~1");
    } else {
      out.push_back(c);
    }
  }
  return out;
}

struct Walk {
  std::vector<std::pair<std::string, std::string>> found;

  absl::Status Visit(const Value& value, absl::string_view name, const std::string& pointer,
                      int depth) {
    switch (value.kind_case()) {
      case Value::kStringValue: {
        const std::string& text = value.string_value();
        if (IsPathLikeName(name) || text.find('/') != std::string::npos ||
            text.find('\\') != std::string::npos) {
          if (found.size() >= kMaxPathArguments) {
            return WireError(v1::INVALID_ARGUMENT,
                             absl::StrCat("more than ", kMaxPathArguments,
                                          " path-like arguments"));
          }
          found.emplace_back(pointer, text);
        }
        return absl::OkStatus();
      }
      case Value::kListValue: {
        if (depth + 1 > kMaxArgumentDepth) return TooDeep(pointer);
        const auto& items = value.list_value().values();
        for (int i = 0; i < items.size(); ++i) {
          absl::Status s = Visit(items[i], name, absl::StrCat(pointer, "/", i), depth + 1);
          if (!s.ok()) return s;
        }
        return absl::OkStatus();
      }
      case Value::kStructValue:
        if (depth + 1 > kMaxArgumentDepth) return TooDeep(pointer);
        return Object(value.struct_value(), pointer, depth + 1);
      default:
        return absl::OkStatus();
    }
  }

  absl::Status Object(const Struct& object, const std::string& pointer, int depth) {
    std::set<std::string> keys;  // sorted: the order of reports must not depend on hashing
    for (const auto& [key, value] : object.fields()) keys.insert(key);
    for (const std::string& key : keys) {
      absl::Status s = Visit(object.fields().at(key), key,
                              absl::StrCat(pointer, "/", EscapePointerToken(key)), depth);
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

  static absl::Status TooDeep(const std::string& pointer) {
    return WireError(v1::INVALID_ARGUMENT,
                     absl::StrCat("arguments nested deeper than ", kMaxArgumentDepth,
                                  " levels at ", pointer.empty() ? "/" : pointer));
  }
};

// The same status (code and payloads: wire code, rule) with a prefix naming the argument.
absl::Status Prefixed(const absl::Status& status, absl::string_view prefix) {
  absl::Status out(status.code(), absl::StrCat(prefix, status.message()));
  status.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
    out.SetPayload(url, payload);
  });
  return out;
}

int Rank(TargetClass target_class) {
  switch (target_class) {
    case TargetClass::kBrokerSecret: return 3;
    case TargetClass::kProtected: return 2;
    case TargetClass::kOutsideRoots: return 1;
    case TargetClass::kInsideRoots: return 0;
  }
  return 3;  // an unknown class is treated as the worst
}

}  // namespace

bool IsPathLikeName(absl::string_view name) {
  std::string squashed;
  for (char c : name) {
    if (!IsSeparator(c)) squashed.push_back(absl::ascii_tolower(static_cast<unsigned char>(c)));
  }
  for (absl::string_view candidate : kPathLikeNames) {
    if (squashed == candidate) return true;
  }
  const std::string last = LastWord(name);
  for (absl::string_view candidate : kPathLikeLastWords) {
    if (last == candidate) return true;
  }
  return false;
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> FindPathArguments(
    const Struct& arguments) {
  Walk walk;
  absl::Status s = walk.Object(arguments, "", 1);
  if (!s.ok()) return s;
  return std::move(walk.found);
}

absl::StatusOr<std::vector<PathArgument>> ClassifyPathArguments(FileTools& files,
                                                                const Struct& arguments) {
  auto found = FindPathArguments(arguments);
  if (!found.ok()) return found.status();
  std::vector<PathArgument> out;
  out.reserve(found->size());
  for (auto& [pointer, value] : *found) {
    if (value.find('\\') != std::string::npos) {
      return WithRule(
          WireError(v1::INVALID_ARGUMENT,
                    absl::StrCat("path-like argument ", pointer,
                                 ": a backslash is refused (the file tools take none, and a "
                                 "program may read it as a separator the fences never saw)")),
          "path-argument:backslash");
    }
    auto target = files.Classify(value);
    if (!target.ok()) {
      return Prefixed(target.status(), absl::StrCat("path-like argument ", pointer, ": "));
    }
    out.push_back({std::move(pointer), std::move(value), *std::move(target)});
  }
  return out;
}

WorstPathTarget MostRestrictive(const std::vector<PathArgument>& arguments) {
  WorstPathTarget worst;
  for (const PathArgument& argument : arguments) {
    if (worst.has_path && Rank(argument.target.target_class) <= Rank(worst.target_class)) continue;
    worst.has_path = true;
    worst.target_class = argument.target.target_class;
    worst.rule = argument.target.rule;
    worst.pointer = argument.pointer;
    worst.canonical_path = argument.target.canonical_path;
  }
  return worst;
}

}  // namespace airlock::broker
