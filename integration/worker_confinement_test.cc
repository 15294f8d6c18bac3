// SPEC §7 end to end: the worker that `airlock run` starts cannot write, trace or signal.
// Each layer is switched on alone (the hidden --test-disable-worker-layer) and all three
// together, as root and as an unprivileged user. What each layer alone must block is the
// documented split in broker/worker_launcher.h; this file asserts exactly that.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/harness.h"
#include "platform/base/scoped_fd.h"
#include "tests/testing/temp_dir.h"

namespace airlock::integration {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

enum class Layers { kAll, kMountOnly, kLandlockOnly, kSeccompOnly };

std::string LayersName(Layers layers) {
  switch (layers) {
    case Layers::kAll: return "AllLayers";
    case Layers::kMountOnly: return "MountOnly";
    case Layers::kLandlockOnly: return "LandlockOnly";
    case Layers::kSeccompOnly: return "SeccompOnly";
  }
  return "?";
}

std::vector<std::string> DisableFlags(Layers layers) {
  std::vector<std::string> off;
  if (layers == Layers::kLandlockOnly || layers == Layers::kSeccompOnly) off.push_back("mount");
  if (layers == Layers::kMountOnly || layers == Layers::kSeccompOnly) off.push_back("landlock");
  if (layers == Layers::kMountOnly || layers == Layers::kLandlockOnly) off.push_back("seccomp");
  std::vector<std::string> flags;
  for (const std::string& layer : off) {
    flags.push_back("--test-disable-worker-layer");
    flags.push_back(layer);
  }
  return flags;
}

// The operations the probes attempt on a directory, each on its own victim.
const std::vector<std::string>& Operations() {
  static const std::vector<std::string> ops = {"create", "write",   "truncate", "unlink",
                                               "rename", "mkdir",   "rmdir",    "symlink",
                                               "link",   "chmod",   "chown"};
  return ops;
}

// Which operations a configuration must block outside the scratch directory (the split of
// broker/worker_launcher.h). `shell` selects the coreutils variant: `truncate -s 0` opens the
// file and calls ftruncate, which seccomp leaves to layers 1 and 2.
std::set<std::string> MustBlock(Layers layers, bool shell) {
  const std::set<std::string> all(Operations().begin(), Operations().end());
  switch (layers) {
    case Layers::kAll:
    case Layers::kMountOnly:
      return all;
    case Layers::kLandlockOnly: {
      std::set<std::string> blocked = all;
      blocked.erase("chmod");  // Landlock has no right for file attributes
      blocked.erase("chown");
      return blocked;
    }
    case Layers::kSeccompOnly: {
      std::set<std::string> blocked = {"symlink", "link", "chmod", "chown"};
      if (!shell) blocked.insert("truncate");  // truncate(2) by path
      return blocked;
    }
  }
  return all;
}

// python3 probe: prints "<label>.<op> ok|<ERRNO NAME>" for each operation in directory argv[2].
constexpr char kPythonProbe[] = R"PY(
import errno, os, sys
label, d = sys.argv[1], sys.argv[2]
def v(op):
    return os.path.join(d, "victim-" + op)
def attempt(op, fn):
    try:
        fn()
        print(label + "." + op, "ok")
    except OSError as e:
        print(label + "." + op, errno.errorcode.get(e.errno, str(e.errno)))
attempt("create", lambda: os.close(os.open(os.path.join(d, "py-new"), os.O_WRONLY | os.O_CREAT, 0o600)))
attempt("write", lambda: os.close(os.open(v("write"), os.O_WRONLY)))
attempt("truncate", lambda: os.truncate(v("truncate"), 0))
attempt("unlink", lambda: os.unlink(v("unlink")))
attempt("rename", lambda: os.rename(v("rename"), os.path.join(d, "py-renamed")))
attempt("mkdir", lambda: os.mkdir(os.path.join(d, "py-dir")))
attempt("rmdir", lambda: os.rmdir(v("rmdir")))
attempt("symlink", lambda: os.symlink("victim-link", os.path.join(d, "py-symlink")))
attempt("link", lambda: os.link(v("link"), os.path.join(d, "py-hardlink")))
attempt("chmod", lambda: os.chmod(v("chmod"), 0o777))
attempt("chown", lambda: os.chown(v("chown"), os.getuid(), os.getgid()))
)PY";

