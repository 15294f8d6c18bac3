// Invariant checks: a broken invariant aborts (the third error regime of STYLE.md).
#ifndef PLATFORM_BASE_CHECK_H_
#define PLATFORM_BASE_CHECK_H_

#include <cstdlib>

#include "platform/base/logging.h"

#define AIRLOCK_CHECK(condition)                                                    \
  do {                                                                              \
    if (!(condition)) {                                                             \
      ::airlock::RawLog("invariant violated at " __FILE__ ": " #condition);        \
      std::abort();                                                                 \
    }                                                                               \
  } while (false)

#endif  // PLATFORM_BASE_CHECK_H_
