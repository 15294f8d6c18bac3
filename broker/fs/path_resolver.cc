#include "broker/fs/path_resolver.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <deque>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "broker/wire_error.h"
#include "platform/base/errno_status.h"

namespace airlock::broker {
namespace {

std::string Join(const std::vector<std::string>& components) {
  return components.empty() ? std::string("/") : absl::StrCat("/", absl::StrJoin(components, "/"));
}

absl::Status Invalid(absl::string_view requested_path, absl::string_view why) {
  return WireError(v1::INVALID_ARGUMENT, absl::StrCat("path \"", absl::CHexEscape(requested_path),
                                                      "\" refused: ", why));
}

// Pushes the components of `text` to the front of `pending`, in order.
void PrependComponents(absl::string_view text, std::deque<std::string>& pending) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, '/', absl::SkipEmpty());
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) pending.emplace_front(*it);
}

}  // namespace

absl::Status ValidateRequestedPath(absl::string_view requested_path) {
  if (requested_path.empty()) return Invalid(requested_path, "empty path");
  if (requested_path.find('\0') != absl::string_view::npos) {
    return Invalid(requested_path, "NUL byte in path");
  }
  if (requested_path.find('\\') != absl::string_view::npos) {
    return Invalid(requested_path, "backslash in path");
  }
  if (requested_path.size() >= PATH_MAX) {
    return Invalid(requested_path.substr(0, 64),
                   absl::StrCat("path of ", requested_path.size(), " bytes (the limit is ",
                                PATH_MAX - 1, ")"));
  }
  for (absl::string_view component : absl::StrSplit(requested_path, '/')) {
    if (component.size() > NAME_MAX) {
      return Invalid(requested_path, absl::StrCat("a component of ", component.size(),
                                                  " bytes (the limit is ", NAME_MAX, ")"));
    }
  }
  return absl::OkStatus();
}

bool PathIsWithin(absl::string_view path, absl::string_view directory) {
  if (directory == "/") return absl::StartsWith(path, "/");
  return path == directory ||
         (absl::StartsWith(path, directory) && path.size() > directory.size() &&
          path[directory.size()] == '/');
}

absl::StatusOr<ResolvedPath> ResolvePath(absl::string_view requested_path, absl::string_view base,
                                         const std::vector<std::string>& trusted_prefixes) {
  if (absl::Status valid = ValidateRequestedPath(requested_path); !valid.ok()) return valid;
  ResolvedPath result;
  result.trailing_slash = requested_path.back() == '/';

  std::string absolute = requested_path[0] == '/'
                             ? std::string(requested_path)
                             : absl::StrCat(base, "/", requested_path);
  std::vector<std::string>& resolved = result.components;
  // A verified root's components are known to be canonical directories: start after them.
  for (const std::string& prefix : trusted_prefixes) {
    if (prefix != "/" && PathIsWithin(absolute, prefix)) {
      resolved = absl::StrSplit(prefix, '/', absl::SkipEmpty());
      absolute.erase(0, prefix.size());
      break;
    }
  }
  std::deque<std::string> pending;
  PrependComponents(absolute, pending);

  // Index in `resolved` from which components are known not to exist (none: npos).
  size_t missing_from = std::string::npos;
  int hops = 0;
  while (!pending.empty()) {
    std::string component = std::move(pending.front());
    pending.pop_front();
    if (component == ".") continue;
    if (component == "..") {
      if (!resolved.empty()) resolved.pop_back();
      if (missing_from != std::string::npos && resolved.size() <= missing_from) {
        missing_from = std::string::npos;
      }
      continue;
    }
    if (component.size() > NAME_MAX) {
      return Invalid(requested_path, absl::StrCat("a link leads to a component of ",
                                                  component.size(), " bytes"));
    }
    resolved.push_back(std::move(component));
    if (missing_from != std::string::npos) continue;

    const std::string current = Join(resolved);
    if (current.size() >= PATH_MAX) return Invalid(requested_path, "resolves to an over-long path");
    struct stat st;
    if (::lstat(current.c_str(), &st) != 0) {
      const int error = errno;
      if (error == ENOENT) {
        missing_from = resolved.size() - 1;
        continue;
      }
      if (error == ENOTDIR) {
        return Invalid(requested_path,
                       absl::StrCat("a parent of ", current, " is not a directory"));
      }
      return ErrnoToStatus(error, "resolve", current);
    }
    if (S_ISLNK(st.st_mode)) {
      if (++hops > kMaxLinkHops) {
        return Invalid(requested_path,
                       absl::StrCat("more than ", kMaxLinkHops,
                                    " symbolic links (a loop) while resolving, at ", current));
      }
      char target[PATH_MAX];
      const ssize_t length = ::readlink(current.c_str(), target, sizeof(target));
      if (length < 0) return LastErrnoStatus("readlink", current);
      if (length == 0 || static_cast<size_t>(length) >= sizeof(target)) {
        return Invalid(requested_path, absl::StrCat("unusable symbolic link at ", current));
      }
      const absl::string_view link(target, static_cast<size_t>(length));
      resolved.pop_back();
      if (link[0] == '/') resolved.clear();
      PrependComponents(link, pending);
      continue;
    }
    // Only the last component may be something other than a directory.
    if (!S_ISDIR(st.st_mode) && !pending.empty()) {
      return Invalid(requested_path, absl::StrCat(current, " is not a directory"));
    }
  }
  result.existing_components = missing_from == std::string::npos ? resolved.size() : missing_from;
  result.canonical = Join(resolved);
  if (result.canonical.size() >= PATH_MAX) {
    return Invalid(requested_path, "resolves to an over-long path");
  }
  return result;
}

}  // namespace airlock::broker
