#include "broker/exec/shell_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "broker/after_reply.h"
#include "broker/exec/runtime_dir.h"
#include "broker/wire_error.h"
#include "platform/base/errno_status.h"
#include "platform/base/logging.h"
#include "platform/base/scoped_fd.h"
#include "platform/base/status_macros.h"
#include "platform/linux/bwrap_launcher.h"

extern char** environ;

namespace airlock::broker {
namespace {

constexpr char kDefaultPath[] = "/usr/local/bin:/usr/bin:/bin";
constexpr const char* kForwardedVariables[] = {"PATH", "HOME", "LANG", "LC_ALL", "TERM", "TZ"};

std::vector<std::string> HostEnvironment() {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) env.emplace_back(*entry);
  return env;
}

std::string LookUp(const std::vector<std::string>& env, absl::string_view name) {
  for (const std::string& entry : env) {
    if (absl::StartsWith(entry, name) && entry.size() > name.size() && entry[name.size()] == '=') {
      return entry.substr(name.size() + 1);
    }
  }
  return std::string();
}

bool IsAtOrUnder(absl::string_view path, absl::string_view dir) {
  if (dir == "/") return true;
  return path == dir ||
         (absl::StartsWith(path, dir) && path.size() > dir.size() && path[dir.size()] == '/');
}

absl::StatusOr<std::string> Canonical(const std::string& path) {
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) return LastErrnoStatus("resolve", path);
  return std::string(resolved);
}

// The sandbox's HOME, canonical (empty when unset or unresolvable).
std::string SandboxHome(const std::vector<std::pair<std::string, std::string>>& env) {
  for (const auto& [name, value] : env) {
    if (name != "HOME") continue;
    absl::StatusOr<std::string> canonical = Canonical(value);
    return canonical.ok() ? *canonical : std::string();
  }
  return std::string();
}

absl::Status Unavailable(v1::Preset preset, absl::string_view what) {
  return WithRule(WireError(v1::SANDBOX_UNAVAILABLE,
                            absl::StrCat("refused: the shell sandbox is unavailable (preset ",
                                         PresetName(preset), "): ", what)),
                  "shell-sandbox");
}

}  // namespace

std::vector<std::pair<std::string, std::string>> SandboxEnvironment(
    const std::vector<std::string>& host) {
  std::vector<std::pair<std::string, std::string>> env;
  for (const char* name : kForwardedVariables) {
    std::string value = LookUp(host, name);
    if (value.empty() && absl::string_view(name) == "PATH") value = kDefaultPath;
    if (!value.empty()) env.emplace_back(name, value);
  }
  for (const char* name : {"TMPDIR", "TMP", "TEMP"}) env.emplace_back(name, "/tmp");
  return env;
}

absl::StatusOr<std::unique_ptr<ShellRunner>> ShellRunner::Create(ShellRunnerOptions options) {
  AIRLOCK_ASSIGN_OR_RETURN(std::string runtime_dir, EnsureRuntimeDir(options.runtime_dir));
  AIRLOCK_ASSIGN_OR_RETURN(std::string output_dir, EnsureOutputDir(runtime_dir));
  const int swept = SweepStaleCallDirs(runtime_dir);
  if (swept > 0) {
    AIRLOCK_LOG(kInfo, "removed ", swept, " shell call directories left by a crash in ",
                runtime_dir);
  }
  const int outputs = SweepStaleOutputFiles(output_dir);
  if (outputs > 0) {
    AIRLOCK_LOG(kInfo, "removed ", outputs, " full-output files of brokers gone from ",
                output_dir);
  }
  return std::unique_ptr<ShellRunner>(
      new ShellRunner(std::move(options), std::move(runtime_dir), std::move(output_dir)));
}

ShellRunner::~ShellRunner() {
  for (const std::string& path : full_outputs_) ::unlink(path.c_str());
}