// sh probe: the same with coreutils, "<label>.<op> ok|denied".
constexpr char kShellProbe[] = R"SH(
label=$1; d=$2
t() { op=$1; shift; if "$@" 2>/dev/null; then echo "$label.$op ok"; else echo "$label.$op denied"; fi; }
t create touch "$d/sh-new"
t write sh -c ': >> "$1"' sh "$d/victim-write"
t truncate truncate -s 0 "$d/victim-truncate"
t unlink rm -f "$d/victim-unlink"
t rename mv "$d/victim-rename" "$d/sh-renamed"
t mkdir mkdir "$d/sh-dir"
t rmdir rmdir "$d/victim-rmdir"
t symlink ln -s victim-link "$d/sh-symlink"
t link ln "$d/victim-link" "$d/sh-hardlink"
t chmod chmod 777 "$d/victim-chmod"
t chown chown "$(id -u):$(id -g)" "$d/victim-chown"
)SH";

// Scratch directory probe: what an agent does in TMPDIR must keep working.
constexpr char kScratchProbe[] = R"PY(
import os, tempfile
d = tempfile.mkdtemp()
p = os.path.join(d, "f")
with open(p, "w") as f:
    f.write("scratch")
os.rename(p, p + "2")
with open(p + "2") as f:
    assert f.read() == "scratch"
os.unlink(p + "2")
os.rmdir(d)
with open(os.path.join(os.environ["TMPDIR"], os.environ["MARKER"]), "w") as f:
    f.write("x")
print("scratch ok", os.environ["TMPDIR"])
)PY";

// A listing of a tree: relative name → type, mode, size, content; to compare before/after.
std::map<std::string, std::string> Snapshot(const std::string& root) {
  std::map<std::string, std::string> out;
  std::vector<std::string> pending = {""};
  while (!pending.empty()) {
    const std::string relative = pending.back();
    pending.pop_back();
    const std::string path = relative.empty() ? root : root + "/" + relative;
    struct stat info;
    if (::lstat(path.c_str(), &info) != 0) continue;
    std::string entry = absl::StrCat(info.st_mode, ":", info.st_uid, ":", info.st_size);
    if (S_ISREG(info.st_mode)) absl::StrAppend(&entry, ":", testing::ReadFileOrMissing(path));
    out[relative.empty() ? "." : relative] = entry;
    if (S_ISDIR(info.st_mode)) {
      // Listing via a child process keeps this helper free of directory-stream code.
      CommandResult ls = RunCommand({"/bin/ls", "-A", path}, RunOptions());
      for (absl::string_view name : absl::StrSplit(ls.out, '\n', absl::SkipEmpty())) {
        pending.push_back(relative.empty() ? std::string(name)
                                           : absl::StrCat(relative, "/", name));
      }
    }
  }
  return out;
}

class WorkerConfinementTest : public ::testing::TestWithParam<std::tuple<RunAs, Layers>> {
 protected:
  RunAs run_as() const { return std::get<0>(GetParam()); }
  Layers layers() const { return std::get<1>(GetParam()); }

  RunOptions Options() const {
    const std::string binary = AirlockBinary(run_as());
    RunOptions options;
    options.run_as = run_as();
    options.env = {absl::StrCat("AIRLOCK_HOME=", home_.path()),
                   absl::StrCat("HOME=", home_.path()),
                   absl::StrCat("PATH=", binary.substr(0, binary.rfind('/')), ":/usr/bin:/bin")};
    return options;
  }

  // `airlock run` with this test's layers, running ARGV as the agent.
  CommandResult RunWorker(const std::vector<std::string>& argv,
                          const std::vector<std::string>& extra_flags = {}) {
    std::vector<std::string> args = {"run", "--workspace", workspace_.path()};
    for (const std::string& flag : DisableFlags(layers())) args.push_back(flag);
    for (const std::string& flag : extra_flags) args.push_back(flag);
    args.push_back("--");
    args.insert(args.end(), argv.begin(), argv.end());
    return RunAirlock(args, Options());
  }

