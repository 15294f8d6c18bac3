// The broker's file tools (SPEC §5): read, list, write and edit on behalf of the worker.
// Every path the worker sends is untrusted; errors carry wire codes (broker/wire_error.h).
#ifndef BROKER_FS_FILE_TOOLS_H_
#define BROKER_FS_FILE_TOOLS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "airlock/v1/wire.pb.h"

namespace airlock::broker {

struct FileToolsOptions {
  // Canonical-or-not directories; the first is the workspace. Fixed at Create().
  std::vector<std::string> roots;
  // Extra protected paths (--protect), and the broker's own storage (AIRLOCK_HOME, audit log,
  // key, runtime directory) — all protected from every restricted write.
  std::vector<std::string> protected_paths;
  // Reads outside the roots are allowed unless this is set (--read-scope workspace).
  bool reads_confined_to_roots = false;
  uint64_t max_file_bytes = 16u << 20;
  uint32_t max_list_entries = 10000;
};

class FileTools {
 public:
  static absl::StatusOr<std::unique_ptr<FileTools>> Create(FileToolsOptions options);
  virtual ~FileTools() = default;

  virtual absl::StatusOr<v1::ReadResult> Read(const v1::ReadRequest& request) = 0;
  virtual absl::StatusOr<v1::ListResult> List(const v1::ListRequest& request) = 0;
  virtual absl::StatusOr<v1::WriteResult> Write(const v1::WriteRequest& request) = 0;
  virtual absl::StatusOr<v1::EditResult> Edit(const v1::EditRequest& request) = 0;
};

}  // namespace airlock::broker

#endif  // BROKER_FS_FILE_TOOLS_H_