void ShellRunner::KeepFullOutput(const std::string& path) {
  std::vector<std::string> expired;
  {
    std::lock_guard<std::mutex> lock(full_outputs_mutex_);
    full_outputs_.push_back(path);
    while (full_outputs_.size() > kKeptFullOutputs) {
      expired.push_back(std::move(full_outputs_.front()));
      full_outputs_.pop_front();
    }
  }
  for (const std::string& old : expired) ::unlink(old.c_str());
}

absl::Status ShellRunner::CheckCommand(absl::string_view command) {
  if (command.find('\0') != absl::string_view::npos) {
    return WireError(v1::INVALID_ARGUMENT, "bash: the command contains a NUL byte");
  }
  if (command.size() > kMaxCommandBytes) {
    return WireError(v1::TOO_LARGE,
                     absl::StrCat("bash refused: the command is ", command.size(),
                                  " bytes; a command line may be at most ", kMaxCommandBytes,
                                  " bytes (the kernel's bound on one argument) — write a longer "
                                  "script to a file and run that"));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::BashResult> ShellRunner::Run(const ShellRequest& request,
                                                CancelToken* cancel) {
  if (request.argv.empty() == request.command.empty()) {
    return WireError(v1::INVALID_ARGUMENT, "bash: give exactly one of a command or an argv");
  }
  AIRLOCK_RETURN_IF_ERROR(CheckCommand(request.command));
  const bool unsandboxed =
      request.preset == v1::PRESET_DANGER_FULL_ACCESS || request.escalated;
  absl::StatusOr<TreeRunResult> run;
  if (unsandboxed) {
    run = RunOnHost(request, cancel);
  } else {
    if (request.preset != v1::PRESET_READ_ONLY && request.preset != v1::PRESET_WORKSPACE_WRITE) {
      return WireError(v1::INVALID_ARGUMENT, "bash: no preset given");
    }
    absl::StatusOr<std::string> cwd = SandboxCwd(request);
    if (!cwd.ok()) return cwd.status();
    run = RunSandboxed(request, *cwd, cancel);
  }
  if (!run.ok()) return run.status();
  if (!run->full_output_path.empty()) {
    // A cancelled call's result goes nowhere: nobody could ever name its file.
    if (run->cancelled) {
      ::unlink(run->full_output_path.c_str());
    } else {
      KeepFullOutput(run->full_output_path);
    }
  }
  if (run->cancelled) {
    return WithRule(WireError(v1::CANCELLED, absl::StrCat("bash: cancelled; the command's "
                                                          "process tree was killed (preset ",
                                                          PresetName(request.preset), ")")),
                    "cancel");
  }
  v1::BashResult result;
  result.set_exit_code(run->status.ShellCode());
  result.set_term_signal(run->status.exited ? 0 : run->status.term_signal);
  result.set_stdout(std::move(run->stdout_data));
  result.set_stderr(std::move(run->stderr_data));
  result.set_truncated(run->truncated);
  result.set_full_output(run->full_output_path);
  result.set_timed_out(run->timed_out);
  result.set_preset(request.preset);
  return result;
}

absl::StatusOr<std::string> ShellRunner::SandboxCwd(const ShellRequest& request) {
  if (request.roots.empty()) return Unavailable(request.preset, "no roots");
  // The roots were fixed at start; a root replaced since then (a link, another directory)
  // makes every call fail.
  for (const std::string& root : request.roots) {
    absl::StatusOr<std::string> now = Canonical(root);
    if (!now.ok() || *now != root) {
      return Unavailable(request.preset,
                         absl::StrCat("root ", root, " no longer resolves to itself"));
    }
  }
  const std::string requested_cwd = request.cwd.empty() ? request.roots[0] : request.cwd;
  absl::StatusOr<std::string> cwd = Canonical(requested_cwd);
  bool inside = false;
  if (cwd.ok()) {
    for (const std::string& root : request.roots) inside |= IsAtOrUnder(*cwd, root);
  }
  if (!inside) {
    return WithRule(
        WireError(v1::OUTSIDE_SANDBOX,
                  absl::StrCat("refused: bash working directory ",
                               cwd.ok() ? *cwd : requested_cwd,
                               " is not inside the roots (rule cwd-inside-roots, preset ",
                               PresetName(request.preset), ")")),
        "cwd-inside-roots");
  }
  return *cwd;
}

// The layout shared by one-shot calls and kept servers. On failure the call directory is
// removed.
absl::Status ShellRunner::LayOutSandbox(const ShellRequest& request, const std::string& cwd,
                                        const CallDir* call,
                                        linux_sandbox::ShellSandboxLayout& layout,
                                        ReadOnlyHolds& holds) {
  layout.private_tmp = call->tmp;
  layout.empty_dir = call->empty_dir;
  layout.empty_file = call->empty_file;
  layout.cwd = cwd;
  layout.env = SandboxEnvironment(HostEnvironment());
  layout.hidden.push_back({runtime_dir_, true});
  for (const std::string& path : options_.hidden_paths) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) continue;  // nothing there to read
    layout.hidden.push_back({path, S_ISDIR(st.st_mode)});
  }
  if (request.preset == v1::PRESET_WORKSPACE_WRITE) {
    layout.writable_roots = request.roots;
    absl::StatusOr<ProtectionPlan> plan =
        PlanProtection(request.roots, request.protected_paths, options_.protection_limits,
                       SandboxHome(layout.env));
    if (!plan.ok()) {
      (void)RemoveTree(call->path);
      return plan.status();
    }
    layout.self_binds = std::move(plan->self_binds);
    layout.read_only = std::move(plan->read_only);
    layout.masks = std::move(plan->masks);
    absl::StatusOr<ReadOnlyHolds> taken = ReadOnlyHolds::Take(plan->held_read_only);
    if (!taken.ok()) {
      (void)RemoveTree(call->path);
      return Unavailable(request.preset, taken.status().message());
    }
    holds = std::move(*taken);
  } else {
    layout.readonly_roots = request.roots;
  }
  return absl::OkStatus();
}

