#include "broker/worker_launcher.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <mutex>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "absl/strings/str_join.h"
#include "platform/base/errno_status.h"
#include "platform/base/fd_io.h"
#include "platform/base/scoped_fd.h"
#include "platform/base/status_macros.h"
#include "platform/linux/bwrap_command.h"
#include "platform/linux/landlock.h"
#include "platform/linux/worker_seccomp.h"
#include "platform/process/spawn.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AIRLOCK_HAS_ASAN 1
#endif
#endif

namespace airlock::broker {
namespace {

constexpr char kDefaultPath[] = "/usr/local/bin:/usr/bin:/bin";
constexpr const char* kBwrapLocations[] = {"/usr/bin/bwrap", "/bin/bwrap"};
// The descriptors the worker's first process receives besides 0, 1, 2 and the connector.
constexpr int kStatusFd = 4;
constexpr int kBwrapArgsFd = 5;
// Inside a hidden directory that contains the workspace, only these are masked.
constexpr const char* kSecretChildren[] = {"audit.key", "audit", "sessions", "run"};

bool IsWithheldVariable(absl::string_view entry) {
  // Broker secrets and broker-owned variables never reach the worker from the environment.
  for (absl::string_view name :
       {"AIRLOCK_AUDIT_KEY=", "AIRLOCK_FD=", "AIRLOCK_SESSION=", "TMPDIR=", "TMP=", "TEMP="}) {
    if (absl::StartsWith(entry, name)) return true;
  }
  return false;
}

std::string Lookup(const std::vector<std::string>& environment, absl::string_view name) {
  const std::string prefix = absl::StrCat(name, "=");
  for (const std::string& entry : environment) {
    if (absl::StartsWith(entry, prefix)) return entry.substr(prefix.size());
  }
  return "";
}

std::string PathOf(const std::vector<std::string>& environment) {
  std::string path = Lookup(environment, "PATH");
  return path.empty() ? kDefaultPath : path;
}

bool Contains(const std::vector<std::string>& list, absl::string_view value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

bool IsAncestorOrSelf(absl::string_view ancestor, absl::string_view path) {
  if (ancestor == "/") return true;
  return path == ancestor ||
         (absl::StartsWith(path, ancestor) && path.size() > ancestor.size() &&
          path[ancestor.size()] == '/');
}

absl::StatusOr<std::string> FindBwrap() {
  for (const char* candidate : kBwrapLocations) {
    if (::access(candidate, X_OK) == 0) return std::string(candidate);
  }
  return absl::NotFoundError("bubblewrap is not installed (/usr/bin/bwrap or /bin/bwrap)");
}

// Can this process create a user namespace? bwrap needs one. The child only calls unshare
// and _exit, both async-signal-safe.
absl::Status ProbeUserNamespaces() {
  const pid_t pid = ::fork();
  if (pid < 0) return LastErrnoStatus("fork (user namespace probe)");
  if (pid == 0) _exit(::unshare(CLONE_NEWUSER) == 0 ? 0 : (errno & 0x7f));
  AIRLOCK_ASSIGN_OR_RETURN(ExitStatus status, WaitForExit(pid));
  if (status.exited && status.code == 0) return absl::OkStatus();
  if (status.exited) {
    return ErrnoToStatus(status.code,
                         "user namespaces are unavailable to this user (unshare(CLONE_NEWUSER); "
                         "see kernel.unprivileged_userns_clone / user.max_user_namespaces)");
  }
  return absl::InternalError("the user namespace probe was killed");
}

absl::StatusOr<std::string> ProbeMountLayer() {
  AIRLOCK_ASSIGN_OR_RETURN(std::string bwrap, FindBwrap());
  AIRLOCK_RETURN_IF_ERROR(ProbeUserNamespaces());
  return bwrap;
}

absl::Status ValidateLayerNames(const std::vector<std::string>& names, absl::string_view flag) {
  for (const std::string& name : names) {
    if (name != kLayerMount && name != kLayerLandlock && name != kLayerSeccomp) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": unknown worker layer '", name, "' (mount, landlock, seccomp)"));
    }
  }
  return absl::OkStatus();
}

