// The end-to-end benchmark's worker-side driver. bench/run starts it in each mode and reads
// one JSON object of timings from its stdout.
//   brokered-write N DIR   N durable 4 KiB writes through the broker (inside `airlock run`)
//   direct-write N DIR     the same durable atomic replacement done in this process
//   direct-write-intent N DIR LOGDIR
//                          the same, plus what SPEC §9 asks of any broker: a signed audit
//                          intent appended to a log in LOGDIR and durable before the rename
//                          (its sync overlapping the temp file's, as the broker does)
//   brokered-bash N        N sandboxed `true` commands through the broker
//   bare-bwrap N DIR       N bare bwrap launches of `true` with the shell sandbox's namespaces
//   load WORKERS N DIR     WORKERS threads, each its own channel, N mixed read/write/edit calls
//   exec-breakdown N DIR   where exec_true's time goes: bare bwrap, then airlock's launcher
//                          (preflight, seccomp, private /tmp), then its protection masks, then
//                          the whole shell runner, alternating, N each (one JSON object)
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "broker/audit/audit_key.h"
#include "broker/audit/audit_log.h"
#include "broker/exec/protection_plan.h"
#include "broker/exec/runtime_dir.h"
#include "broker/exec/shell_runner.h"
#include "broker/fs/atomic_replace.h"
#include "platform/linux/bwrap_launcher.h"
#include "platform/base/scoped_fd.h"
#include "worker/broker_client.h"