  void PlantVictims(const Scratch& dir) {
    for (const std::string& op : Operations()) {
      if (op == "rmdir") {
        dir.MakeDir("victim-rmdir");
      } else {
        dir.Write("victim-" + op, "victim " + op);
      }
    }
  }

  // Runs both probes against the workspace and a host /tmp directory; checks the results
  // against the split and that neither tree changed where the layer must block.
  void ExpectWritesBlocked(const std::string& interpreter) {
    const bool shell = interpreter == "sh";
    PlantVictims(workspace_);
    PlantVictims(host_tmp_);
    workspace_.Write("probe", shell ? kShellProbe : kPythonProbe);
    const auto workspace_before = Snapshot(workspace_.path());
    const auto tmp_before = Snapshot(host_tmp_.path());

    const std::string probe = workspace_.Child("probe");
    CommandResult result = RunWorker(
        {"/bin/sh", "-c",
         absl::StrCat(shell ? "sh " : "python3 ", probe, " ws ", workspace_.path(), "; ",
                      shell ? "sh " : "python3 ", probe, " tmp ", host_tmp_.path())});
    ASSERT_EQ(result.exit_code, 0) << result;
    const std::set<std::string> must_block = MustBlock(layers(), shell);
    for (const char* label : {"ws", "tmp"}) {
      for (const std::string& op : Operations()) {
        const std::string key = absl::StrCat(label, ".", op, " ");
        const size_t at = result.out.find(key);
        ASSERT_NE(at, std::string::npos) << key << " missing\n" << result;
        const std::string outcome =
            result.out.substr(at + key.size(), result.out.find('\n', at) - at - key.size());
        if (must_block.count(op)) {
          EXPECT_NE(outcome, "ok") << key << "was not blocked\n" << result;
        }
      }
    }
    if (must_block.size() == Operations().size()) {
      EXPECT_EQ(Snapshot(workspace_.path()), workspace_before) << result;
      EXPECT_EQ(Snapshot(host_tmp_.path()), tmp_before) << result;
    }
  }

  Scratch workspace_{run_as()};
  Scratch home_{run_as()};
  Scratch host_tmp_{run_as()};  // a directory under the host's /tmp, writable by the user
};

TEST_P(WorkerConfinementTest, PythonCannotWriteTheWorkspaceOrHostTmp) {
  ExpectWritesBlocked("python3");
}

TEST_P(WorkerConfinementTest, ShellCannotWriteTheWorkspaceOrHostTmp) {
  ExpectWritesBlocked("sh");
}

TEST_P(WorkerConfinementTest, TmpdirIsWritableAndPrivate) {
  const std::string marker = absl::StrCat("airlock-scratch-marker-", ::getpid(), "-",
                                          static_cast<int>(run_as()), "-",
                                          static_cast<int>(layers()));
  workspace_.Write("scratch.py", kScratchProbe);
  CommandResult result =
      RunWorker({"/usr/bin/env", absl::StrCat("MARKER=", marker), "python3",
                 workspace_.Child("scratch.py")});
  ASSERT_EQ(result.exit_code, 0) << result;
  EXPECT_THAT(result.out, HasSubstr("scratch ok")) << result;
  // Gone when the run ends: an in-memory tmpfs in the mount view, a removed host directory
  // otherwise. Never the host's shared /dev/shm.
  struct stat info;
  EXPECT_NE(::stat(absl::StrCat("/dev/shm/", marker).c_str(), &info), 0);
  const size_t at = result.out.find("scratch ok ");
  ASSERT_NE(at, std::string::npos);
  const std::string tmpdir = result.out.substr(at + 11, result.out.find('\n', at) - at - 11);
  if (tmpdir != "/dev/shm") {
    EXPECT_NE(::stat(tmpdir.c_str(), &info), 0) << tmpdir << " remains";
  }
}

