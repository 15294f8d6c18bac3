#include "platform/linux/bwrap_command.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace airlock::linux_sandbox {
namespace {

constexpr size_t kMaxArgumentLength = 64 * 1024;

bool ValidEnvName(absl::string_view name) {
  if (name.empty() || absl::ascii_isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

bool HasNul(absl::string_view s) { return s.find('\0') != absl::string_view::npos; }

}  // namespace

std::string BwrapArgv::ArgsFileContents() const {
  std::string out;
  for (const std::string& option : options) {
    out.append(option.data(), option.size());
    out.push_back('\0');
  }
  return out;
}

std::vector<std::string> BwrapArgv::LauncherArgv(absl::string_view bwrap_path,
                                                 int args_fd) const {
  std::vector<std::string> argv = {std::string(bwrap_path), "--args", absl::StrCat(args_fd),
                                   "--"};
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

std::vector<std::string> BwrapArgv::FlatArgv(absl::string_view bwrap_path) const {
  std::vector<std::string> argv = {std::string(bwrap_path)};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

void BwrapCommand::SetError(absl::Status status) {
  if (error_.ok()) error_ = std::move(status);
}

bool BwrapCommand::CheckPath(absl::string_view what, absl::string_view path) {
  if (path.empty() || path[0] != '/') {
    SetError(absl::InvalidArgumentError(
        absl::StrCat("bwrap ", what, ": path '", path, "' is not absolute")));
    return false;
  }
  if (HasNul(path) || path.size() > kMaxArgumentLength) {
    SetError(absl::InvalidArgumentError(
        absl::StrCat("bwrap ", what, ": path contains a NUL byte or is too long")));
    return false;
  }
  return true;
}

void BwrapCommand::Flag(const char* flag) { options_.emplace_back(flag); }

void BwrapCommand::PathOp(const char* flag, absl::string_view path) {
  if (!CheckPath(flag, path)) return;
  options_.emplace_back(flag);
  options_.emplace_back(path);
}

void BwrapCommand::TwoPathOp(const char* flag, absl::string_view source,
                             absl::string_view destination) {
  if (!CheckPath(flag, source) || !CheckPath(flag, destination)) return;
  options_.emplace_back(flag);
  options_.emplace_back(source);
  options_.emplace_back(destination);
}

void BwrapCommand::FdPathOp(const char* flag, int fd, absl::string_view destination) {
  if (fd < 0) {
    SetError(absl::InvalidArgumentError(absl::StrCat("bwrap ", flag, ": invalid descriptor")));
    return;
  }
  if (!CheckPath(absl::StrCat(flag + 2, " destination"), destination)) return;
  options_.emplace_back(flag);
  options_.emplace_back(absl::StrCat(fd));
  options_.emplace_back(destination);
}

BwrapCommand& BwrapCommand::UnshareUser() {
  unshare_user_ = true;
  Flag("--unshare-user");
  return *this;
}
BwrapCommand& BwrapCommand::UnsharePid() { Flag("--unshare-pid"); return *this; }
BwrapCommand& BwrapCommand::UnshareNet() { Flag("--unshare-net"); return *this; }
BwrapCommand& BwrapCommand::UnshareIpc() { Flag("--unshare-ipc"); return *this; }
BwrapCommand& BwrapCommand::UnshareUts() { Flag("--unshare-uts"); return *this; }
BwrapCommand& BwrapCommand::UnshareCgroupTry() { Flag("--unshare-cgroup-try"); return *this; }
BwrapCommand& BwrapCommand::DisableUserns() {
  disable_userns_ = true;
  Flag("--disable-userns");
  return *this;
}
BwrapCommand& BwrapCommand::NewSession() { Flag("--new-session"); return *this; }
BwrapCommand& BwrapCommand::DieWithParent() { Flag("--die-with-parent"); return *this; }
BwrapCommand& BwrapCommand::DropAllCapabilities() {
  options_.emplace_back("--cap-drop");
  options_.emplace_back("ALL");
  return *this;
}

BwrapCommand& BwrapCommand::RoBind(absl::string_view source, absl::string_view destination) {
  TwoPathOp("--ro-bind", source, destination);
  return *this;
}
BwrapCommand& BwrapCommand::Bind(absl::string_view source, absl::string_view destination) {
  TwoPathOp("--bind", source, destination);
  return *this;
}
BwrapCommand& BwrapCommand::Dev(absl::string_view destination) {
  PathOp("--dev", destination);
  return *this;
}
BwrapCommand& BwrapCommand::Proc(absl::string_view destination) {
  PathOp("--proc", destination);
  return *this;
}
BwrapCommand& BwrapCommand::Tmpfs(absl::string_view destination) {
  PathOp("--tmpfs", destination);
  return *this;
}
BwrapCommand& BwrapCommand::RemountRo(absl::string_view destination) {
  PathOp("--remount-ro", destination);
  return *this;
}
BwrapCommand& BwrapCommand::Chdir(absl::string_view directory) {
  PathOp("--chdir", directory);
  return *this;
}
BwrapCommand& BwrapCommand::ClearEnv() {
  Flag("--clearenv");
  return *this;
}

BwrapCommand& BwrapCommand::SetEnv(absl::string_view name, absl::string_view value) {
  if (!ValidEnvName(name)) {
    SetError(absl::InvalidArgumentError(
        absl::StrCat("bwrap --setenv: invalid variable name '", name, "'")));
    return *this;
  }
  if (HasNul(value) || value.size() > kMaxArgumentLength) {
    SetError(absl::InvalidArgumentError(
        absl::StrCat("bwrap --setenv ", name, ": value contains a NUL byte or is too long")));
    return *this;
  }
  options_.emplace_back("--setenv");
  options_.emplace_back(name);
  options_.emplace_back(value);
  return *this;
}

BwrapCommand& BwrapCommand::BindFd(int fd, absl::string_view destination) {
  FdPathOp("--bind-fd", fd, destination);
  return *this;
}
BwrapCommand& BwrapCommand::RoBindFd(int fd, absl::string_view destination) {
  FdPathOp("--ro-bind-fd", fd, destination);
  return *this;
}

BwrapCommand& BwrapCommand::SeccompFd(int fd) {
  if (fd < 0) {
    SetError(absl::InvalidArgumentError("bwrap --seccomp: invalid descriptor"));
    return *this;
  }
  if (seccomp_set_) {
    SetError(absl::InvalidArgumentError("bwrap --seccomp given twice"));
    return *this;
  }
  seccomp_set_ = true;
  options_.emplace_back("--seccomp");
  options_.emplace_back(absl::StrCat(fd));
  return *this;
}

BwrapCommand& BwrapCommand::Command(std::vector<std::string> argv) {
  if (!command_.empty()) {
    SetError(absl::InvalidArgumentError("bwrap: the command was given twice"));
    return *this;
  }
  if (argv.empty() || argv[0].empty() || argv[0][0] != '/') {
    SetError(absl::InvalidArgumentError("bwrap: the command's program must be an absolute path"));
    return *this;
  }
  for (const std::string& arg : argv) {
    if (HasNul(arg)) {
      SetError(absl::InvalidArgumentError("bwrap: a command argument contains a NUL byte"));
      return *this;
    }
  }
  command_ = std::move(argv);
  return *this;
}

absl::StatusOr<BwrapArgv> BwrapCommand::Build() const {
  if (!error_.ok()) return error_;
  if (command_.empty()) return absl::InvalidArgumentError("bwrap: no command");
  if (disable_userns_ && !unshare_user_) {
    return absl::InvalidArgumentError("bwrap: --disable-userns requires --unshare-user");
  }
  return BwrapArgv{options_, command_};
}

}  // namespace airlock::linux_sandbox
