#include "broker/audit/audit_key.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <vector>

#include <openssl/crypto.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "broker/wire_error.h"
#include "platform/base/errno_status.h"
#include "platform/base/fd_io.h"
#include "platform/base/scoped_fd.h"
#include "platform/base/status_macros.h"

namespace airlock::broker::audit {
namespace {

constexpr size_t kMinRawKeyBytes = 16;
constexpr size_t kMaxKeyBytes = 4096;
constexpr size_t kDefaultKeyBytes = 32;

absl::Status Refuse(absl::string_view rule, std::string message) {
  return WithRule(absl::PermissionDeniedError(std::move(message)), rule);
}

bool IsHexText(absl::string_view text) {
  if (text.size() < 32 || text.size() % 2 != 0) return false;
  for (char c : text) {
    const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    if (!hex) return false;
  }
  return true;
}

std::string ParentOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

absl::Status SyncDirectory(const std::string& path) {
  ScopedFd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return LastErrnoStatus("open directory", path);
  if (::fsync(dir.get()) != 0) return LastErrnoStatus("fsync directory", path);
  return absl::OkStatus();
}

// Creates the default key: 32 random bytes as hex, written to a private temporary file and
// linked into place, so a concurrent start never sees a half-written key.
absl::Status CreateDefaultKey(const std::string& path) {
  unsigned char bytes[kDefaultKeyBytes];
  if (::getrandom(bytes, sizeof(bytes), 0) != static_cast<ssize_t>(sizeof(bytes))) {
    return LastErrnoStatus("getrandom");
  }
  std::string hex = absl::StrCat(
      absl::BytesToHexString(absl::string_view(reinterpret_cast<char*>(bytes), sizeof(bytes))),
      "\n");
  OPENSSL_cleanse(bytes, sizeof(bytes));
  const std::string directory = ParentOf(path);
  ScopedFd file(::open(directory.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600));
  bool linked = false;
  if (!file && (errno == EOPNOTSUPP || errno == EISDIR)) {
    // No O_TMPFILE on this filesystem: create in place (exclusive, never following a link).
    file.reset(::open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!file && errno == EEXIST) return absl::OkStatus();  // a concurrent start made it
    linked = true;
  }
  absl::Status status;
  if (!file) {
    status = LastErrnoStatus("create audit key in", directory);
  } else if (::fchmod(file.get(), 0600) != 0) {
    status = LastErrnoStatus("chmod audit key", path);
  } else if (status = WriteFully(file.get(), hex, path); !status.ok()) {
  } else if (::fsync(file.get()) != 0) {
    status = LastErrnoStatus("fsync audit key", path);
  } else if (linked) {
    status = SyncDirectory(directory);
  } else {
    const std::string proc = absl::StrCat("/proc/self/fd/", file.get());
    if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, path.c_str(), AT_SYMLINK_FOLLOW) != 0 &&
        errno != EEXIST) {
      status = LastErrnoStatus("link audit key", path);
    } else {
      status = SyncDirectory(directory);
    }
  }
  OPENSSL_cleanse(hex.data(), hex.size());
  return status;
}

}  // namespace

absl::StatusOr<std::string> ResolveAirlockHome() {
  const char* home = std::getenv("AIRLOCK_HOME");
  if (home != nullptr && *home != '\0') return std::string(home);
  const char* user_home = std::getenv("HOME");
  if (user_home != nullptr && *user_home == '/') return absl::StrCat(user_home, "/.airlock");
  struct passwd entry;
  struct passwd* found = nullptr;
  std::vector<char> buffer(16384);
  if (::getpwuid_r(::geteuid(), &entry, buffer.data(), buffer.size(), &found) != 0 ||
      found == nullptr || found->pw_dir == nullptr || found->pw_dir[0] != '/') {
    return absl::FailedPreconditionError(
        "cannot find the airlock home: set AIRLOCK_HOME or HOME");
  }
  return absl::StrCat(found->pw_dir, "/.airlock");
}

absl::Status EnsurePrivateDirectory(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) == 0) {
    // mkdir applies the umask; make the mode exact regardless.
    if (::chmod(path.c_str(), 0700) != 0) return LastErrnoStatus("chmod", path);
    return absl::OkStatus();
  }
  if (errno != EEXIST) return LastErrnoStatus("create directory", path);
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return LastErrnoStatus("stat", path);
  if (!S_ISDIR(st.st_mode)) {
    return Refuse("audit-directory", absl::StrCat(path, " is not a directory (refused: the "
                                                        "audit trail needs a private directory)"));
  }
  if (st.st_uid != ::geteuid()) {
    return Refuse("audit-directory", absl::StrCat(path, " is owned by uid ", st.st_uid,
                                                  ", not by uid ", ::geteuid(), " (refused)"));
  }
  if ((st.st_mode & 022) != 0) {
    return Refuse("audit-directory",
                  absl::StrFormat("%s has mode %04o: writable by other users (refused)", path,
                                  st.st_mode & 07777));
  }
  return absl::OkStatus();
}

std::optional<std::string> TakeAuditKeyFromEnvironment() {
  const char* value = std::getenv(kAuditKeyEnvironmentVariable);
  if (value == nullptr) return std::nullopt;
  std::string key(value);
  ::unsetenv(kAuditKeyEnvironmentVariable);
  return key;
}

