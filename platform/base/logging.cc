#include "platform/base/logging.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace airlock {
namespace {

LogLevel LevelFromEnvironment() {
  const char* value = std::getenv("AIRLOCK_LOG_LEVEL");
  if (value == nullptr) return LogLevel::kWarning;
  absl::string_view level(value);
  if (level == "debug") return LogLevel::kDebug;
  if (level == "info") return LogLevel::kInfo;
  if (level == "error") return LogLevel::kError;
  return LogLevel::kWarning;
}

std::atomic<int>& MinLevelStorage() {
  static std::atomic<int> level{static_cast<int>(LevelFromEnvironment())};
  return level;
}

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "?";
}

void WriteAll(const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(STDERR_FILENO, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    size -= static_cast<size_t>(n);
  }
}

}  // namespace

LogLevel MinLogLevel() { return static_cast<LogLevel>(MinLevelStorage().load()); }

void SetMinLogLevel(LogLevel level) { MinLevelStorage().store(static_cast<int>(level)); }

void LogMessage(LogLevel level, absl::string_view message) {
  std::string line = absl::StrCat("airlock: ", LevelName(level), ": ", message, "\n");
  WriteAll(line.data(), line.size());
}

void RawLog(const char* message) {
  WriteAll("airlock: ", 9);
  WriteAll(message, std::strlen(message));
  WriteAll("\n", 1);
}

void RawDie(const char* prefix, int exit_status) {
  int saved = errno;
  WriteAll("airlock: ", 9);
  WriteAll(prefix, std::strlen(prefix));
  WriteAll(": ", 2);
  // strerror is not formally async-signal-safe; strerrordesc_np only indexes a static table.
  const char* description = strerrordesc_np(saved);
  if (description == nullptr) description = "unknown error";
  WriteAll(description, std::strlen(description));
  WriteAll("\n", 1);
  _exit(exit_status);
}

}  // namespace airlock