// Removes a host scratch tree without following links (only used when the mount layer, which
// provides an in-memory scratch, is off).
void RemoveTreeAt(int parent_fd, const char* name) {
  const int fd = ::openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    DIR* dir = ::fdopendir(fd);
    if (dir != nullptr) {
      while (struct dirent* entry = ::readdir(dir)) {
        if (std::string_view(entry->d_name) == "." || std::string_view(entry->d_name) == "..") {
          continue;
        }
        if (::unlinkat(fd, entry->d_name, 0) != 0) RemoveTreeAt(fd, entry->d_name);
      }
      ::closedir(dir);
    } else {
      ::close(fd);
    }
  }
  ::unlinkat(parent_fd, name, AT_REMOVEDIR);
}

std::mutex host_scratch_mutex;
std::vector<std::string>* host_scratch_dirs = nullptr;

void RemoveHostScratchDirs() {
  std::lock_guard<std::mutex> lock(host_scratch_mutex);
  if (host_scratch_dirs == nullptr) return;
  for (const std::string& dir : *host_scratch_dirs) RemoveTreeAt(AT_FDCWD, dir.c_str());
  host_scratch_dirs->clear();
}

absl::StatusOr<std::string> MakeHostScratch(const std::vector<std::string>& environment) {
  std::string base = Lookup(environment, "TMPDIR");
  if (base.empty() || base[0] != '/') base = "/tmp";
  std::string pattern = absl::StrCat(base, "/airlock-worker-XXXXXX");
  if (::mkdtemp(pattern.data()) == nullptr) return LastErrnoStatus("mkdtemp", pattern);
  std::lock_guard<std::mutex> lock(host_scratch_mutex);
  if (host_scratch_dirs == nullptr) {
    host_scratch_dirs = new std::vector<std::string>();
    std::atexit(RemoveHostScratchDirs);
  }
  host_scratch_dirs->push_back(pattern);
  return pattern;
}

struct HiddenPath {
  std::string path;
  bool directory = false;
};

// The broker state to mask in the worker's view, canonical and existing.
std::vector<HiddenPath> HiddenPaths(const WorkerLaunchOptions& options,
                                    const std::vector<std::string>& must_stay_visible) {
  std::vector<std::string> wanted = options.hidden_paths;
  std::string home = Lookup(options.environment, "AIRLOCK_HOME");
  if (home.empty()) {
    const std::string user_home = Lookup(options.environment, "HOME");
    if (!user_home.empty()) home = absl::StrCat(user_home, "/.airlock");
  }
  if (!home.empty()) wanted.push_back(home);
  // The broker's runtime directory, where broker/exec/runtime_dir.h puts it by default.
  const std::string runtime = Lookup(options.environment, "XDG_RUNTIME_DIR");
  if (!runtime.empty() && runtime[0] == '/') {
    wanted.push_back(absl::StrCat(runtime, "/airlock"));
  } else {
    wanted.push_back(absl::StrCat("/tmp/airlock-", ::geteuid()));
  }

  std::vector<HiddenPath> hidden;
  auto add = [&hidden](const std::string& path) {
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved) == nullptr) return;  // absent: the view is read-only
    struct stat info;
    if (::stat(resolved, &info) != 0) return;
    for (const HiddenPath& existing : hidden) {
      if (existing.path == resolved) return;
    }
    hidden.push_back({resolved, S_ISDIR(info.st_mode)});
  };
  for (const std::string& path : wanted) {
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved) == nullptr) continue;
    bool covers_needed = false;
    for (const std::string& needed : must_stay_visible) {
      covers_needed |= IsAncestorOrSelf(resolved, needed);
    }
    if (!covers_needed) {
      add(resolved);
      continue;
    }
    // The directory holds the workspace or a program the worker needs: mask its secrets only.
    for (const char* child : kSecretChildren) add(absl::StrCat(resolved, "/", child));
  }
  // A path inside a masked directory is already hidden, and its mount point would not exist
  // inside the empty tmpfs: drop it.
  std::vector<HiddenPath> outermost;
  for (const HiddenPath& candidate : hidden) {
    bool covered = false;
    for (const HiddenPath& other : hidden) {
      covered |= other.directory && other.path != candidate.path &&
                 IsAncestorOrSelf(other.path, candidate.path);
    }
    if (!covered) outermost.push_back(candidate);
  }
  return outermost;
}

