#include "platform/linux/bwrap_launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdint>
#include <mutex>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "platform/base/errno_status.h"
#include "platform/base/fd_io.h"
#include "platform/base/logging.h"
#include "platform/base/scoped_fd.h"
#include "platform/base/status_macros.h"
#include "platform/linux/open_no_links.h"
#include "platform/linux/shell_seccomp.h"

namespace airlock::linux_sandbox {
namespace {

constexpr char kReady[] = "ready";

// The preflight runs as `bash --noprofile --norc -c SCRIPT NAME ARGS…` and uses builtins only.
// It checks the instance, says "ready" on descriptor 3, waits for "go" on descriptor 6 (see
// kGoFd), closes 3 to 6, then either execs
// its arguments (`exec --`, so an argument that looks like an option is still the command) or
// evaluates a shell command line in the same bash — one bash start instead of two.
// /proc/self/status is read by one `read` (to its end): bash seeks a file back after every
// `read`, and each seek makes the kernel generate the file again, so reading it line by line
// cost about 0.7 ms. Each field is matched as a whole line.
#define AIRLOCK_PREFLIGHT_CHECKS                                                              \
  "IFS= read -r -d '' airlock_status </proc/self/status\n"                                     \
  "if [[ $airlock_status != *$'\\nNoNewPrivs:\\t1\\n'* ||\n"                                 \
  "      $airlock_status != *$'\\nSeccomp:\\t2\\n'* ||\n"                                    \
  "      $airlock_status != *$'\\nCapEff:\\t0000000000000000\\n'* ]] || [ -w / ]; then\n"     \
  "  echo 'airlock: sandbox preflight failed (no_new_privs, seccomp, capabilities or "        \
  "read-only root)' >&2\n"                                                                    \
  "  exit 125\n"                                                                              \
  "fi\n"                                                                                      \
  "unset -v airlock_status\n"                                                                 \
  "printf ready >&3\n"                                                                        \
  "exec 3>&-\n"                                                                               \
  "IFS= read -r -N 2 airlock_go <&6\n"                                                        \
  "if [ \"$airlock_go\" != go ]; then\n"                                                       \
  "  echo 'airlock: the broker did not confirm the start; nothing ran' >&2\n"                \
  "  exit 125\n"                                                                              \
  "fi\n"                                                                                      \
  "unset -v airlock_go\n"                                                                     \
  "exec 4<&- 5<&- 6<&-\n"

// A program that cannot be found is said so plainly (bash's own message would name the
// preflight script and its line).
constexpr char kPreflightExec[] = AIRLOCK_PREFLIGHT_CHECKS
    "if ! command -v -- \"$1\" >/dev/null 2>&1; then\n"
    "  echo \"airlock: $1: command not found or not executable\" >&2\n"
    "  exit 127\n"
    "fi\n"
    "exec -- \"$@\"\n";
// $1 is the command line; the positional parameters are emptied and the helper variable
// unset before the command runs, so it sees what `bash -c` would give it.
constexpr char kPreflightEval[] = AIRLOCK_PREFLIGHT_CHECKS
    "airlock_command=$1\n"
    "set --\n"
    "eval \"unset -v airlock_command\n$airlock_command\"\n";
#undef AIRLOCK_PREFLIGHT_CHECKS

size_t Depth(const std::string& path) {
  return static_cast<size_t>(std::count(path.begin(), path.end(), '/'));
}

// Parents before children: a later bind of a parent would cover a child's mount.
std::vector<std::string> SortedByDepth(std::vector<std::string> paths) {
  std::stable_sort(paths.begin(), paths.end(), [](const std::string& a, const std::string& b) {
    return Depth(a) < Depth(b);
  });
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  return paths;
}

bool IsUnder(absl::string_view path, absl::string_view dir) {
  if (dir == "/") return true;
  return path == dir || (absl::StartsWith(path, dir) && path.size() > dir.size() &&
                         path[dir.size()] == '/');
}

absl::Status CheckSystemExecutable(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return LastErrnoStatus("stat", path);
  if (!S_ISREG(st.st_mode)) return absl::UnavailableError(absl::StrCat(path, " is not a file"));
  if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return absl::UnavailableError(
        absl::StrCat(path, " is not owned by root or is writable by others"));
  }
  if (::access(path.c_str(), X_OK) != 0) return LastErrnoStatus("access(X_OK)", path);
  return absl::OkStatus();
}

absl::StatusOr<std::string> FindSystem(const char* name) {
  std::string reasons;
  for (const char* dir : {"/usr/bin/", "/bin/"}) {
    const std::string path = absl::StrCat(dir, name);
    const absl::Status status = CheckSystemExecutable(path);
    if (status.ok()) return path;
    absl::StrAppend(&reasons, reasons.empty() ? "" : "; ", status.message());
  }
  return absl::UnavailableError(
      absl::StrCat(name, " is not usable from /usr/bin or /bin (PATH is never searched): ",
                   reasons));
}

// A sealed-size memory file holding `data`, positioned at its start.
absl::StatusOr<ScopedFd> MemoryFile(const char* name, absl::string_view data) {
  ScopedFd fd(::memfd_create(name, MFD_CLOEXEC));
  if (!fd) return LastErrnoStatus("memfd_create", name);
  AIRLOCK_RETURN_IF_ERROR(WriteFully(fd.get(), data, name));
  if (::lseek(fd.get(), 0, SEEK_SET) != 0) return LastErrnoStatus("lseek", name);
  return fd;
}


// The broker's side of kGoFd: the read end goes to the sandbox, the write end stays here until
// "go" is said (or it is closed unsaid: the preflight then runs nothing).
struct GoPipe {
  ScopedFd read_end;
  ScopedFd write_end;