absl::StatusOr<TreeRunResult> ShellRunner::RunSandboxed(const ShellRequest& request,
                                                        const std::string& cwd,
                                                        CancelToken* cancel) {
  MaskSetupScope setup;
  absl::StatusOr<CallDir> call = MakeCallDir(runtime_dir_);
  if (!call.ok()) {
    return Unavailable(request.preset, absl::StrCat("cannot create the private temp directory: ",
                                                    call.status().message()));
  }
  linux_sandbox::SandboxRunOptions sandbox;
  linux_sandbox::ShellSandboxLayout& layout = sandbox.layout;
  auto holds = std::make_shared<ReadOnlyHolds>();
  AIRLOCK_RETURN_IF_ERROR(LayOutSandbox(request, cwd, &*call, layout, *holds));
  sandbox.command.argv = request.argv;
  sandbox.command.shell_line = request.command;
  sandbox.allow_unix_sockets = request.allow_unix_sockets;
  sandbox.capture_output = request.capture_output;
  sandbox.stream_limit = options_.stream_limit;
  sandbox.full_output_dir = output_dir_;
  sandbox.timeout = request.timeout;
  sandbox.cancel = cancel;

  // Awaited once the instance is set up, before the preflight's "go": it overlaps bwrap. The
  // masks are mounted by then.
  sandbox.before_go = [&setup, &holds, before_start = request.before_start]() -> absl::Status {
    setup.End();
    AIRLOCK_RETURN_IF_ERROR(holds->StillInPlace());
    return before_start ? before_start() : absl::OkStatus();
  };
  AcquireMasks(layout.masks);
  absl::StatusOr<TreeRunResult> result = linux_sandbox::RunInShellSandbox(sandbox);
  // The worker need not wait for the masks' release and the call directory's removal: after
  // the reply (after_reply.h). Until then a later call finds the mount points held here.
  DeferCleanup([masks = std::move(layout.masks), holds = std::move(holds),
                path = call->path]() mutable {
    ReleaseMasks(masks);
    holds.reset();
    const absl::Status removed = RemoveTree(path);
    if (!removed.ok()) {
      AIRLOCK_LOG(kWarning, "cannot remove the call directory ", path, ": ", removed.message());
    }
  });
  if (!result.ok()) {
    if (absl::IsUnavailable(result.status()) || absl::IsNotFound(result.status()) ||
        absl::IsPermissionDenied(result.status()) || absl::IsInvalidArgument(result.status())) {
      return Unavailable(request.preset, result.status().message());
    }
    return result.status();
  }
  return result;
}