TEST_P(WorkerConfinementTest, ToolCallsStillWorkThroughEveryLayer) {
  workspace_.Write("hello.txt", "hello through the channel");
  CommandResult result = RunWorker({"/bin/sh", "-c", "airlock tool read hello.txt"});
  ASSERT_EQ(result.exit_code, 0) << result;
  EXPECT_THAT(result.out, HasSubstr("\"content\":\"hello through the channel\""));
}

INSTANTIATE_TEST_SUITE_P(
    LayersAndIdentities, WorkerConfinementTest,
    ::testing::Combine(::testing::ValuesIn(IdentitiesToTest()),
                       ::testing::Values(Layers::kAll, Layers::kMountOnly, Layers::kLandlockOnly,
                                         Layers::kSeccompOnly)),
    [](const ::testing::TestParamInfo<std::tuple<RunAs, Layers>>& info) {
      const bool unprivileged = std::get<0>(info.param) == RunAs::kUnprivileged;
      return absl::StrCat(unprivileged ? "Unprivileged" : (::geteuid() == 0 ? "Root" : "User"),
                          "_", LayersName(std::get<1>(info.param)));
    });

// All three layers: the broker is out of reach, and the process state is what SPEC §7 says.
class FullConfinementTest : public ::testing::TestWithParam<RunAs> {
 protected:
  RunOptions Options() const {
    const std::string binary = AirlockBinary(GetParam());
    RunOptions options;
    options.run_as = GetParam();
    options.env = {absl::StrCat("AIRLOCK_HOME=", home_.path()),
                   absl::StrCat("HOME=", home_.path()),
                   absl::StrCat("PATH=", binary.substr(0, binary.rfind('/')), ":/usr/bin:/bin")};
    return options;
  }
  // Runs `sh -c SCRIPT` as the worker; the outer shell's $$ (the broker after exec) is in
  // BROKER_PID.
  CommandResult RunWithBrokerPid(const std::string& script,
                                 const std::vector<std::string>& flags = {}) {
    std::string command = absl::StrCat("BROKER_PID=$$ exec ", AirlockBinary(GetParam()),
                                       " run --workspace ", workspace_.path());
    for (const std::string& flag : flags) absl::StrAppend(&command, " ", flag);
    absl::StrAppend(&command, " -- /bin/sh -c '", script, "'");
    return RunCommand({"/bin/sh", "-c", command}, Options());
  }

  Scratch workspace_{GetParam()};
  Scratch home_{GetParam()};
};

TEST_P(FullConfinementTest, EveryThreadHasNoCapabilitiesNoNewPrivsAndSeccomp) {
  workspace_.Write("threads.py", R"PY(
import glob, threading
stop = threading.Event()
threads = [threading.Thread(target=stop.wait) for _ in range(3)]
for t in threads: t.start()
tasks = glob.glob("/proc/self/task/*/status")
print("tasks", len(tasks))
for path in tasks:
    fields = dict(line.split(":", 1) for line in open(path) if ":" in line)
    print("task", fields["CapEff"].strip(), fields["CapPrm"].strip(), fields["CapBnd"].strip(),
          fields["CapAmb"].strip(), fields["CapInh"].strip(), fields["NoNewPrivs"].strip(),
          fields["Seccomp"].strip())
stop.set()
for t in threads: t.join()
)PY");
  CommandResult result = RunWithBrokerPid(absl::StrCat("python3 ", workspace_.Child("threads.py")));
  ASSERT_EQ(result.exit_code, 0) << result;
  EXPECT_THAT(result.out, HasSubstr("tasks 4")) << result;
  const std::string good =
      "task 0000000000000000 0000000000000000 0000000000000000 0000000000000000 "
      "0000000000000000 1 2";
  size_t count = 0;
  for (absl::string_view line : absl::StrSplit(result.out, '\n', absl::SkipEmpty())) {
    if (!absl::StartsWith(line, "task ")) continue;
    ++count;
    EXPECT_EQ(line, good) << result;
  }
  EXPECT_EQ(count, 4u) << result;
}

