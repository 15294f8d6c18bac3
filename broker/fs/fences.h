// Classification of a canonical target against the file tools' fences (SPEC §4, §5): the
// broker's own storage, protected storage (the shared list of profiles/protected_paths.h at
// any depth inside the roots, plus --protect paths), outside every root, inside the roots.
// What each class means under the active preset is the policy's decision.
#ifndef BROKER_FS_FENCES_H_
#define BROKER_FS_FENCES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "broker/fs/file_tools.h"

namespace airlock::broker {

struct Classification {
  TargetClass target_class = TargetClass::kInsideRoots;
  // "broker-secret:/root/.airlock", "protect:/srv/keys", "protected:.git/hooks",
  // "outside-roots", "inside-roots:/work".
  std::string rule;
  bool inside_roots = false;
};

class Fences {
 public:
  // Canonicalizes the --protect and broker-storage paths (relative ones against the
  // workspace; missing ones are protected where they would be created).
  [[nodiscard]] static absl::StatusOr<Fences> Create(
      const std::vector<std::string>& requested_protected_paths,
      const std::vector<std::string>& requested_secret_paths, const std::string& workspace);

  // `root` is the canonical root containing `canonical`, or empty when outside every root.
  // The broker's storage wins over protection, protection over containment. The shared
  // protected names are matched on every component of the canonical path, so a root that
  // itself lies inside a protected name (a workspace under .vscode/) is protected whole.
  Classification Classify(const std::string& canonical, absl::string_view root) const;

  const std::vector<std::string>& protected_paths() const { return protected_; }
  const std::vector<std::string>& secret_paths() const { return secrets_; }

 private:
  std::vector<std::string> protected_;
  std::vector<std::string> secrets_;
};

}  // namespace airlock::broker

#endif  // BROKER_FS_FENCES_H_