void ShellRunner::DeferCleanup(std::function<void()> work) {
  auto cleanup = std::make_shared<Cleanup>();
  cleanup->work = std::move(work);
  {
    std::lock_guard<std::mutex> lock(cleanups_mutex_);
    std::erase_if(cleanups_, [](const std::weak_ptr<Cleanup>& c) { return c.expired(); });
    cleanups_.push_back(cleanup);
  }
  AfterReply::Defer([cleanup] { cleanup->Run(); });
}

void ShellRunner::RunPendingCleanups() {
  std::vector<std::shared_ptr<Cleanup>> pending;
  {
    std::lock_guard<std::mutex> lock(cleanups_mutex_);
    for (const std::weak_ptr<Cleanup>& c : cleanups_) {
      if (std::shared_ptr<Cleanup> alive = c.lock()) pending.push_back(std::move(alive));
    }
  }
  for (const std::shared_ptr<Cleanup>& cleanup : pending) cleanup->Run();
}

absl::StatusOr<TreeRunResult> ShellRunner::RunOnHost(const ShellRequest& request,
                                                     CancelToken* cancel) {
  RunPendingCleanups();
  const std::vector<std::string> env = HostEnvironment();
  TreeRunOptions run;
  if (request.argv.empty()) {
    absl::StatusOr<std::string> bash = linux_sandbox::FindSystemBash();
    if (!bash.ok()) return WireError(v1::NOT_FOUND, bash.status().message());
    run.spawn.argv = {*bash, "--noprofile", "--norc", "-c", request.command};
  } else {
    std::string path = LookUp(env, "PATH");
    AIRLOCK_ASSIGN_OR_RETURN(std::string program,
                             FindExecutable(request.argv[0], path.empty() ? kDefaultPath : path));
    run.spawn.argv = request.argv;
    run.spawn.argv[0] = program;
  }
  run.spawn.env = env;
  ScopedFd null_in;
  if (request.capture_output) {
    null_in.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!null_in) return LastErrnoStatus("open", "/dev/null");
    run.spawn.descriptors = {{0, null_in.get()}, {1, 1}, {2, 2}};
  }
  if (!request.cwd.empty()) {
    run.spawn.working_directory = request.cwd;
  } else if (!request.roots.empty()) {
    run.spawn.working_directory = request.roots[0];
  }
  run.spawn.parent_death_signal = SIGKILL;
  run.capture_output = request.capture_output;
  run.stream_limit = options_.stream_limit;
  run.full_output_dir = output_dir_;
  run.timeout = request.timeout;
  run.cancel = cancel;
  if (request.before_start) AIRLOCK_RETURN_IF_ERROR(request.before_start());
  return RunProcessTree(std::move(run));
}

void SandboxedProcess::Stop() {
  if (stopped_) return;
  stopped_ = true;
  process_->Kill();
  if (!masks_.empty()) ReleaseMasks(masks_);
  held_read_only_.reset();
  if (!call_dir_.empty()) {
    const absl::Status removed = RemoveTree(call_dir_);
    if (!removed.ok()) {
      AIRLOCK_LOG(kWarning, "cannot remove the call directory ", call_dir_, ": ",
                  removed.message());
    }
  }
}