TEST_P(FullConfinementTest, InheritsOnlyStdioAndTheConnector) {
  // The agent itself (exec'd by __confine): probe with fstat so the probe opens nothing.
  CommandResult result = RunWithBrokerPid(
      "exec python3 -c \"import os\n"
      "fds = []\n"
      "for fd in range(1024):\n"
      "    try:\n"
      "        os.fstat(fd); fds.append(fd)\n"
      "    except OSError: pass\n"
      "print(\\\"fds\\\", fds, os.environ.get(\\\"AIRLOCK_FD\\\"))\"");
  ASSERT_EQ(result.exit_code, 0) << result;
  EXPECT_THAT(result.out, HasSubstr("fds [0, 1, 2, 3] 3")) << result;
}

TEST_P(FullConfinementTest, AgentStartsWithDefaultSignalDispositions) {
  // The broker ignores SIGPIPE; the agent must not inherit that (`yes | head` must work).
  CommandResult result = RunWithBrokerPid("exec grep -E \"^Sig(Ign|Blk)\" /proc/self/status");
  ASSERT_EQ(result.exit_code, 0) << result;
  EXPECT_THAT(result.out, HasSubstr("SigBlk:\t0000000000000000")) << result;
  EXPECT_THAT(result.out, HasSubstr("SigIgn:\t0000000000000000")) << result;
}

TEST_P(FullConfinementTest, CannotSignalTraceOrReadTheBroker) {
  workspace_.Write("broker.py", R"PY(
import ctypes, errno, os, signal
pid = int(os.environ["BROKER_PID"])
def report(name, fn):
    try:
        fn()
        print(name, "ok")
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, str(e.errno)))
report("kill", lambda: os.kill(pid, signal.SIGTERM))
report("mem", lambda: open("/proc/%d/mem" % pid, "rb").read(1))
libc = ctypes.CDLL(None, use_errno=True)
def ptrace():
    if libc.ptrace(16, pid, None, None) != 0:  # PTRACE_ATTACH
        raise OSError(ctypes.get_errno(), "ptrace")
report("ptrace", ptrace)
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
buf = ctypes.create_string_buffer(8)
local = iovec(ctypes.cast(buf, ctypes.c_void_p), 8)
remote = iovec(0x400000, 8)
def vm_read():
    if libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) < 0:
        raise OSError(ctypes.get_errno(), "process_vm_readv")
report("vm_read", vm_read)
visible = [p for p in os.listdir("/proc") if p.isdigit()]
names = []
for p in visible:
    try:
        names.append(open("/proc/%s/cmdline" % p, "rb").read().replace(b"\0", b" ").decode())
    except OSError:
        pass
print("broker visible", any(n.startswith(os.environ.get("AIRLOCK_BINARY", "?")) and " run " in n for n in names))
)PY");
  const std::string binary = AirlockBinary(GetParam());
  CommandResult result = RunWithBrokerPid(absl::StrCat(
      "AIRLOCK_BINARY=", binary, " python3 ", workspace_.Child("broker.py"),
      "; kill -KILL -1 2>/dev/null; echo after-kill-all"));
  // The broker survived everything (it still reports the worker's status).
  ASSERT_EQ(result.exit_code, 0) << result;
  EXPECT_THAT(result.out, HasSubstr("after-kill-all")) << result;
  EXPECT_THAT(result.out, Not(HasSubstr("kill ok"))) << result;
  EXPECT_THAT(result.out, Not(HasSubstr("mem ok"))) << result;
  EXPECT_THAT(result.out, Not(HasSubstr("ptrace ok"))) << result;
  EXPECT_THAT(result.out, Not(HasSubstr("vm_read ok"))) << result;
  EXPECT_THAT(result.out, HasSubstr("broker visible False")) << result;
  EXPECT_THAT(result.out, HasSubstr("ptrace EPERM")) << result;
  EXPECT_THAT(result.out, HasSubstr("vm_read EPERM")) << result;
}