  static absl::StatusOr<GoPipe> Create() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return LastErrnoStatus("pipe2", "preflight go");
    GoPipe pipe;
    pipe.read_end.reset(fds[0]);
    pipe.write_end.reset(fds[1]);
    return pipe;
  }

  // Says "go" once and closes the end. A sandbox that died meanwhile makes this EPIPE, never a
  // SIGPIPE: nothing to do then, nothing will run.
  void Say() {
    if (!write_end) return;
    (void)WriteWithoutSigpipe(write_end.get(), "go", 2);
    write_end.reset();
  }
};

// The filter depends only on allow_unix_sockets: built once per variant, then reused.
absl::StatusOr<std::string> ShellSeccompProgram(bool allow_unix_sockets) {
  static std::mutex* const mutex = new std::mutex;
  static std::string* const programs = new std::string[2];
  std::lock_guard<std::mutex> lock(*mutex);
  std::string& program = programs[allow_unix_sockets ? 1 : 0];
  if (program.empty()) {
    AIRLOCK_ASSIGN_OR_RETURN(program,
                             BuildShellSeccompProgram({.allow_unix_sockets = allow_unix_sockets}));
  }
  return program;
}

// What every instance needs before bwrap starts: the programs, bwrap's arguments and the
// seccomp filter in sealed memory files, and the ready and go pipes. Descriptors() maps them
// for bwrap; the caller closes ReadyWriteAndGoRead after the spawn.
struct PreparedInstance {
  std::string bwrap_path;
  std::vector<std::string> launcher_argv;
  ScopedFd args;
  ScopedFd seccomp;
  ScopedFd ready_read;
  ScopedFd ready_write;
  GoPipe go;
  std::vector<ScopedFd> sources;  // kFirstSourceFd + i

