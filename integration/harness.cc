#include "integration/harness.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "platform/base/scoped_fd.h"
#include "platform/process/spawn.h"
#include "tests/testing/temp_dir.h"

namespace airlock::integration {
namespace {

constexpr char kBasePath[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

bool IsRoot() { return ::geteuid() == 0; }

std::string MakeWorldReadableDir(const std::string& base = "/tmp") {
  std::string pattern = base + "/airlock-it-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) std::abort();
  ::chmod(pattern.c_str(), 0755);
  return pattern;
}

void CopyFile(const std::string& from, const std::string& to) {
  std::string content = testing::ReadFileOrMissing(from);
  testing::WriteFileOrDie(to, content);
  ::chmod(to.c_str(), 0755);
}

}  // namespace

std::string AirlockBinary(RunAs run_as) { return ExecutableFor(run_as, AIRLOCK_BINARY); }

std::string ExecutableFor(RunAs run_as, const std::string& path) {
  if (run_as == RunAs::kCurrentUser) return path;
  static std::mutex mutex;
  static std::map<std::string, std::string>* copies = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (copies == nullptr) {
    copies = new std::map<std::string, std::string>();
    std::atexit([] {
      std::lock_guard<std::mutex> lock(mutex);
      for (const auto& [from, copy] : *copies) {
        ::unlink(copy.c_str());
        ::rmdir(copy.substr(0, copy.rfind('/')).c_str());
      }
    });
  }
  auto it = copies->find(path);
  if (it != copies->end()) return it->second;
  std::string copy = MakeWorldReadableDir() + path.substr(path.rfind('/'));
  CopyFile(path, copy);
  (*copies)[path] = copy;
  return copy;
}

std::vector<RunAs> IdentitiesToTest() {
  if (IsRoot()) return {RunAs::kCurrentUser, RunAs::kUnprivileged};
  return {RunAs::kCurrentUser};
}

std::string RunAsName(const ::testing::TestParamInfo<RunAs>& info) {
  if (info.param == RunAs::kUnprivileged) return "Unprivileged";
  return IsRoot() ? "Root" : "CurrentUser";
}

CommandResult RunCommand(const std::vector<std::string>& argv, const RunOptions& options) {
  CommandResult result;
  std::vector<std::string> full_argv;
  if (options.run_as == RunAs::kUnprivileged) {
    if (!IsRoot()) {
      result.err = "RunAs::kUnprivileged needs root";
      return result;
    }
    full_argv = {"/usr/bin/setpriv", absl::StrCat("--reuid=", kUnprivilegedUid),
                 absl::StrCat("--regid=", kUnprivilegedGid), "--clear-groups", "--"};
  }
  for (const std::string& arg : argv) full_argv.push_back(arg);
  auto program = FindExecutable(full_argv[0], kBasePath);
  if (!program.ok()) {
    result.err = std::string(program.status().message());
    return result;
  }
  full_argv[0] = *program;

  std::vector<std::string> env = {absl::StrCat("PATH=", kBasePath), "LANG=C.UTF-8"};
  for (const std::string& e : options.env) env.push_back(e);

  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) || ::pipe2(out_pipe, O_CLOEXEC) || ::pipe2(err_pipe, O_CLOEXEC)) {
    result.err = "pipe2 failed";
    return result;
  }
  ScopedFd in_read(in_pipe[0]), in_write(in_pipe[1]);
  ScopedFd out_read(out_pipe[0]), out_write(out_pipe[1]);
  ScopedFd err_read(err_pipe[0]), err_write(err_pipe[1]);

  SpawnOptions spawn;
  spawn.argv = full_argv;
  spawn.env = env;
  spawn.descriptors = {{0, in_read.get()}, {1, out_write.get()}, {2, err_write.get()}};
  spawn.new_process_group = true;
  spawn.parent_death_signal = SIGKILL;
  if (!options.cwd.empty()) spawn.working_directory = options.cwd;
  auto pid = Spawn(spawn);
  if (!pid.ok()) {
    result.err = std::string(pid.status().message());
    return result;
  }
  in_read.reset();
  out_write.reset();
  err_write.reset();
  if (options.started) options.started(*pid);