struct LayerPlan {
  bool mount = true;
  bool landlock = true;
  bool seccomp = true;
  std::string bwrap;
  std::vector<std::string> accepted_missing;
  std::vector<std::string> disabled_for_testing;
};

absl::StatusOr<LayerPlan> PlanLayers(const WorkerConfinementOptions& options) {
  AIRLOCK_RETURN_IF_ERROR(ValidateLayerNames(options.accept_weaker, "--accept-weaker-worker"));
  AIRLOCK_RETURN_IF_ERROR(
      ValidateLayerNames(options.test_disable, "--test-disable-worker-layer"));
  LayerPlan plan;
  for (const std::string& name : options.test_disable) {
    if (!Contains(plan.disabled_for_testing, name)) plan.disabled_for_testing.push_back(name);
  }
  plan.mount = !Contains(plan.disabled_for_testing, kLayerMount);
  plan.landlock = !Contains(plan.disabled_for_testing, kLayerLandlock);
  plan.seccomp = !Contains(plan.disabled_for_testing, kLayerSeccomp);

  auto unavailable = [&](const char* layer, bool* enabled,
                         const absl::Status& why) -> absl::Status {
    if (why.ok()) return absl::OkStatus();
    if (Contains(options.accept_weaker, layer)) {
      *enabled = false;
      plan.accepted_missing.push_back(layer);
      std::cerr << "airlock: warning: worker layer '" << layer
                << "' is unavailable and was accepted as missing (--accept-weaker-worker): "
                << why.message() << "\n";
      return absl::OkStatus();
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "worker layer '", layer, "' cannot be applied: ", why.message(),
        "; refusing to start the worker (to run without it, accept that explicitly with "
        "--accept-weaker-worker ", layer, ")"));
  };
  if (plan.mount) {
    absl::StatusOr<std::string> bwrap = ProbeMountLayer();
    if (bwrap.ok()) plan.bwrap = *bwrap;
    AIRLOCK_RETURN_IF_ERROR(unavailable(kLayerMount, &plan.mount, bwrap.status()));
  }
  if (plan.landlock) {
    AIRLOCK_RETURN_IF_ERROR(unavailable(kLayerLandlock, &plan.landlock,
                                        linux_sandbox::ProbeLandlockAbi().status()));
  }
  if (plan.seccomp) {
    AIRLOCK_RETURN_IF_ERROR(
        unavailable(kLayerSeccomp, &plan.seccomp, linux_sandbox::ProbeSeccomp()));
  }
  for (const std::string& layer : plan.disabled_for_testing) {
    std::cerr << "airlock: WARNING: worker layer '" << layer
              << "' is DISABLED by --test-disable-worker-layer. This is for testing only: the "
                 "worker is less confined than documented"
              << (layer == kLayerMount ? " (the audit key and the broker are visible to it)"
                                       : "")
              << ".\n";
  }
  return plan;
}

absl::StatusOr<std::string> SelfExecutable() {
  char path[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n < 0) return LastErrnoStatus("readlink", "/proc/self/exe");
  path[n] = '\0';
  if (absl::EndsWith(path, " (deleted)")) {
    return absl::FailedPreconditionError(
        absl::StrCat("the airlock binary was replaced or deleted: ", path));
  }
  return std::string(path);
}

// A sealed-off in-memory file holding `contents`, positioned at its start.
absl::StatusOr<ScopedFd> MemoryFile(const char* name, absl::string_view contents) {
  ScopedFd fd(::memfd_create(name, MFD_CLOEXEC));
  if (!fd.valid()) return LastErrnoStatus("memfd_create", name);
  AIRLOCK_RETURN_IF_ERROR(WriteFully(fd.get(), contents, name));
  if (::lseek(fd.get(), 0, SEEK_SET) != 0) return LastErrnoStatus("lseek", name);
  return fd;
}

