// A temporary directory removed (recursively, without following links) when the test ends.
#ifndef TESTS_TESTING_TEMP_DIR_H_
#define TESTS_TESTING_TEMP_DIR_H_

#include <string>
#include <vector>

namespace airlock::testing {

class TempDir {
 public:
  // Created under $TMPDIR (or /tmp), mode 0700, canonical path.
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string Child(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Writes `content` to `path` (creating or truncating); aborts the test binary on failure.
void WriteFileOrDie(const std::string& path, const std::string& content);
// The whole content of `path`, or "<missing>" when it cannot be read.
std::string ReadFileOrMissing(const std::string& path);
// Whether user extended attributes (user.*) can be set on files in `dir`.
bool UserXattrsWork(const std::string& dir);
// Removes a tree without following links.
void RemoveTree(const std::string& path);
// The names in directory `dir` but "." and "..", sorted (empty when it cannot be read).
std::vector<std::string> SortedNames(const std::string& dir);

}  // namespace airlock::testing

#endif  // TESTS_TESTING_TEMP_DIR_H_
