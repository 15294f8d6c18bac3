// Fuzzes the tool gateway's path-argument detector: bytes parsed as JSON arguments, every
// path-like string (and key) classified against a small real tree with links (inside, outside, into
// protected storage and the broker's storage, dangling, a loop). Never a crash; every result
// names an argument that exists and holds that string, resolves to an absolute canonical
// path, and stays within the bounds; every refusal has a message.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "broker/fs/file_tools.h"
#include "broker/gateway/path_arguments.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "tests/testing/temp_dir.h"

namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

std::string MakeTempDir() {
  char pattern[] = "/tmp/airlock-fuzz-path-arguments-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) std::abort();
  return pattern;
}

struct Tree {
  std::string base;
  std::unique_ptr<airlock::broker::FileTools> files;
};

Tree& TheTree() {
  static Tree* const tree = [] {
    auto* t = new Tree;
    t->base = MakeTempDir();
    std::atexit([] { airlock::testing::RemoveTree(TheTree().base); });
    const std::string ws = t->base + "/ws";
    const std::string home = t->base + "/home";
    for (const std::string& dir : {ws, home, ws + "/dir", ws + "/.git", ws + "/.git/hooks",
                                   t->base + "/out"}) {
      ::mkdir(dir.c_str(), 0755);
    }
    ::symlink("dir", (ws + "/inside").c_str());
    ::symlink("/etc", (ws + "/outside").c_str());
    ::symlink("missing/target", (ws + "/dangling").c_str());
    ::symlink("../out/new", (ws + "/dangling_out").c_str());
    ::symlink(".git/hooks", (ws + "/hooks").c_str());
    ::symlink(home.c_str(), (ws + "/home").c_str());
    ::symlink("loop2", (ws + "/loop1").c_str());
    ::symlink("loop1", (ws + "/loop2").c_str());
    airlock::broker::FileToolsOptions options;
    options.roots = {ws};
    options.broker_secret_paths = {home};
    options.sweep_temporary_files = false;
    auto files = airlock::broker::FileTools::Create(options);
    if (!files.ok()) std::abort();
    t->files = *std::move(files);
    return t;
  }();
  return *tree;
}

std::string EscapedToken(const std::string& key) {
  std::string out = "/";
  for (char c : key) {
    if (c == '~') {
      out.append("~0");
    } else if (c == '/') {
      out.append("~1");
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// The string at a JSON pointer, or nullptr.
const std::string* At(const Struct& root, const std::string& pointer) {
  const Value* current = nullptr;
  const Struct* object = &root;
  size_t at = 0;
  while (at < pointer.size()) {
    if (pointer[at] != '/') return nullptr;
    const size_t next = pointer.find('/', at + 1);
    std::string token = pointer.substr(at + 1, next == std::string::npos ? std::string::npos
                                                                         : next - at - 1);
    std::string key;
    for (size_t i = 0; i < token.size(); ++i) {
      if (token[i] == '~' && i + 1 < token.size()) {
        key.push_back(token[i + 1] == '1' ? '/' : '~');
        ++i;
      } else {
        key.push_back(token[i]);
      }
    }
    if (object != nullptr) {
      auto it = object->fields().find(key);
      if (it == object->fields().end()) return nullptr;
      current = &it->second;
    } else if (current != nullptr && current->kind_case() == Value::kListValue) {
      char* end = nullptr;
      const unsigned long index = std::strtoul(key.c_str(), &end, 10);
      if (key.empty() || *end != '\0' ||
          index >= static_cast<unsigned long>(current->list_value().values_size())) {
        return nullptr;
      }
      current = &current->list_value().values(static_cast<int>(index));
    } else {
      return nullptr;
    }
    object = current->kind_case() == Value::kStructValue ? &current->struct_value() : nullptr;
    at = next == std::string::npos ? pointer.size() : next;
  }
  if (current == nullptr || current->kind_case() != Value::kStringValue) return nullptr;
  return &current->string_value();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Tree& tree = TheTree();
  Struct arguments;
  const std::string json(reinterpret_cast<const char*>(data), size);
  if (!google::protobuf::util::JsonStringToMessage(json, &arguments).ok()) return 0;

  auto found = airlock::broker::FindPathArguments(arguments);
  auto classified = airlock::broker::ClassifyPathArguments(*tree.files, arguments);
  if (!found.ok()) {
    // The pure walk's refusal is the classification's refusal.
    if (classified.ok() || found.status().message().empty()) std::abort();
    return 0;
  }
  if (found->size() > airlock::broker::kMaxPathArguments) std::abort();
  for (const auto& [pointer, value] : *found) {
    // A value at the pointer, or a key with a separator naming the member there.
    const std::string* held = At(arguments, pointer);
    const bool is_key = (value.find('/') != std::string::npos ||
                         value.find('\\') != std::string::npos) &&
                        absl::EndsWith(pointer, EscapedToken(value));
    if ((held == nullptr || *held != value) && !is_key) std::abort();
  }
  if (!classified.ok()) {
    if (classified.status().message().empty()) std::abort();
    return 0;
  }
  if (classified->size() != found->size()) std::abort();
  for (size_t i = 0; i < classified->size(); ++i) {
    const airlock::broker::PathArgument& argument = (*classified)[i];
    if (argument.pointer != (*found)[i].first || argument.value != (*found)[i].second) {
      std::abort();
    }
    const std::string& canonical = argument.target.canonical_path;
    if (canonical.empty() || canonical[0] != '/' || canonical.find("//") != std::string::npos ||
        canonical.find("/../") != std::string::npos || canonical.find('\\') != std::string::npos ||
        argument.target.rule.empty()) {
      std::abort();
    }
  }
  const auto worst = airlock::broker::MostRestrictive(*classified);
  if (worst.has_path != !classified->empty()) std::abort();
  return 0;
}