  static absl::StatusOr<PreparedInstance> Create(const ShellSandboxLayout& layout,
                                                 const SandboxCommand& command,
                                                 bool allow_unix_sockets) {
    PreparedInstance instance;
    AIRLOCK_ASSIGN_OR_RETURN(instance.bwrap_path, FindSystemBwrap());
    AIRLOCK_ASSIGN_OR_RETURN(const std::string bash_path, FindSystemBash());
    absl::StatusOr<std::string> program = ShellSeccompProgram(allow_unix_sockets);
    if (!program.ok()) {
      return absl::UnavailableError(absl::StrCat("the shell seccomp filter cannot be built: ",
                                                 program.status().message()));
    }
    AIRLOCK_ASSIGN_OR_RETURN(BwrapArgv argv, BuildShellSandboxArgv(layout, command, bash_path));
    instance.launcher_argv = argv.LauncherArgv(instance.bwrap_path, kArgsFd);
    AIRLOCK_ASSIGN_OR_RETURN(instance.args,
                             MemoryFile("airlock-bwrap-args", argv.ArgsFileContents()));
    AIRLOCK_ASSIGN_OR_RETURN(instance.seccomp, MemoryFile("airlock-bwrap-seccomp", *program));
    for (const std::string& path : argv.fd_sources) {
      ScopedFd source = OpenNoLinks(path, O_PATH);
      if (!source) {
        return absl::UnavailableError(absl::StrCat(
            "cannot open ", path, " without following a link (", std::strerror(errno),
            "): it changed while the sandbox was laid out"));
      }
      instance.sources.push_back(std::move(source));
    }
    int ready_pipe[2];
    if (::pipe2(ready_pipe, O_CLOEXEC) != 0) return LastErrnoStatus("pipe2", "preflight");
    instance.ready_read.reset(ready_pipe[0]);
    instance.ready_write.reset(ready_pipe[1]);
    AIRLOCK_ASSIGN_OR_RETURN(instance.go, GoPipe::Create());
    return instance;
  }

  // bwrap's descriptors 3 to 6.
  std::vector<std::pair<int, int>> Descriptors() const {
    std::vector<std::pair<int, int>> mapping = {{kReadyFd, ready_write.get()},
                                                {kArgsFd, args.get()},
                                                {kSeccompFd, seccomp.get()},
                                                {kGoFd, go.read_end.get()}};
    for (size_t i = 0; i < sources.size(); ++i) {
      mapping.emplace_back(kFirstSourceFd + static_cast<int>(i), sources[i].get());
    }
    return mapping;
  }

  // The ends only the sandbox may hold (or EOF would never come), for close_after_spawn.
  std::vector<ScopedFd> SandboxEnds() {
    std::vector<ScopedFd> ends;
    ends.push_back(std::move(ready_write));
    ends.push_back(std::move(go.read_end));
    return ends;
  }
};

}  // namespace

const char* PreflightScript(bool shell_line) {
  return shell_line ? kPreflightEval : kPreflightExec;
}