TEST_P(FullConfinementTest, CannotConnectToAHostUnixSocket) {
  // A host socket anyone may connect to; the control connection below proves it works.
  const std::string path = workspace_.Child("host.sock");
  ScopedFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(listener.valid());
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  ASSERT_LT(path.size(), sizeof(address.sun_path));
  path.copy(address.sun_path, path.size());
  ASSERT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(::chmod(path.c_str(), 0777), 0);
  ASSERT_EQ(::listen(listener.get(), 8), 0);
  const std::string connect = absl::StrCat(
      "python3 -c \"import socket\ntry:\n    s = socket.socket(socket.AF_UNIX)\n"
      "    s.connect(\\\"", path, "\\\")\n    print(\\\"connected\\\")\n"
      "except OSError as e:\n    print(\\\"refused\\\", e.errno)\"");
  CommandResult control = RunCommand({"/bin/sh", "-c", connect}, Options());
  ASSERT_THAT(control.out, HasSubstr("connected")) << control;

  CommandResult result = RunWithBrokerPid(connect);
  ASSERT_EQ(result.exit_code, 0) << result;
  EXPECT_THAT(result.out, HasSubstr("refused")) << result;
  EXPECT_THAT(result.out, Not(HasSubstr("connected"))) << result;
}

TEST_P(FullConfinementTest, CannotReadTheAuditKeyOrBrokerState) {
  home_.Write("audit.key", "the-audit-key-0123456789abcdef0123456789abcdef");
  ASSERT_EQ(::chmod(home_.Child("audit.key").c_str(), 0600), 0);
  home_.Write("sessions/s.jsonl", "session-data");
  CommandResult result = RunWithBrokerPid(absl::StrCat(
      "cat ", home_.path(), "/audit.key ", home_.path(), "/sessions/s.jsonl 2>/dev/null; ",
      "echo listing; ls -A ", home_.path(), "; echo key=${AIRLOCK_AUDIT_KEY:-unset}"));
  EXPECT_THAT(result.out, Not(HasSubstr("the-audit-key"))) << result;
  EXPECT_THAT(result.out, Not(HasSubstr("session-data"))) << result;
  EXPECT_THAT(result.out, HasSubstr("listing\nkey=unset")) << result;
}

TEST_P(FullConfinementTest, HasItsOwnSessionWithoutTheBrokersTerminal) {
  CommandResult result = RunWithBrokerPid(
      "python3 -c \"import os\nprint(\\\"leader\\\", os.getsid(0) == os.getpid())\n"
      "try:\n    open(\\\"/dev/tty\\\")\n    print(\\\"tty opened\\\")\n"
      "except OSError:\n    print(\\\"no tty\\\")\"");
  ASSERT_EQ(result.exit_code, 0) << result;
  EXPECT_THAT(result.out, HasSubstr("no tty")) << result;
}

TEST_P(FullConfinementTest, NetworkNoneLeavesOnlyLoopback) {
  const std::string script =
      "python3 -c \"import socket\nprint(\\\"ifs\\\", sorted(n for _, n in "
      "socket.if_nameindex()))\"";
  CommandResult isolated = RunWithBrokerPid(script, {"--worker-network", "none"});
  ASSERT_EQ(isolated.exit_code, 0) << isolated;
  EXPECT_THAT(isolated.out, HasSubstr("ifs ['lo']")) << isolated;
}

TEST_P(FullConfinementTest, UnknownLayerNamesAreUsageErrors) {
  CommandResult result =
      RunWithBrokerPid("true", {"--accept-weaker-worker", "everything"});
  EXPECT_EQ(result.exit_code, 64) << result;
}

TEST_P(FullConfinementTest, DisablingALayerIsAnnouncedLoudly) {
  CommandResult result = RunWithBrokerPid("true", {"--test-disable-worker-layer", "seccomp"});
  ASSERT_EQ(result.exit_code, 0) << result;
  EXPECT_THAT(result.err, HasSubstr("WARNING: worker layer 'seccomp' is DISABLED")) << result;
}

