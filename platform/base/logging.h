// A small logger for the broker's own diagnostics (stderr), and a raw, allocation-free
// variant for code between fork() and exec().
#ifndef PLATFORM_BASE_LOGGING_H_
#define PLATFORM_BASE_LOGGING_H_

#include "absl/strings/string_view.h"

#include "absl/strings/str_cat.h"

namespace airlock {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Messages below this level are dropped. From AIRLOCK_LOG_LEVEL (debug|info|warning|error),
// default warning.
LogLevel MinLogLevel();
void SetMinLogLevel(LogLevel level);

// Writes "airlock: <level>: <message>\n" to stderr in one write(2).
void LogMessage(LogLevel level, absl::string_view message);

// Async-signal-safe: no allocation, no locks. For the child side of fork().
void RawLog(const char* message);
// RawLog of "<prefix>: <strerror(errno)>" and _exit(status).
[[noreturn]] void RawDie(const char* prefix, int exit_status);

}  // namespace airlock

#define AIRLOCK_LOG(level, ...)                                             \
  do {                                                                      \
    if (::airlock::LogLevel::level >= ::airlock::MinLogLevel())             \
      ::airlock::LogMessage(::airlock::LogLevel::level, absl::StrCat(__VA_ARGS__)); \
  } while (false)

#endif  // PLATFORM_BASE_LOGGING_H_