absl::StatusOr<SecretBytes> ParseAuditKeyMaterial(absl::string_view text,
                                                  absl::string_view what) {
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
  if (IsHexText(text)) {
    std::string decoded = absl::HexStringToBytes(text);
    SecretBytes key(decoded);
    OPENSSL_cleanse(decoded.data(), decoded.size());
    return key;
  }
  if (text.size() < kMinRawKeyBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": the audit key is too short (", text.size(), " bytes; at least ",
        kMinRawKeyBytes, " raw bytes or 32 hex digits)"));
  }
  if (text.size() > kMaxKeyBytes) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": the audit key is longer than ",
                                                   kMaxKeyBytes, " bytes"));
  }
  return SecretBytes(text);
}

absl::StatusOr<AuditKey> ReadAuditKeyFile(const std::string& path) {
  ScopedFd file(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!file) {
    if (errno == ELOOP) {
      return Refuse("audit-key-file",
                    absl::StrCat("audit key file ", path, " is a symbolic link (refused)"));
    }
    return LastErrnoStatus("open audit key file", path);
  }
  struct stat st;
  if (::fstat(file.get(), &st) != 0) return LastErrnoStatus("stat audit key file", path);
  if (!S_ISREG(st.st_mode)) {
    return Refuse("audit-key-file",
                  absl::StrCat("audit key file ", path, " is not a regular file (refused)"));
  }
  if ((st.st_mode & 07777) != 0600) {
    return Refuse("audit-key-mode",
                  absl::StrFormat("audit key file %s has mode %04o; it must be exactly 0600 "
                                  "(refused)",
                                  path, st.st_mode & 07777));
  }
  if (st.st_uid != ::geteuid()) {
    return Refuse("audit-key-owner",
                  absl::StrCat("audit key file ", path, " is owned by uid ", st.st_uid,
                               ", not by the current user (uid ", ::geteuid(), ") (refused)"));
  }
  AIRLOCK_ASSIGN_OR_RETURN(std::string text, ReadToEnd(file.get(), kMaxKeyBytes * 2 + 2, path));
  absl::StatusOr<SecretBytes> master = ParseAuditKeyMaterial(text, path);
  OPENSSL_cleanse(text.data(), text.size());
  if (!master.ok()) return master.status();
  AuditKey key;
  key.master = std::move(*master);
  key.source = absl::StrCat("key file ", path);
  key.path = path;
  return key;
}

absl::StatusOr<AuditKey> LoadOrCreateAuditKey(const AuditKeyOptions& options) {
  if (options.create_default) {
    // The broker: whatever the caller read, no child may inherit the key from our environment
    // (the worker's environment is copied from it).
    ::unsetenv(kAuditKeyEnvironmentVariable);
  }
  if (!options.key_file.empty()) return ReadAuditKeyFile(options.key_file);
  if (options.env_key.has_value()) {
    AIRLOCK_ASSIGN_OR_RETURN(SecretBytes master,
                             ParseAuditKeyMaterial(*options.env_key, kAuditKeyEnvironmentVariable));
    AuditKey key;
    key.master = std::move(master);
    key.source = kAuditKeyEnvironmentVariable;
    return key;
  }
  std::string home = options.airlock_home;
  if (home.empty()) {
    AIRLOCK_ASSIGN_OR_RETURN(home, ResolveAirlockHome());
  }
  const std::string path = DefaultAuditKeyPath(home);
  if (options.create_default) {
    AIRLOCK_RETURN_IF_ERROR(EnsurePrivateDirectory(home));
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) {
      if (errno != ENOENT) return LastErrnoStatus("stat audit key file", path);
      AIRLOCK_RETURN_IF_ERROR(CreateDefaultKey(path));
    }
  }
  absl::StatusOr<AuditKey> key = ReadAuditKeyFile(path);
  if (!key.ok() && !options.create_default && key.status().code() == absl::StatusCode::kNotFound) {
    return absl::NotFoundError(absl::StrCat("no audit key: give --key-file, set ",
                                            kAuditKeyEnvironmentVariable, ", or create ", path));
  }
  if (key.ok()) key->source = absl::StrCat("default key file ", path);
  return key;
}

std::string DefaultAuditKeyPath(const std::string& airlock_home) {
  return absl::StrCat(airlock_home, "/audit.key");
}

std::string DefaultAuditLogDirectory(const std::string& airlock_home) {
  return absl::StrCat(airlock_home, "/audit");
}

bool IsValidSessionId(absl::string_view session) {
  if (session.empty() || session.size() > 128 || session.front() == '.') return false;
  for (char c : session) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

absl::StatusOr<std::string> PrepareDefaultAuditLogPath(const std::string& airlock_home,
                                                       absl::string_view session) {
  if (!IsValidSessionId(session)) {
    return absl::InvalidArgumentError(
        absl::StrCat("session id \"", absl::CEscape(session), "\" cannot name an audit log"));
  }
  AIRLOCK_RETURN_IF_ERROR(EnsurePrivateDirectory(airlock_home));
  const std::string directory = DefaultAuditLogDirectory(airlock_home);
  AIRLOCK_RETURN_IF_ERROR(EnsurePrivateDirectory(directory));
  return absl::StrCat(directory, "/", session, ".jsonl");
}

std::vector<std::string> AuditProtectedPaths(const AuditKey& key, const std::string& log_path) {
  std::vector<std::string> paths = {log_path};
  if (!key.path.empty()) paths.push_back(key.path);
  return paths;
}

}  // namespace airlock::broker::audit