// A broker that cannot create user namespaces (here: started inside `bwrap --disable-userns`)
// cannot build the mount view: it refuses with exit 125 naming the layer and the reason,
// unless that weaker setup is accepted by name; then Landlock and seccomp still hold.
TEST_P(FullConfinementTest, RefusesWhenALayerIsUnavailableUnlessAccepted) {
  const std::vector<std::string> no_userns = {"/usr/bin/bwrap", "--dev-bind",     "/", "/",
                                              "--unshare-user", "--disable-userns",
                                              "--cap-drop",     "ALL", "--"};
  std::vector<std::string> refused = no_userns;
  for (const char* arg : {"run", "--workspace"}) refused.push_back(arg);
  refused.insert(refused.begin() + no_userns.size(), AirlockBinary(GetParam()));
  refused.push_back(workspace_.path());
  std::vector<std::string> accepted = refused;
  accepted.push_back("--accept-weaker-worker");
  accepted.push_back("mount");
  for (std::vector<std::string>* argv : {&refused, &accepted}) {
    argv->push_back("--");
    for (const char* arg : {"/bin/sh", "-c", "touch written; echo agent-ran"}) {
      argv->push_back(arg);
    }
  }

  CommandResult refusal = RunCommand(refused, Options());
  EXPECT_EQ(refusal.exit_code, 125) << refusal;
  EXPECT_THAT(refusal.out, Not(HasSubstr("agent-ran"))) << refusal;
  EXPECT_THAT(refusal.err, HasSubstr("worker layer 'mount' cannot be applied")) << refusal;
  EXPECT_THAT(refusal.err, HasSubstr("user namespaces")) << refusal;
  EXPECT_THAT(refusal.err, HasSubstr("--accept-weaker-worker mount")) << refusal;

  CommandResult weaker = RunCommand(accepted, Options());
  EXPECT_EQ(weaker.exit_code, 0) << weaker;
  EXPECT_THAT(weaker.out, HasSubstr("agent-ran")) << weaker;
  EXPECT_THAT(weaker.err, HasSubstr("accepted missing: mount")) << weaker;
  struct stat info;
  EXPECT_NE(::stat(workspace_.Child("written").c_str(), &info), 0) << "Landlock let it write";
}

// The whole worker tree dies with the broker (bwrap's parent-death signal and
// --die-with-parent). The worker cannot report its pid to the host (it cannot write, and its
// pids are the pid namespace's), so it is found by a unique marker in its command line.
TEST_P(FullConfinementTest, WorkerTreeDiesWithTheBroker) {
  const std::string suffix = absl::StrCat("-marker-", ::getpid(), "-", static_cast<int>(GetParam()));
  // Only the worker's python3 has the marker verbatim in its command line: the shells build it
  // from two pieces, and pgrep looks for it with a pattern that does not match itself.
  const std::string pattern = absl::StrCat("[a]irlock-worker-tree", suffix);
  RunOptions options = Options();
  options.timeout_seconds = 20;
  CommandResult result = RunCommand(
      {"/bin/sh", "-c",
       absl::StrCat(AirlockBinary(GetParam()), " run --workspace ", workspace_.path(),
                    " -- /bin/sh -c 'm=airlock-worker-tree; sleep 300 & exec python3 -c "
                    "\"import time; time.sleep(300)\" \"$m", suffix, "\"' & broker=$!; "
                    "for i in $(seq 200); do pgrep -f ", pattern,
                    " >/dev/null && break; sleep 0.05; done; "
                    "pgrep -f ", pattern, " >/dev/null && echo worker-started; "
                    "kill -KILL $broker; "
                    "for i in $(seq 100); do pgrep -f ", pattern,
                    " >/dev/null || break; sleep 0.05; done; "
                    "if pgrep -f ", pattern, " >/dev/null; then echo worker-alive; "
                    "pgrep -f ", pattern, " | xargs -r kill -KILL; else echo worker-gone; fi")},
      options);
  EXPECT_THAT(result.out, HasSubstr("worker-started")) << result;
  EXPECT_THAT(result.out, HasSubstr("worker-gone")) << result;
}

INSTANTIATE_TEST_SUITE_P(Identities, FullConfinementTest, ::testing::ValuesIn(IdentitiesToTest()),
                         RunAsName);

}  // namespace
}  // namespace airlock::integration
