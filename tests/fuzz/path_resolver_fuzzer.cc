// Fuzzes path canonicalization against a small real tree with links (inside, outside,
// dangling, a loop): any requested string is resolved to an absolute canonical path or refused
// with a message; never a crash, never a relative or non-canonical result.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/match.h"
#include "broker/fs/path_resolver.h"
#include "tests/testing/temp_dir.h"

namespace {

const std::string& Workspace() {
  static const std::string* const kWorkspace = [] {
    char pattern[] = "/tmp/airlock-fuzz-paths-XXXXXX";
    if (::mkdtemp(pattern) == nullptr) std::abort();
    auto* root = new std::string(pattern);
    std::atexit([] { airlock::testing::RemoveTree(Workspace()); });
    ::mkdir((*root + "/dir").c_str(), 0755);
    ::mkdir((*root + "/dir/sub").c_str(), 0755);
    ::symlink("sub", (*root + "/dir/inside").c_str());
    ::symlink("/etc", (*root + "/outside").c_str());
    ::symlink("missing/target", (*root + "/dangling").c_str());
    ::symlink("loop2", (*root + "/loop1").c_str());
    ::symlink("loop1", (*root + "/loop2").c_str());
    return root;
  }();
  return *kWorkspace;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string requested(reinterpret_cast<const char*>(data), size);
  auto resolved = airlock::broker::ResolvePath(requested, Workspace());
  if (resolved.ok()) {
    const std::string& canonical = resolved->canonical;
    if (canonical.empty() || canonical[0] != '/') std::abort();
    if (absl::StrContains(canonical, "//") || absl::StrContains(canonical, "/./") ||
        absl::StrContains(canonical, "/../") || absl::EndsWith(canonical, "/..") ||
        absl::EndsWith(canonical, "/.")) {
      std::abort();
    }
    if (canonical.find('\0') != std::string::npos) std::abort();
  } else if (resolved.status().message().empty()) {
    std::abort();
  }
  return 0;
}
