// Fuzzes a request handled by the broker's dispatcher end to end, against a temporary
// workspace with the real file tools, policy, approval gate (approver: none), audit log and
// session store. Any bytes either fail to parse or get exactly one response with the request's
// id. Shell commands are swapped for get_context: a sandbox launch per input is too slow to
// fuzz, and the shell runner has its own tests.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "airlock/v1/wire.pb.h"
#include "broker/approval/approver.h"
#include "broker/audit/audit_key.h"
#include "broker/audit/audit_log.h"
#include "broker/dispatcher.h"
#include "broker/exec/shell_runner.h"
#include "broker/fs/file_tools.h"
#include "broker/policy/policy.h"
#include "broker/policy_state.h"
#include "broker/session/session_store.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker {
namespace {

struct Broker {
  std::unique_ptr<FileTools> files;
  std::unique_ptr<ShellRunner> shell;
  NoneApprover approver;
  std::unique_ptr<audit::AuditLog> audit;
  std::unique_ptr<SessionStore> session;
  std::unique_ptr<PolicyState> policy;
  std::unique_ptr<Dispatcher> dispatcher;
};

// A scratch directory removed when the fuzzer exits normally.
std::string MakeTempDir(const char* name) {
  static std::vector<std::string>* const dirs = [] {
    auto* list = new std::vector<std::string>;
    std::atexit([] {
      for (const std::string& dir : *dirs) airlock::testing::RemoveTree(dir);
    });
    return list;
  }();
  std::string pattern = std::string("/tmp/airlock-fuzz-") + name + "-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) std::abort();
  dirs->push_back(pattern);
  return pattern;
}

template <typename T>
T OrDie(absl::StatusOr<T> value) {
  if (!value.ok()) std::abort();
  return std::move(*value);
}

Broker& TheBroker() {
  static Broker* const broker = [] {
    auto* b = new Broker;
    const std::string workspace = MakeTempDir("workspace");
    const std::string home = MakeTempDir("home");
    FileToolsOptions file_options;
    file_options.roots = {workspace};
    file_options.broker_secret_paths = {home};
    b->files = OrDie(FileTools::Create(file_options));
    ShellRunnerOptions shell_options;
    shell_options.runtime_dir = home + "/run";
    b->shell = OrDie(ShellRunner::Create(shell_options));
    audit::AuditKeyOptions key_options;
    key_options.env_key = std::string(64, 'f');
    key_options.airlock_home = home;
    key_options.create_default = false;
    audit::AuditKey key = OrDie(audit::LoadOrCreateAuditKey(key_options));
    b->audit = OrDie(audit::AuditLog::Open(home + "/audit.jsonl", key, "fuzz"));
    b->session = OrDie(SessionStore::Create(home + "/sessions", "fuzz", "workspace-write", workspace));
    Policy policy = OrDie(PolicyBuilder()
                              .SetPreset(v1::PRESET_WORKSPACE_WRITE)
                              .SetMode(v1::MODE_ON_REQUEST)
                              .AddRoot(workspace)
                              .Build());
    v1::Context base;
    base.set_session_id("fuzz");
    b->policy = std::make_unique<PolicyState>(std::move(policy), base);
    BrokerServices services;
    services.files = b->files.get();
    services.shell = b->shell.get();
    services.approver = &b->approver;
    services.approval_timeout = absl::Milliseconds(1);
    services.audit = b->audit.get();
    services.session = b->session.get();
    services.policy = b->policy.get();
    b->dispatcher = std::make_unique<Dispatcher>(services);
    return b;
  }();
  return *broker;
}

}  // namespace
}  // namespace airlock::broker

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  airlock::v1::Request request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  if (request.has_bash()) request.mutable_get_context();
  airlock::v1::Response response =
      airlock::broker::TheBroker().dispatcher->Handle(request, 1, nullptr);
  if (response.id() != request.id()) std::abort();
  if (response.body_case() == airlock::v1::Response::BODY_NOT_SET) std::abort();
  if (response.has_error() && response.error().message().empty()) std::abort();
  return 0;
}
