// Micro benchmarks of the broker's hot paths (Google Benchmark): the frame codec, path
// canonicalization, one policy decision, an audit append without fsync, SHA-256, and the
// shell sandbox's protected-path scan of a workspace, and compiling the shell sandbox's seccomp
// filter (what every `airlock exec` process does once).
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "airlock/v1/wire.pb.h"
#include "benchmark/benchmark.h"
#include "broker/audit/audit_key.h"
#include "broker/audit/audit_log.h"
#include "broker/exec/protection_plan.h"
#include "broker/fs/digest.h"
#include "broker/fs/path_resolver.h"
#include "broker/policy/decision.h"
#include "broker/policy/policy.h"
#include "platform/ipc/frame_codec.h"
#include "platform/linux/shell_seccomp.h"
#include "tests/testing/temp_dir.h"

namespace airlock {
namespace {

std::string SerializedWrite(size_t content_bytes) {
  v1::ClientMessage message;
  message.mutable_request()->set_id(7);
  message.mutable_request()->mutable_write()->set_path("src/module/file.py");
  message.mutable_request()->mutable_write()->set_content(std::string(content_bytes, 'x'));
  return message.SerializeAsString();
}

void BM_FrameEncode(benchmark::State& state) {
  const std::string payload = SerializedWrite(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(ipc::EncodeFrame(payload));
  state.SetBytesProcessed(state.iterations() * payload.size());
}
BENCHMARK(BM_FrameEncode)->Arg(64)->Arg(4096)->Arg(1 << 20);

void BM_FrameDecodeAndParse(benchmark::State& state) {
  const std::string frame = *ipc::EncodeFrame(SerializedWrite(state.range(0)));
  for (auto _ : state) {
    ipc::FrameDecoder decoder;
    if (!decoder.Append(frame).ok()) state.SkipWithError("append failed");
    auto payload = decoder.Next();
    v1::ClientMessage message;
    benchmark::DoNotOptimize(message.ParseFromString(**payload));
  }
  state.SetBytesProcessed(state.iterations() * frame.size());
}
BENCHMARK(BM_FrameDecodeAndParse)->Arg(64)->Arg(4096)->Arg(1 << 20);

void BM_CanonicalizePath(benchmark::State& state) {
  testing::TempDir workspace;
  ::mkdir(workspace.Child("src").c_str(), 0755);
  ::mkdir(workspace.Child("src/module").c_str(), 0755);
  testing::WriteFileOrDie(workspace.Child("src/module/file.py"), "x");
  ::symlink("module", workspace.Child("src/link").c_str());
  for (auto _ : state) {
    benchmark::DoNotOptimize(broker::ResolvePath("src/link/file.py", workspace.path()));
  }
}
BENCHMARK(BM_CanonicalizePath);

void BM_PolicyDecision(benchmark::State& state) {
  auto policy = broker::PolicyBuilder()
                    .SetPreset(v1::PRESET_WORKSPACE_WRITE)
                    .SetMode(v1::MODE_ACCEPT_EDITS)
                    .AddRoot("/work/project")
                    .Build();
  if (!policy.ok()) {
    state.SkipWithError("policy");
    return;
  }
  broker::MutationPlan plan;
  plan.tool = "write";
  plan.canonical_path = "/work/project/src/a.py";
  plan.target_class = broker::TargetClass::kInsideRoots;
  const broker::ToolCall call =
      broker::ToolCall::Mutation(plan, v1::SANDBOX_PERMISSIONS_UNSPECIFIED, "");
  for (auto _ : state) benchmark::DoNotOptimize(broker::Decide(*policy, call));
}
BENCHMARK(BM_PolicyDecision);

void BM_AuditAppendBuffered(benchmark::State& state) {
  testing::TempDir dir;
  broker::audit::AuditKeyOptions key_options;
  key_options.env_key = std::string(64, 'a');
  key_options.airlock_home = dir.path();
  key_options.create_default = false;
  auto key = broker::audit::LoadOrCreateAuditKey(key_options);
  if (!key.ok()) {
    state.SkipWithError(std::string(key.status().message()).c_str());
    return;
  }
  auto log = broker::audit::AuditLog::Open(dir.Child("audit.jsonl"), *key, "bench");
  if (!log.ok()) {
    state.SkipWithError(std::string(log.status().message()).c_str());
    return;
  }
  broker::audit::AuditRecord record;
  record.event = broker::audit::AuditEvent::kResult;
  record.request_id = 1;
  record.tool = "write";
  record.target = "/work/project/src/a.py";
  record.content_sha256 = std::string(64, 'c');
  record.decision = "ok";
  record.preset = "workspace-write";
  for (auto _ : state) {
    benchmark::DoNotOptimize((*log)->Append(record, broker::audit::Durability::kBuffered));
  }
}
BENCHMARK(BM_AuditAppendBuffered);

void BM_Sha256(benchmark::State& state) {
  const std::string data(state.range(0), 'd');
  for (auto _ : state) benchmark::DoNotOptimize(broker::Sha256Hex(data));
  state.SetBytesProcessed(state.iterations() * data.size());
}
BENCHMARK(BM_Sha256)->Arg(4096)->Arg(1 << 20);

void BM_ShellSeccompProgram(benchmark::State& state) {
  for (auto _ : state) {
    auto program = linux_sandbox::BuildShellSeccompProgram({});
    if (!program.ok()) state.SkipWithError("cannot build the filter");
    benchmark::DoNotOptimize(program);
  }
}
BENCHMARK(BM_ShellSeccompProgram)->Unit(benchmark::kMicrosecond);

// A workspace of `range(0)` plain directories (ten per parent, two levels deep) and one nested
// repository: the scan every workspace-write shell call makes before bwrap starts.
void BM_ProtectionScan(benchmark::State& state) {
  testing::TempDir workspace;
  const int directories = static_cast<int>(state.range(0));
  for (int i = 0; i < directories / 10; ++i) {
    const std::string parent = workspace.Child(absl::StrCat("d", i));
    ::mkdir(parent.c_str(), 0755);
    for (int j = 0; j < 9; ++j) ::mkdir(absl::StrCat(parent, "/s", j).c_str(), 0755);
  }
  ::mkdir(workspace.Child("d0/s0/.git").c_str(), 0755);
  for (auto _ : state) {
    auto plan = broker::PlanProtection({workspace.path()}, {});
    if (!plan.ok()) state.SkipWithError("the scan failed");
    benchmark::DoNotOptimize(plan);
  }
  state.SetItemsProcessed(state.iterations() * directories);
}
BENCHMARK(BM_ProtectionScan)->Arg(100)->Arg(2000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace airlock

BENCHMARK_MAIN();
