// A typed bubblewrap command: a list of operations that becomes bwrap's argument vector.
// Nothing is ever built by string concatenation: every operation has fixed argument slots,
// every path must be absolute and free of NUL bytes, and the user command is kept apart so it
// can only ever appear after `--`. Like sandbox2's PolicyBuilder, the first invalid operation
// is remembered and returned by Build().
#ifndef PLATFORM_LINUX_BWRAP_COMMAND_H_
#define PLATFORM_LINUX_BWRAP_COMMAND_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace airlock::linux_sandbox {

// What Build() produces. `options` are bwrap options only (never the user command); the
// launcher passes them NUL-separated through `--args FD`. `command` goes after `--`.
struct BwrapArgv {
  std::vector<std::string> options;
  std::vector<std::string> command;
  // Host paths the launcher must open (no link in any component) on the descriptors named by
  // --bind-fd / --ro-bind-fd options: descriptor kFirstSourceFd + i holds fd_sources[i].
  std::vector<std::string> fd_sources;

  // The bytes for `--args FD`: each option followed by a NUL byte.
  std::string ArgsFileContents() const;
  // {bwrap_path, "--args", "<fd>", "--", command…}: the real argv of the bwrap process.
  std::vector<std::string> LauncherArgv(absl::string_view bwrap_path, int args_fd) const;
  // {bwrap_path, options…, "--", command…}: for display and tests.
  std::vector<std::string> FlatArgv(absl::string_view bwrap_path) const;
};

class BwrapCommand {
 public:
  // Namespaces. User, pid, net, ipc and uts are what the shell sandbox always asks for.
  BwrapCommand& UnshareUser();
  BwrapCommand& UnsharePid();
  BwrapCommand& UnshareNet();
  BwrapCommand& UnshareIpc();
  BwrapCommand& UnshareUts();
  BwrapCommand& UnshareCgroupTry();
  // No user namespaces inside (bwrap 0.8; requires UnshareUser).
  BwrapCommand& DisableUserns();
  BwrapCommand& NewSession();
  BwrapCommand& DieWithParent();
  BwrapCommand& DropAllCapabilities();

  // Mounts, applied by bwrap in the order they were added.
  BwrapCommand& RoBind(absl::string_view source, absl::string_view destination);
  BwrapCommand& Bind(absl::string_view source, absl::string_view destination);
  BwrapCommand& Dev(absl::string_view destination);
  BwrapCommand& Proc(absl::string_view destination);
  BwrapCommand& Tmpfs(absl::string_view destination);
  BwrapCommand& RemountRo(absl::string_view destination);

  // Process setup.
  BwrapCommand& Chdir(absl::string_view directory);
  BwrapCommand& ClearEnv();
  BwrapCommand& SetEnv(absl::string_view name, absl::string_view value);
  // Binds whatever descriptor `fd` is open on (a path can be swapped for a link meanwhile;
  // an open descriptor cannot). bwrap closes it before the command runs.
  BwrapCommand& BindFd(int fd, absl::string_view destination);
  BwrapCommand& RoBindFd(int fd, absl::string_view destination);
  // The seccomp program (BPF, as libseccomp exports it) is read from this descriptor.
  BwrapCommand& SeccompFd(int fd);

  // The command run inside the sandbox; argv[0] must be an absolute path.
  BwrapCommand& Command(std::vector<std::string> argv);

  // The argument vector, or the first error met while adding operations.
  [[nodiscard]] absl::StatusOr<BwrapArgv> Build() const;

 private:
  void Flag(const char* flag);
  void PathOp(const char* flag, absl::string_view path);
  void TwoPathOp(const char* flag, absl::string_view source, absl::string_view destination);
  // `flag` FD DESTINATION: a source given as a descriptor.
  void FdPathOp(const char* flag, int fd, absl::string_view destination);
  bool CheckPath(absl::string_view what, absl::string_view path);
  void SetError(absl::Status status);

  std::vector<std::string> options_;
  std::vector<std::string> command_;
  bool unshare_user_ = false;
  bool disable_userns_ = false;
  bool seccomp_set_ = false;
  absl::Status error_;
};

}  // namespace airlock::linux_sandbox

#endif  // PLATFORM_LINUX_BWRAP_COMMAND_H_
