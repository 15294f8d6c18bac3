#include "broker/fs/fences.h"

#include "absl/strings/str_cat.h"
#include "broker/fs/path_resolver.h"
#include "profiles/protected_paths.h"

namespace airlock::broker {
namespace {

absl::StatusOr<std::vector<std::string>> CanonicalAll(const std::vector<std::string>& requested,
                                                      const std::string& workspace) {
  std::vector<std::string> out;
  for (const std::string& path : requested) {
    auto resolved = ResolvePath(path, workspace);
    if (!resolved.ok()) return resolved.status();
    out.push_back(resolved->canonical);
  }
  return out;
}

}  // namespace

absl::StatusOr<Fences> Fences::Create(const std::vector<std::string>& requested_protected_paths,
                                      const std::vector<std::string>& requested_secret_paths,
                                      const std::string& workspace) {
  Fences fences;
  auto protected_paths = CanonicalAll(requested_protected_paths, workspace);
  if (!protected_paths.ok()) return protected_paths.status();
  fences.protected_ = std::move(*protected_paths);
  auto secrets = CanonicalAll(requested_secret_paths, workspace);
  if (!secrets.ok()) return secrets.status();
  fences.secrets_ = std::move(*secrets);
  return fences;
}

Classification Fences::Classify(const std::string& canonical, absl::string_view root) const {
  Classification result;
  result.inside_roots = !root.empty();
  for (const std::string& secret : secrets_) {
    if (PathIsWithin(canonical, secret)) {
      result.target_class = TargetClass::kBrokerSecret;
      result.rule = absl::StrCat("broker-secret:", secret);
      return result;
    }
  }
  for (const std::string& path : protected_) {
    if (PathIsWithin(canonical, path)) {
      result.target_class = TargetClass::kProtected;
      result.rule = absl::StrCat("protect:", path);
      return result;
    }
  }
  if (result.inside_roots) {
    std::string rule = profiles::MatchProtected(absl::string_view(canonical).substr(1));
    // Anything in a git directory, and a `.git` file (it names the git directory): git on the
    // host takes hooks and configuration from where `commondir`, a gitfile or a submodule's
    // `.git/modules/…/config` point, so for the file tools every `.git` component is
    // protected. (Shells get the precise list, protection_plan.h: git itself writes there.)
    if (rule.empty() && profiles::HasGitComponent(canonical)) rule = "protected:.git";
    if (!rule.empty()) {
      result.target_class = TargetClass::kProtected;
      result.rule = std::move(rule);
      return result;
    }
    result.target_class = TargetClass::kInsideRoots;
    result.rule = absl::StrCat("inside-roots:", root);
    return result;
  }
  result.target_class = TargetClass::kOutsideRoots;
  result.rule = "outside-roots";
  return result;
}

}  // namespace airlock::broker