namespace airlock::bench {
namespace {

using Clock = std::chrono::steady_clock;

const std::string& Payload() {
  static const std::string* const kPayload = new std::string(4096, 'b');
  return *kPayload;
}

double Micros(Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

void PrintSamples(const std::vector<double>& samples) {
  std::vector<std::string> parts;
  parts.reserve(samples.size());
  for (double s : samples) parts.push_back(absl::StrCat(static_cast<int64_t>(s)));
  std::printf("{\"samples_us\":[%s]}\n", absl::StrJoin(parts, ",").c_str());
}

int Fail(absl::string_view what) {
  std::fprintf(stderr, "bench_client: %s\n", std::string(what).c_str());
  return 1;
}

// The identity of entry `name` of `dir_fd`, as the broker checks it before replacing it.
broker::ExpectedTarget CurrentTarget(int dir_fd, const std::string& name) {
  struct stat st;
  broker::ExpectedTarget expected;
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    expected = {true, static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
  }
  return expected;
}

int BrokeredWrite(int n, const std::string& dir) {
  auto client = worker::BrokerClient::ConnectFromEnvironment("bench");
  if (!client.ok()) return Fail(client.status().message());
  std::vector<double> samples;
  for (int i = 0; i < n; ++i) {
    v1::Request request;
    request.mutable_write()->set_path(absl::StrCat(dir, "/bench-", i % 8, ".txt"));
    request.mutable_write()->set_content(Payload());
    const auto start = Clock::now();
    auto response = (*client)->Call(request);
    samples.push_back(Micros(Clock::now() - start));
    if (!response.ok()) return Fail(response.status().message());
    if (response->has_error()) return Fail(response->error().message());
  }
  PrintSamples(samples);
  return 0;
}

int DirectWrite(int n, const std::string& dir) {
  ScopedFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd) return Fail("cannot open the directory");
  std::vector<double> samples;
  for (int i = 0; i < n; ++i) {
    const std::string name = absl::StrCat("bench-", i % 8, ".txt");
    const auto start = Clock::now();
    // The same identity check the broker makes, then the same replacement.
    const broker::ExpectedTarget expected = CurrentTarget(dir_fd.get(), name);
    absl::Status status = broker::ReplaceAtomically(dir_fd.get(), name, Payload(), expected,
                                                    broker::ReplaceOptions{}, name);
    samples.push_back(Micros(Clock::now() - start));
    if (!status.ok()) return Fail(status.message());
  }
  PrintSamples(samples);
  return 0;
}

int DirectWriteWithIntent(int n, const std::string& dir, const std::string& log_dir) {
  ScopedFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd) return Fail("cannot open the directory");
  broker::audit::AuditKeyOptions key_options;
  key_options.env_key = std::string(64, 'a');
  key_options.airlock_home = log_dir;
  key_options.create_default = false;
  auto key = broker::audit::LoadOrCreateAuditKey(key_options);
  if (!key.ok()) return Fail(key.status().message());
  auto log = broker::audit::AuditLog::Open(absl::StrCat(log_dir, "/intents.jsonl"), *key,
                                           "bench");
  if (!log.ok()) return Fail(log.status().message());
  std::vector<double> samples;
  for (int i = 0; i < n; ++i) {
    const std::string name = absl::StrCat("bench-", i % 8, ".txt");
    const auto start = Clock::now();
    const broker::ExpectedTarget expected = CurrentTarget(dir_fd.get(), name);
    // An intent like the broker's (target, digests, rule), its sync started at once.
    broker::audit::AuditRecord intent;
    intent.event = broker::audit::AuditEvent::kDecision;
    intent.request_id = static_cast<uint64_t>(i);
    intent.tool = "write";
    intent.target = absl::StrCat(dir, "/", name);
    intent.content_sha256 = std::string(64, 'c');
    intent.previous_sha256 = expected.exists ? std::string(64, 'd') : "absent";
    intent.decision = "allow";
    intent.rule = "preset:workspace-write";
    intent.preset = "workspace-write";
    intent.detail = "intent: replace atomically";
    auto pending = (*log)->AppendPending(intent);
    if (!pending.ok()) return Fail(pending.status().message());
    broker::ReplaceOptions options;
    broker::audit::AuditLog* const raw_log = log->get();
    const broker::audit::PendingRecord record = *pending;
    options.before_rename = [raw_log, record] { return raw_log->AwaitDurable(record); };
    absl::Status status = broker::ReplaceAtomically(dir_fd.get(), name, Payload(), expected,
                                                    options, name);
    samples.push_back(Micros(Clock::now() - start));
    if (!status.ok()) return Fail(status.message());
  }
  PrintSamples(samples);
  return 0;
}

int BrokeredBash(int n) {
  auto client = worker::BrokerClient::ConnectFromEnvironment("bench");
  if (!client.ok()) return Fail(client.status().message());
  std::vector<double> samples;
  for (int i = 0; i < n; ++i) {
    v1::Request request;
    request.mutable_bash()->set_command("true");
    const auto start = Clock::now();
    auto response = (*client)->Call(request);
    samples.push_back(Micros(Clock::now() - start));
    if (!response.ok()) return Fail(response.status().message());
    if (response->has_error()) return Fail(response->error().message());
  }
  PrintSamples(samples);
  return 0;
}

// Sources for bare bwrap's masks: an empty directory and an empty file, made once.
struct MaskSources {
  std::string dir;
  std::string file;
};
const MaskSources& BareMaskSources() {
  static const MaskSources* const sources = [] {
    auto* made = new MaskSources;
    std::string base = "/dev/shm/airlock-bench-XXXXXX";
    if (::mkdtemp(base.data()) == nullptr) return made;
    static std::string* const remove_at_exit = new std::string(base);
    std::atexit([] { (void)broker::RemoveTree(*remove_at_exit); });
    made->dir = base + "/empty-dir";
    made->file = base + "/empty-file";
    ::mkdir(made->dir.c_str(), 0500);
    ScopedFd fd(::open(made->file.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0400));
    return made;
  }();
  return *sources;
}

// The masks airlock's protection plan puts into DIR.
std::vector<linux_sandbox::CoveredPath> PlannedMasks(const std::string& dir) {
  auto plan = broker::PlanProtection({dir}, {});
  return plan.ok() ? plan->masks : std::vector<linux_sandbox::CoveredPath>{};
}

// One bare bwrap launch (the exec_true baseline), in microseconds; <0 on failure. With
// `masks`, the same empty read-only mounts airlock's plan makes (bwrap creates the mount
// points; they are removed after the timing, which favours the baseline). `program` is
// /bin/true, or bash running `true` when `via_bash`.
double BareBwrapOnce(const std::string& dir,
                     const std::vector<linux_sandbox::CoveredPath>& masks = {},
                     bool via_bash = false) {
  std::vector<std::string> args = {
      "/usr/bin/bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
      "--tmpfs", "/tmp", "--bind", dir, dir, "--unshare-user", "--unshare-pid",
      "--unshare-net", "--unshare-ipc", "--unshare-uts", "--new-session", "--die-with-parent",
      "--disable-userns", "--cap-drop", "ALL", "--clearenv", "--setenv", "PATH", "/usr/bin:/bin"};
  for (const auto& mask : masks) {
    args.insert(args.end(), {"--ro-bind", mask.directory ? BareMaskSources().dir
                                                         : BareMaskSources().file,
                             mask.path});
  }
  args.push_back("--");
  if (via_bash) {
    args.insert(args.end(), {"/bin/bash", "--noprofile", "--norc", "-c", "true"});
  } else {
    args.push_back("/bin/true");
  }
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  char* envp[] = {nullptr};
  const auto start = Clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execve(argv[0], argv.data(), envp);
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  const double us = Micros(Clock::now() - start);
  for (const auto& mask : masks) {
    if (mask.directory) {
      ::rmdir(mask.path.c_str());
    } else {
      ::unlink(mask.path.c_str());
    }
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? us : -1;
}

// The baseline of exec_true: a bare bwrap launch of `true` with the namespaces and mounts of
// the shell sandbox (workspace-write: root read-only, fresh /dev and /proc, a private /tmp,
// the workspace writable), without airlock's preflight, temp directory, masks or audit.
int BareBwrap(int n, const std::string& dir) {
  std::vector<double> samples;
  for (int i = 0; i < n; ++i) {
    samples.push_back(BareBwrapOnce(dir));
    if (samples.back() < 0) return Fail("bare bwrap failed");
  }
  PrintSamples(samples);
  return 0;
}

// The same with the masks of airlock's protection plan for DIR: the same mounts as airlock's
// sandbox (SPEC §11 "the same namespaces and mounts"); with `via_bash`, running `true` the way
// the shell tool runs a command line, in bash.
int BareBwrapMasked(int n, const std::string& dir, bool via_bash) {
  const std::vector<linux_sandbox::CoveredPath> masks = PlannedMasks(dir);
  std::vector<double> samples;
  for (int i = 0; i < n; ++i) {
    samples.push_back(BareBwrapOnce(dir, masks, via_bash));
    if (samples.back() < 0) return Fail("bare bwrap with masks failed");
  }
  PrintSamples(samples);
  return 0;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Where exec_true's time goes (medians, microseconds), alternating:
//   bare             bare bwrap + /bin/true (the exec_true baseline)
//   bare_bash        bare bwrap + bash --noprofile --norc -c true (bash's own start)
//   bare_masks       bare bwrap + the same masks as airlock's plan for DIR (bwrap's own cost
//                    of them: mount points made on the host, a bind, mountinfo read, remount)
//   launcher         airlock's bwrap launch: preflight bash, seccomp, a private /tmp bound
//                    from the runtime directory, the ready pipe (no masks, no scan)
//   launcher_masks   + the plan and its masks (files unlinked and directories renamed aside
//                    by ReleaseMasks)
//   launcher_masks_rmdir  the same with the directories removed inline (the way before)
//   runner           ShellRunner::Run: + call directory, root checks, scan, hidden paths
int ExecBreakdown(int n, const std::string& dir) {
  auto runtime = broker::EnsureRuntimeDir("");
  if (!runtime.ok()) return Fail(runtime.status().message());
  broker::ShellRunnerOptions runner_options;
  auto runner = broker::ShellRunner::Create(runner_options);
  if (!runner.ok()) return Fail(runner.status().message());
  std::map<std::string, std::vector<double>> samples;
  auto launch = [&](bool with_masks, bool rmdir_inline) -> double {
    auto call = broker::MakeCallDir(*runtime);
    if (!call.ok()) return -1;
    linux_sandbox::SandboxRunOptions sandbox;
    sandbox.layout.private_tmp = call->tmp;
    sandbox.layout.empty_dir = call->empty_dir;
    sandbox.layout.empty_file = call->empty_file;
    sandbox.layout.cwd = dir;
    sandbox.layout.env = {{"PATH", "/usr/bin:/bin"}};
    sandbox.layout.writable_roots = {dir};
    sandbox.command.shell_line = "true";
    const auto start = Clock::now();
    const bool phases = with_masks && !rmdir_inline;
    if (with_masks) {
      auto plan = broker::PlanProtection({dir}, {});
      if (!plan.ok()) return -1;
      sandbox.layout.masks = plan->masks;
      sandbox.layout.self_binds = plan->self_binds;
      sandbox.layout.read_only = plan->read_only;
    }
    const auto planned = Clock::now();
    broker::AcquireMasks(sandbox.layout.masks);
    const auto acquired = Clock::now();
    auto result = linux_sandbox::RunInShellSandbox(sandbox);
    const auto ran = Clock::now();
    if (rmdir_inline) {
      for (const auto& mask : sandbox.layout.masks) {
        if (mask.directory) {
          ::rmdir(mask.path.c_str());
        } else {
          ::unlink(mask.path.c_str());
        }
      }
    }
    broker::ReleaseMasks(sandbox.layout.masks);
    const auto released = Clock::now();
    const double us = Micros(released - start);
    if (phases) {
      samples["phase_plan"].push_back(Micros(planned - start));
      samples["phase_acquire"].push_back(Micros(acquired - planned));
      samples["phase_sandbox"].push_back(Micros(ran - acquired));
      samples["phase_release"].push_back(Micros(released - ran));
    }
    broker::DrainMaskRemovals();  // outside the timing, before the next launch
    (void)broker::RemoveTree(call->path);
    return result.ok() && result->status.ShellCode() == 0 ? us : -1;
  };
  const std::vector<linux_sandbox::CoveredPath> masks = PlannedMasks(dir);
  for (int i = 0; i < n; ++i) {
    samples["bare"].push_back(BareBwrapOnce(dir));
    samples["bare_bash"].push_back(BareBwrapOnce(dir, {}, true));
    samples["bare_masks"].push_back(BareBwrapOnce(dir, masks));
    samples["launcher"].push_back(launch(false, false));
    samples["launcher_masks"].push_back(launch(true, false));
    samples["launcher_masks_rmdir"].push_back(launch(true, true));
    broker::ShellRequest request;
    request.command = "true";
    request.cwd = dir;
    request.preset = v1::PRESET_WORKSPACE_WRITE;
    request.roots = {dir};
    const auto start = Clock::now();
    auto ran = (*runner)->Run(request, nullptr);
    samples["runner"].push_back(ran.ok() && ran->exit_code() == 0 ? Micros(Clock::now() - start)
                                                                  : -1);
    broker::DrainMaskRemovals();
  }
  std::vector<std::string> parts;
  for (const auto& [name, values] : samples) {
    if (std::find_if(values.begin(), values.end(), [](double v) { return v < 0; }) !=
        values.end()) {
      return Fail(absl::StrCat("exec-breakdown: a ", name, " launch failed"));
    }
    parts.push_back(absl::StrCat("\"", name, "\":", static_cast<int64_t>(Median(values))));
  }
  std::printf("{%s}\n", absl::StrJoin(parts, ",").c_str());
  return 0;
}

int Load(int workers, int n, const std::string& dir) {
  std::vector<std::vector<double>> latencies(workers);
  std::vector<std::string> errors(workers);
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([w, n, &dir, &latencies, &errors] {
      auto client = worker::BrokerClient::ConnectFromEnvironment("bench-load");
      if (!client.ok()) {
        errors[w] = std::string(client.status().message());
        return;
      }
      const std::string path = absl::StrCat(dir, "/load-", w, ".txt");
      for (int i = 0; i < n; ++i) {
        v1::Request request;
        switch (i % 3) {
          case 0:
            request.mutable_write()->set_path(path);
            request.mutable_write()->set_content(absl::StrCat("round ", i, "\n", Payload()));
            break;
          case 1:
            request.mutable_read()->set_path(path);
            break;
          default:
            request.mutable_edit()->set_path(path);
            request.mutable_edit()->set_old_string(absl::StrCat("round ", i - 2, "\n"));
            request.mutable_edit()->set_new_string(absl::StrCat("edited ", i, "\n"));
            break;
        }
        const auto t0 = Clock::now();
        auto response = (*client)->Call(request);
        latencies[w].push_back(Micros(Clock::now() - t0));
        if (!response.ok() || response->has_error()) {
          errors[w] = response.ok() ? response->error().message()
                                    : std::string(response.status().message());
          return;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (const std::string& e : errors) {
    if (!e.empty()) return Fail(e);
  }
  std::vector<double> all;
  for (const auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  auto percentile = [&all](double p) {
    return all.empty() ? 0.0 : all[std::min(all.size() - 1, static_cast<size_t>(p * all.size()))];
  };
  std::printf("{\"ops\":%zu,\"seconds\":%.6f,\"ops_per_s\":%.1f,\"p50_us\":%.0f,\"p99_us\":%.0f}\n",
              all.size(), seconds, all.size() / seconds, percentile(0.50), percentile(0.99));
  return 0;
}

}  // namespace
}  // namespace airlock::bench

int main(int argc, char** argv) {
  using airlock::bench::Fail;
  if (argc < 3) return Fail("usage: bench_client MODE N [DIR]");
  const std::string mode = argv[1];
  int n = 0;
  if (!absl::SimpleAtoi(argv[2], &n) || n <= 0) return Fail("N must be a positive number");
  if (mode == "brokered-write" && argc == 4) return airlock::bench::BrokeredWrite(n, argv[3]);
  if (mode == "direct-write" && argc == 4) return airlock::bench::DirectWrite(n, argv[3]);
  if (mode == "direct-write-intent" && argc == 5) {
    return airlock::bench::DirectWriteWithIntent(n, argv[3], argv[4]);
  }
  if (mode == "brokered-bash" && argc == 3) return airlock::bench::BrokeredBash(n);
  if (mode == "bare-bwrap" && argc == 4) return airlock::bench::BareBwrap(n, argv[3]);
  if (mode == "bare-bwrap-masked" && argc == 4) {
    return airlock::bench::BareBwrapMasked(n, argv[3], false);
  }
  if (mode == "bare-bwrap-masked-bash" && argc == 4) {
    return airlock::bench::BareBwrapMasked(n, argv[3], true);
  }
  if (mode == "exec-breakdown" && argc == 4) return airlock::bench::ExecBreakdown(n, argv[3]);
  int per_worker = 0;
  if (mode == "load" && argc == 5 && absl::SimpleAtoi(argv[3], &per_worker) && per_worker > 0) {
    return airlock::bench::Load(n, per_worker, argv[4]);
  }
  return Fail("unknown mode or wrong arguments");
}
