#include "broker/gateway/path_arguments.h"

#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "broker/wire_error.h"
#include "platform/base/status_macros.h"

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

// Untrusted text for a message: escaped, and cut short.
std::string ForMessage(absl::string_view text) {
  constexpr size_t kMax = 200;
  std::string out = absl::CHexEscape(text.substr(0, kMax));
  if (text.size() > kMax) out.append("…");
  return out;
}

absl::Status Refused(const std::string& pointer, absl::string_view why, absl::string_view rule) {
  return WithRule(WireError(v1::INVALID_ARGUMENT,
                            absl::StrCat("path-like argument ", ForMessage(pointer), ": ", why)),
                  rule);
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The path the fences must check for a path-like string: the string itself, or the path of a
// file: URI (percent-decoded, local host only), which a program may open as that path. What a
// program could read differently from the file tools is refused.
absl::StatusOr<std::string> PathToCheck(const std::string& pointer, const std::string& value) {
  if (value.find('\\') != std::string::npos) {
    return Refused(pointer,
                   "a backslash is refused (the file tools take none, and a program may read "
                   "it as a separator the fences never saw)",
                   "path-argument:backslash");
  }
  if (!value.empty() && value[0] == '~') {
    return Refused(pointer,
                   "a leading ~ is refused (the broker does not expand it, and a program may)",
                   "path-argument:tilde");
  }
  if (value.size() < 5 || !absl::EqualsIgnoreCase(absl::string_view(value).substr(0, 5), "file:")) {
    return value;
  }
  absl::string_view rest = absl::string_view(value).substr(5);
  if (absl::StartsWith(rest, "//")) {
    rest.remove_prefix(2);
    const size_t slash = rest.find('/');
    const absl::string_view host = rest.substr(0, slash);
    if (!host.empty() && !absl::EqualsIgnoreCase(host, "localhost")) {
      return Refused(pointer, "a file: URI naming another host is refused",
                     "path-argument:file-uri");
    }
    if (slash == absl::string_view::npos) {
      return Refused(pointer, "a file: URI without a path is refused", "path-argument:file-uri");
    }
    rest.remove_prefix(slash);
  }
  rest = rest.substr(0, rest.find_first_of("?#"));
  std::string path;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] != '%') {
      path.push_back(rest[i]);
      continue;
    }
    const int high = i + 2 < rest.size() ? HexDigit(rest[i + 1]) : -1;
    const int low = i + 2 < rest.size() ? HexDigit(rest[i + 2]) : -1;
    if (high < 0 || low < 0) {
      return Refused(pointer, "a file: URI with a bad percent escape is refused",
                     "path-argument:file-uri");
    }
    path.push_back(static_cast<char>(high * 16 + low));
    i += 2;
  }
  if (path.find('\\') != std::string::npos) {
    return Refused(pointer, "a backslash is refused", "path-argument:backslash");
  }
  return path;
}

struct Walk {
  std::vector<std::pair<std::string, std::string>> found;

  absl::Status Visit(const Value& value, absl::string_view name, const std::string& pointer,
                      int depth) {
    switch (value.kind_case()) {
      case Value::kStringValue: {
        const std::string& text = value.string_value();
        // A value starting with '.' is a name in the working directory — `.envrc`, `.git`,
        // `..` — and the protected names are such names.
        if (IsPathLikeName(name) || text.find('/') != std::string::npos ||
            text.find('\\') != std::string::npos || absl::StartsWith(text, ".")) {
          return Add(pointer, text);
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
      const std::string member = absl::StrCat(pointer, "/", EscapePointerToken(key));
      // A key can be a path too ({"edits": {"src/a.c": "…"}}): checked like a value.
      if (key.find('/') != std::string::npos || key.find('\\') != std::string::npos) {
        AIRLOCK_RETURN_IF_ERROR(Add(member, key));
      }
      AIRLOCK_RETURN_IF_ERROR(Visit(object.fields().at(key), key, member, depth));
    }
    return absl::OkStatus();
  }

  absl::Status Add(const std::string& pointer, const std::string& text) {
    if (found.size() >= kMaxPathArguments) {
      return WireError(v1::INVALID_ARGUMENT,
                       absl::StrCat("more than ", kMaxPathArguments, " path-like arguments"));
    }
    found.emplace_back(pointer, text);
    return absl::OkStatus();
  }

  static absl::Status TooDeep(const std::string& pointer) {
    return WireError(v1::INVALID_ARGUMENT,
                     absl::StrCat("arguments nested deeper than ", kMaxArgumentDepth,
                                  " levels at ", ForMessage(pointer.empty() ? "/" : pointer)));
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
    auto path = PathToCheck(pointer, value);
    if (!path.ok()) return path.status();
    auto target = files.Classify(*path);
    if (!target.ok()) {
      return Prefixed(target.status(),
                      absl::StrCat("path-like argument ", ForMessage(pointer), ": "));
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