absl::StatusOr<BwrapArgv> BuildShellSandboxArgv(const ShellSandboxLayout& layout,
                                                const SandboxCommand& command,
                                                const std::string& shell) {
  if (command.argv.empty() == command.shell_line.empty()) {
    return absl::InvalidArgumentError("sandbox: give exactly one of an argv or a command line");
  }
  if (layout.private_tmp.empty() || layout.cwd.empty()) {
    return absl::InvalidArgumentError("sandbox: the private temp directory and cwd are required");
  }
  BwrapCommand bwrap;
  bwrap.UnshareUser()
      .DisableUserns()
      .UnsharePid()
      .UnshareNet()
      .UnshareIpc()
      .UnshareUts()
      .UnshareCgroupTry()
      .NewSession()
      .DieWithParent()
      .DropAllCapabilities();
  bwrap.RoBind("/", "/").Dev("/dev").Proc("/proc");
  bwrap.Bind(layout.private_tmp, "/tmp");

  std::vector<std::string> roots;
  // Read-only roots are re-bound so that one below /tmp or /dev stays visible ("/" itself is
  // already read-only, and re-binding it would cover the private /tmp).
  for (const std::string& root : layout.readonly_roots) {
    if (root != "/") bwrap.RoBind(root, root);
  }
  for (const std::string& root : SortedByDepth(layout.writable_roots)) {
    bwrap.Bind(root, root);
    roots.push_back(root);
  }
  for (const std::string& root : layout.readonly_roots) roots.push_back(root);
  // Sources inside a writable root go by descriptor (kFirstSourceFd).
  std::vector<std::string> fd_sources;
  auto source_fd = [&fd_sources](const std::string& path) {
    fd_sources.push_back(path);
    return kFirstSourceFd + static_cast<int>(fd_sources.size()) - 1;
  };
  for (const std::string& parent : SortedByDepth(layout.self_binds)) {
    bwrap.BindFd(source_fd(parent), parent);
  }

  // Read-only re-binds and masks together, parents first.
  struct Cover {
    std::string path;
    std::string source;
  };
  std::vector<Cover> covers;
  for (const std::string& path : layout.read_only) covers.push_back({path, path});
  for (const CoveredPath& mask : layout.masks) {
    if (!mask.content.empty()) {
      covers.push_back({mask.path, mask.path});
      continue;
    }
    const std::string& source = mask.directory ? layout.empty_dir : layout.empty_file;
    if (source.empty()) return absl::InvalidArgumentError("sandbox: no mask source");
    covers.push_back({mask.path, source});
  }
  std::stable_sort(covers.begin(), covers.end(), [](const Cover& a, const Cover& b) {
    return Depth(a.path) < Depth(b.path);
  });
  for (const Cover& cover : covers) {
    if (cover.source == cover.path) {
      bwrap.RoBindFd(source_fd(cover.path), cover.path);  // re-bound onto itself
    } else {
      bwrap.RoBind(cover.source, cover.path);  // a mask: its source is the broker's
    }
  }

  for (const CoveredPath& hidden : layout.hidden) {
    // The private /tmp and the fresh /dev already hide host paths below them, unless a root
    // brings them back.
    const bool under_root = std::any_of(roots.begin(), roots.end(), [&](const std::string& r) {
      return IsUnder(hidden.path, r) || IsUnder(r, hidden.path);
    });
    if ((IsUnder(hidden.path, "/tmp") || IsUnder(hidden.path, "/dev")) && !under_root) continue;
    // Below a hidden directory it is hidden already, and its mount point could not be made
    // in that directory's empty read-only tmpfs (the audit log inside $AIRLOCK_HOME, say).
    const bool below_hidden =
        std::any_of(layout.hidden.begin(), layout.hidden.end(), [&](const CoveredPath& other) {
          return other.directory && other.path != hidden.path && IsUnder(hidden.path, other.path);
        });
    if (below_hidden) continue;
    if (hidden.directory) {
      bwrap.Tmpfs(hidden.path).RemountRo(hidden.path);
    } else {
      bwrap.RoBind("/dev/null", hidden.path);
    }
  }

  bwrap.Chdir(layout.cwd).ClearEnv();
  for (const auto& [name, value] : layout.env) bwrap.SetEnv(name, value);
  bwrap.SeccompFd(kSeccompFd);

  std::vector<std::string> argv;
  if (command.shell_line.empty()) {
    argv = {shell, "--noprofile", "--norc", "-c", kPreflightExec, "airlock-preflight"};
    argv.insert(argv.end(), command.argv.begin(), command.argv.end());
  } else {
    argv = {shell, "--noprofile", "--norc", "-c", kPreflightEval, "bash", command.shell_line};
  }
  bwrap.Command(std::move(argv));
  AIRLOCK_ASSIGN_OR_RETURN(BwrapArgv built, bwrap.Build());
  built.fd_sources = std::move(fd_sources);
  return built;
}

absl::StatusOr<std::string> FindSystemBwrap() { return FindSystem("bwrap"); }
absl::StatusOr<std::string> FindSystemBash() { return FindSystem("bash"); }