// The status line, or nothing once `deadline` passes (`timed_out` set).
std::string ReadStatusLine(int fd, std::chrono::steady_clock::time_point deadline,
                           bool* timed_out) {
  std::string line;
  char buffer[512];
  *timed_out = false;
  while (line.size() < 4096) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      *timed_out = true;
      return std::string();
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;  // the deadline check above ends the wait
    if (ready < 0) break;
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    line.append(buffer, static_cast<size_t>(n));
    const size_t newline = line.find('\n');
    if (newline != std::string::npos) {
      line.resize(newline);
      break;
    }
  }
  return line;
}

bool ValidEnvName(absl::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

absl::StatusOr<linux_sandbox::BwrapArgv> WorkerBwrapArgv(
    const WorkerLaunchOptions& options, const std::vector<std::string>& environment,
    const std::vector<HiddenPath>& hidden, std::vector<std::string> confine_command) {
  linux_sandbox::BwrapCommand bwrap;
  bwrap.UnshareUser().UnsharePid().UnshareIpc().UnshareUts().UnshareCgroupTry();
  if (options.isolate_network) bwrap.UnshareNet();
  bwrap.DisableUserns().NewSession().DieWithParent().DropAllCapabilities();
  bwrap.RoBind("/", "/").Dev("/dev").Proc("/proc").Tmpfs(kWorkerScratchDir).RemountRo("/dev");
  for (const HiddenPath& path : hidden) {
    if (path.directory) {
      bwrap.Tmpfs(path.path).RemountRo(path.path);
    } else {
      bwrap.RoBind("/dev/null", path.path);
    }
  }
  if (!options.working_directory.empty()) bwrap.Chdir(options.working_directory);
  for (const std::string& entry : environment) {
    const size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    const absl::string_view name(entry.data(), eq);
    if (!ValidEnvName(name)) continue;  // e.g. exported shell functions: not passed on
    bwrap.SetEnv(name, absl::string_view(entry).substr(eq + 1));
  }
  bwrap.Command(std::move(confine_command));
  return bwrap.Build();
}

}  // namespace

void AddWorkerConfinementOptions(CLI::App* command, WorkerConfinementOptions* options) {
  command->add_option("--accept-weaker-worker", options->accept_weaker,
                      "Run the worker without LAYER (mount, landlock, seccomp) when this "
                      "machine cannot provide it (repeatable; default: refuse to start)")
      ->allow_extra_args(false)  // one value per occurrence: `--` stays the command's
      ->check(CLI::IsMember({kLayerMount, kLayerLandlock, kLayerSeccomp}));
  command->add_option("--test-disable-worker-layer", options->test_disable)
      ->allow_extra_args(false)
      ->check(CLI::IsMember({kLayerMount, kLayerLandlock, kLayerSeccomp}))
      ->group("");  // hidden: tests only
}

std::vector<std::string> WorkerEnvironment(const WorkerLaunchOptions& options) {
  std::vector<std::string> env;
  for (const std::string& entry : options.environment) {
    if (!IsWithheldVariable(entry)) env.push_back(entry);
  }
  env.push_back(absl::StrCat("AIRLOCK_FD=", kWorkerConnectorFd));
  env.push_back(absl::StrCat("AIRLOCK_SESSION=", options.session_id));
  return env;
}

std::vector<LayerReport> ProbeWorkerLayers() {
  std::vector<LayerReport> reports;
  absl::StatusOr<std::string> bwrap = ProbeMountLayer();
  reports.push_back({kLayerMount, bwrap.ok(),
                     bwrap.ok() ? absl::StrCat("bubblewrap at ", *bwrap,
                                               "; user namespaces work; scratch at ",
                                               kWorkerScratchDir)
                                : std::string(bwrap.status().message())});
  absl::StatusOr<int> abi = linux_sandbox::ProbeLandlockAbi();
  reports.push_back(
      {kLayerLandlock, abi.ok(),
       abi.ok() ? absl::StrCat("Landlock ABI ", *abi,
                               *abi >= 6 ? " (signal and abstract-socket scoping)" : "",
                               *abi > linux_sandbox::kLandlockNewestKnownAbi
                                   ? absl::StrCat(" (used as ABI ",
                                                  linux_sandbox::kLandlockNewestKnownAbi, ")")
                                   : "")
                : std::string(abi.status().message())});
  absl::Status seccomp = linux_sandbox::ProbeSeccomp();
  reports.push_back({kLayerSeccomp, seccomp.ok(),
                     seccomp.ok() ? "seccomp filters (libseccomp) with errno actions"
                                  : std::string(seccomp.message())});
  return reports;
}