  // Feed stdin in full (small inputs), then close it.
  absl::string_view input = options.stdin_data;
  while (!input.empty()) {
    ssize_t n = ::write(in_write.get(), input.data(), input.size());
    if (n <= 0) break;
    input.remove_prefix(static_cast<size_t>(n));
  }
  in_write.reset();

  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(options.timeout_seconds);
  pollfd fds[2] = {{out_read.get(), POLLIN, 0}, {err_read.get(), POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_count = 2;
  while (open_count > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      ::kill(-*pid, SIGKILL);
      ::kill(*pid, SIGKILL);
      break;
    }
    int r = ::poll(fds, 2, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buffer[65536];
      ssize_t n = ::read(fds[i].fd, buffer, sizeof(buffer));
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open_count;
      }
    }
  }
  auto status = WaitForExit(*pid);
  if (status.ok()) result.exit_code = status->ShellCode();
  return result;
}

CommandResult RunAirlock(const std::vector<std::string>& args, const RunOptions& options) {
  std::vector<std::string> argv = {AirlockBinary(options.run_as)};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, options);
}

Scratch::Scratch(RunAs run_as, const std::string& base) : run_as_(run_as) {
  path_ = MakeWorldReadableDir(base);
  char resolved[PATH_MAX];
  if (::realpath(path_.c_str(), resolved) != nullptr) path_ = resolved;
  if (run_as == RunAs::kUnprivileged) {
    if (::chown(path_.c_str(), kUnprivilegedUid, kUnprivilegedGid) != 0) std::abort();
  }
  ::chmod(path_.c_str(), 0700);
}

Scratch::~Scratch() { testing::RemoveTree(path_); }

RunOptions AirlockOptions(RunAs run_as, const Scratch& home) {
  const std::string binary = AirlockBinary(run_as);
  RunOptions options;
  options.run_as = run_as;
  options.env = {absl::StrCat("AIRLOCK_HOME=", home.Child("airlock")),
                 absl::StrCat("HOME=", home.path()),
                 absl::StrCat("PATH=", binary.substr(0, binary.rfind('/')), ":/usr/bin:/bin")};
  return options;
}

CommandResult VerifyAuditLogs(RunAs run_as, const Scratch& home) {
  return RunCommand({"/bin/sh", "-c",
                     absl::StrCat("for log in ", home.Child("airlock/audit"), "/*.jsonl; do ",
                                  AirlockBinary(run_as), " audit verify \"$log\" --key-file ",
                                  home.Child("airlock/audit.key"), " || exit 1; done")},
                    AirlockOptions(run_as, home));
}

void Scratch::MakeDir(const std::string& relative) const {
  std::string current = path_;
  size_t start = 0;
  while (start <= relative.size()) {
    size_t end = relative.find('/', start);
    if (end == std::string::npos) end = relative.size();
    current += "/" + relative.substr(start, end - start);
    ::mkdir(current.c_str(), 0755);
    if (run_as_ == RunAs::kUnprivileged) {
      if (::lchown(current.c_str(), kUnprivilegedUid, kUnprivilegedGid) != 0) std::abort();
    }
    start = end + 1;
  }
}

void Scratch::Write(const std::string& relative, const std::string& content) const {
  const size_t slash = relative.rfind('/');
  if (slash != std::string::npos) MakeDir(relative.substr(0, slash));
  const std::string full = Child(relative);
  testing::WriteFileOrDie(full, content);
  if (run_as_ == RunAs::kUnprivileged) {
    if (::chown(full.c_str(), kUnprivilegedUid, kUnprivilegedGid) != 0) std::abort();
  }
}

std::ostream& operator<<(std::ostream& out, const CommandResult& result) {
  return out << "exit " << result.exit_code << (result.timed_out ? " (timed out)" : "")
             << "\n--- stdout ---\n" << result.out << "\n--- stderr ---\n" << result.err;
}

}  // namespace airlock::integration