absl::StatusOr<TreeRunResult> RunInShellSandbox(const SandboxRunOptions& options) {
  AIRLOCK_ASSIGN_OR_RETURN(
      PreparedInstance instance,
      PreparedInstance::Create(options.layout, options.command, options.allow_unix_sockets));
  ScopedFd null_in;
  int stdin_fd = 0;
  if (options.capture_output) {
    null_in.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!null_in) return LastErrnoStatus("open", "/dev/null");
    stdin_fd = null_in.get();
  }

  TreeRunOptions run;
  run.spawn.argv = instance.launcher_argv;
  run.spawn.env = {};  // bwrap's own environment is empty
  run.spawn.descriptors = {{0, stdin_fd}, {1, 1}, {2, 2}};
  for (const auto& mapping : instance.Descriptors()) run.spawn.descriptors.push_back(mapping);
  run.spawn.parent_death_signal = SIGKILL;
  run.capture_output = options.capture_output;
  run.stream_limit = options.stream_limit;
  run.full_output_dir = options.full_output_dir;
  run.timeout = options.timeout;
  run.cancel = options.cancel;
  run.status_fd = instance.ready_read.get();
  run.close_after_spawn = instance.SandboxEnds();
  GoPipe& go = instance.go;
  run.on_status = [&go, &options](const std::string& said) -> absl::Status {
    if (said != kReady || !go.write_end) return absl::OkStatus();
    if (options.before_go) {
      absl::Status barrier = options.before_go();
      if (!barrier.ok()) {
        go.write_end.reset();  // the preflight reads EOF and runs nothing
        return barrier;
      }
    }
    go.Say();
    return absl::OkStatus();
  };
  absl::StatusOr<TreeRunResult> result = RunProcessTree(std::move(run));
  if (!result.ok()) return result.status();
  if (result->status_bytes != kReady && !result->timed_out && !result->cancelled) {
    std::string detail(absl::StripAsciiWhitespace(result->stderr_data));
    return absl::UnavailableError(absl::StrCat(
        "the bubblewrap sandbox could not be set up; the command did not run (",
        instance.bwrap_path,
        " exited with status ", result->status.ShellCode(),
        detail.empty() ? std::string(")") : absl::StrCat(": ", detail, ")")));
  }
  return result;
}

absl::StatusOr<std::unique_ptr<KeptProcess>> StartInShellSandbox(
    const SandboxStartOptions& options) {
  if (options.argv.empty()) return absl::InvalidArgumentError("sandbox: empty argv");
  SandboxCommand command;
  command.argv = options.argv;
  AIRLOCK_ASSIGN_OR_RETURN(
      PreparedInstance instance,
      PreparedInstance::Create(options.layout, command, options.allow_unix_sockets));
  ScopedFd ready_read = std::move(instance.ready_read);
  const std::string bwrap_path = instance.bwrap_path;

  KeptProcess::Options kept;
  kept.spawn.argv = instance.launcher_argv;
  kept.spawn.env = {};  // bwrap's own environment is empty
  kept.spawn.descriptors = instance.Descriptors();
  kept.close_after_spawn = instance.SandboxEnds();
  kept.stderr_keep = options.stderr_keep;
  AIRLOCK_ASSIGN_OR_RETURN(std::unique_ptr<KeptProcess> process,
                           KeptProcess::Start(std::move(kept)));

  // "ready" comes in one write; EOF or silence until the deadline means the instance failed.
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + options.ready_timeout;
  std::string said;
  bool timed_out = false;
  while (said.size() < sizeof(kReady) - 1) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd fd = {ready_read.get(), POLLIN, 0};
    const int ready = ::poll(&fd, 1, static_cast<int>(left.count()) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // the deadline is checked above
    char buffer[16];
    const ssize_t n = ::read(ready_read.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    said.append(buffer, static_cast<size_t>(n));
  }
  if (said != kReady) {
    process->Kill();
    std::string detail(absl::StripAsciiWhitespace(process->TakeStderr()));
    return absl::UnavailableError(absl::StrCat(
        "the bubblewrap sandbox could not be set up; the server did not start (", bwrap_path,
        timed_out ? absl::StrCat(" did not say ready within ", options.ready_timeout.count(),
                                 " ms")
                  : std::string(" failed before the preflight said ready"),
        detail.empty() ? std::string(")") : absl::StrCat(": ", detail, ")")));
  }
  instance.go.Say();
  return process;
}

}  // namespace airlock::linux_sandbox