absl::StatusOr<std::unique_ptr<SandboxedProcess>> ShellRunner::Start(
    const ServerProcessRequest& request) {
  if (request.argv.empty() || request.argv[0].empty()) {
    return WireError(v1::INVALID_ARGUMENT, "server: empty command");
  }
  for (const std::string& arg : request.argv) {
    if (arg.find('\0') != std::string::npos) {
      return WireError(v1::INVALID_ARGUMENT, "server: an argument contains a NUL byte");
    }
  }
  if (request.preset == v1::PRESET_DANGER_FULL_ACCESS) return StartOnHost(request);
  if (request.preset != v1::PRESET_READ_ONLY && request.preset != v1::PRESET_WORKSPACE_WRITE) {
    return WireError(v1::INVALID_ARGUMENT, "server: no preset given");
  }
  ShellRequest shell;
  shell.argv = request.argv;
  shell.cwd = request.cwd;
  shell.preset = request.preset;
  shell.roots = request.roots;
  shell.protected_paths = request.protected_paths;
  shell.allow_unix_sockets = request.allow_unix_sockets;
  AIRLOCK_ASSIGN_OR_RETURN(const std::string cwd, SandboxCwd(shell));
  absl::StatusOr<CallDir> call = MakeCallDir(runtime_dir_);
  if (!call.ok()) {
    return Unavailable(request.preset, absl::StrCat("cannot create the private temp directory: ",
                                                    call.status().message()));
  }
  linux_sandbox::SandboxStartOptions sandbox;
  auto holds = std::make_unique<ReadOnlyHolds>();
  AIRLOCK_RETURN_IF_ERROR(LayOutSandbox(shell, cwd, &*call, sandbox.layout, *holds));
  sandbox.argv = request.argv;
  sandbox.allow_unix_sockets = request.allow_unix_sockets;
  sandbox.ready_timeout = request.start_timeout;

  // The masks' mount points stay on the host as long as the server runs.
  AcquireMasks(sandbox.layout.masks);
  absl::StatusOr<std::unique_ptr<KeptProcess>> process =
      linux_sandbox::StartInShellSandbox(sandbox);
  if (!process.ok()) {
    ReleaseMasks(sandbox.layout.masks);
    const absl::Status removed = RemoveTree(call->path);
    if (!removed.ok()) {
      AIRLOCK_LOG(kWarning, "cannot remove the call directory ", call->path, ": ",
                  removed.message());
    }
    return Unavailable(request.preset, process.status().message());
  }
  return std::unique_ptr<SandboxedProcess>(new SandboxedProcess(
      std::move(*process), request.preset, call->path, std::move(sandbox.layout.masks),
      std::move(holds)));
}

absl::StatusOr<std::unique_ptr<SandboxedProcess>> ShellRunner::StartOnHost(
    const ServerProcessRequest& request) {
  RunPendingCleanups();
  const std::vector<std::string> env = HostEnvironment();
  KeptProcess::Options kept;
  std::string path = LookUp(env, "PATH");
  AIRLOCK_ASSIGN_OR_RETURN(std::string program,
                           FindExecutable(request.argv[0], path.empty() ? kDefaultPath : path));
  kept.spawn.argv = request.argv;
  kept.spawn.argv[0] = program;
  kept.spawn.env = env;
  if (!request.cwd.empty()) {
    kept.spawn.working_directory = request.cwd;
  } else if (!request.roots.empty()) {
    kept.spawn.working_directory = request.roots[0];
  }
  AIRLOCK_ASSIGN_OR_RETURN(std::unique_ptr<KeptProcess> process,
                           KeptProcess::Start(std::move(kept)));
  return std::unique_ptr<SandboxedProcess>(
      new SandboxedProcess(std::move(process), request.preset, std::string(), {}, nullptr));
}

}  // namespace airlock::broker