absl::StatusOr<std::string> ProbeWorkerLaunch() {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    return LastErrnoStatus("socketpair");
  }
  ScopedFd broker_end(pair[0]);
  ScopedFd worker_end(pair[1]);
  WorkerLaunchOptions options;
  options.argv = {"true"};
  options.environment = {absl::StrCat("PATH=", kDefaultPath)};
  options.connector_fd = worker_end.get();
  options.session_id = "doctor";
  options.working_directory = "/";
  AIRLOCK_ASSIGN_OR_RETURN(WorkerLaunch launch, LaunchConfinedWorker(options));
  worker_end.reset();
  AIRLOCK_ASSIGN_OR_RETURN(ExitStatus status, WaitForExit(launch.pid));
  if (status.ShellCode() != 0) {
    return absl::UnavailableError(
        absl::StrCat("a confined `true` exited with ", status.ShellCode()));
  }
  return launch.summary;
}

absl::StatusOr<WorkerLaunch> LaunchConfinedWorker(const WorkerLaunchOptions& options) {
  if (options.argv.empty()) return absl::InvalidArgumentError("no agent command given");
  if (options.connector_fd < 0) return absl::InvalidArgumentError("no connector descriptor");
  AIRLOCK_ASSIGN_OR_RETURN(LayerPlan plan, PlanLayers(options.confinement));
  AIRLOCK_ASSIGN_OR_RETURN(std::string program,
                           FindExecutable(options.argv[0], PathOf(options.environment)));
  std::string airlock = options.airlock_binary;
  if (airlock.empty()) {
    AIRLOCK_ASSIGN_OR_RETURN(airlock, SelfExecutable());
  }

  std::string scratch = kWorkerScratchDir;
  if (!plan.mount) {
    AIRLOCK_ASSIGN_OR_RETURN(scratch, MakeHostScratch(options.environment));
  }
  std::vector<std::string> environment = WorkerEnvironment(options);
#if defined(__SANITIZE_ADDRESS__) || defined(AIRLOCK_HAS_ASAN)
  // Sanitizer builds only: LeakSanitizer stops threads with ptrace, which the worker's
  // seccomp filter forbids, so an instrumented `airlock tool` would fail at exit.
  bool merged = false;
  for (std::string& entry : environment) {
    if (absl::StartsWith(entry, "ASAN_OPTIONS=")) {
      absl::StrAppend(&entry, ":detect_leaks=0");
      merged = true;
    }
  }
  if (!merged) environment.push_back("ASAN_OPTIONS=detect_leaks=0");
#endif
  for (const char* name : {"TMPDIR=", "TMP=", "TEMP="}) {
    environment.push_back(absl::StrCat(name, scratch));
  }

  std::vector<std::string> confine = {airlock, "__confine", "--status-fd",
                                      absl::StrCat(kStatusFd), "--scratch", scratch};
  if (plan.landlock) confine.push_back("--landlock");
  if (plan.seccomp) confine.push_back("--seccomp");
  if (plan.mount) confine.push_back("--private-dev");
  if (options.confinement.allow_unix_sockets) confine.push_back("--allow-unix-sockets");
  confine.push_back("--");
  confine.push_back(program);
  confine.insert(confine.end(), options.argv.begin() + 1, options.argv.end());

  int status_pipe[2];
  if (::pipe2(status_pipe, O_CLOEXEC) != 0) return LastErrnoStatus("pipe2");
  ScopedFd status_read(status_pipe[0]);
  ScopedFd status_write(status_pipe[1]);

  SpawnOptions spawn;
  spawn.new_session = true;
  spawn.parent_death_signal = SIGKILL;
  spawn.no_new_privileges = true;
  spawn.descriptors = {{0, 0},
                       {1, 1},
                       {2, 2},
                       {kWorkerConnectorFd, options.connector_fd},
                       {kStatusFd, status_write.get()}};
  ScopedFd bwrap_args;
  if (plan.mount) {
    const std::vector<HiddenPath> hidden =
        HiddenPaths(options, {options.working_directory, airlock, program});
    AIRLOCK_ASSIGN_OR_RETURN(linux_sandbox::BwrapArgv argv,
                             WorkerBwrapArgv(options, environment, hidden, std::move(confine)));
    AIRLOCK_ASSIGN_OR_RETURN(bwrap_args,
                             MemoryFile("airlock-worker-bwrap-args", argv.ArgsFileContents()));
    spawn.argv = argv.LauncherArgv(plan.bwrap, kBwrapArgsFd);
    spawn.env = {};  // bwrap itself runs with an empty environment
    spawn.descriptors.push_back({kBwrapArgsFd, bwrap_args.get()});
  } else {
    spawn.argv = std::move(confine);
    spawn.env = environment;
    if (!options.working_directory.empty()) spawn.working_directory = options.working_directory;
  }
  AIRLOCK_ASSIGN_OR_RETURN(pid_t pid, Spawn(spawn));
  status_write.reset();
  bwrap_args.reset();

  // `__confine` writes one line before it execs. bwrap's own processes keep their copies of
  // the descriptor open, so read up to the newline rather than to EOF; EOF without a line
  // means bwrap or `__confine` died first.
  bool timed_out = false;
  std::string line = ReadStatusLine(
      status_read.get(), std::chrono::steady_clock::now() + options.status_timeout, &timed_out);
  if (timed_out) {
    // Stuck before the agent could start: the launch is refused and its tree killed.
    ::kill(pid, SIGKILL);
    (void)WaitForExit(pid);
    return absl::DeadlineExceededError(absl::StrCat(
        "the worker's confinement could not be applied: no report from the confinement within ",
        absl::FormatDuration(absl::FromChrono(options.status_timeout)),
        "; the worker was killed"));
  }
  if (!absl::StartsWith(line, "ok ")) {
    absl::StatusOr<ExitStatus> exit = WaitForExit(pid);
    std::string why;
    if (absl::StartsWith(line, "error ")) {
      why = line.substr(6);
    } else if (plan.mount) {
      why = absl::StrCat("the mount view (bwrap) could not be set up (bwrap exited with ",
                         exit.ok() ? exit->ShellCode() : -1, "; its message is above)");
    } else {
      why = absl::StrCat("`airlock __confine` did not start (exit ",
                         exit.ok() ? exit->ShellCode() : -1, ")");
    }
    return absl::FailedPreconditionError(
        absl::StrCat("the worker's confinement could not be applied: ", why));
  }

  WorkerLaunch launch;
  launch.pid = pid;
  if (plan.mount) launch.active.push_back(kLayerMount);
  if (plan.landlock) launch.active.push_back(kLayerLandlock);
  if (plan.seccomp) launch.active.push_back(kLayerSeccomp);
  launch.accepted_missing = plan.accepted_missing;
  launch.disabled_for_testing = plan.disabled_for_testing;
  launch.summary = absl::StrCat(plan.mount ? "mount view (bwrap), " : "", line.substr(3));
  if (options.isolate_network) absl::StrAppend(&launch.summary, ", no network");
  return launch;
}

std::string DescribeWorkerLaunch(const WorkerLaunch& launch) {
  std::string text = absl::StrCat("worker confined: ", launch.summary);
  if (!launch.accepted_missing.empty()) {
    absl::StrAppend(&text, " (accepted missing: ", absl::StrJoin(launch.accepted_missing, ", "),
                    ")");
  }
  if (!launch.disabled_for_testing.empty()) {
    absl::StrAppend(&text, " (DISABLED for testing: ",
                    absl::StrJoin(launch.disabled_for_testing, ", "), ")");
  }
  return text;
}

absl::StatusOr<pid_t> LaunchWorker(const WorkerLaunchOptions& options) {
  AIRLOCK_ASSIGN_OR_RETURN(WorkerLaunch launch, LaunchConfinedWorker(options));
  std::cerr << "airlock: " << DescribeWorkerLaunch(launch) << "\n";
  return launch.pid;
}

}  // namespace airlock::broker
