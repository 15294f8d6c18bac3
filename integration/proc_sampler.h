// Samples a process's memory, descriptors and threads from /proc while a test runs, keeping
// the peaks (the reliability tests bound the broker with these).
#ifndef INTEGRATION_PROC_SAMPLER_H_
#define INTEGRATION_PROC_SAMPLER_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <ostream>
#include <thread>

namespace airlock::integration {

struct ProcPeaks {
  uint64_t samples = 0;
  uint64_t rss_kib = 0;      // highest VmRSS seen
  uint64_t hwm_kib = 0;      // last VmHWM seen (the kernel's own peak of the process)
  uint64_t descriptors = 0;  // most entries seen in /proc/PID/fd
  uint64_t threads = 0;      // most threads seen
};

std::ostream& operator<<(std::ostream& out, const ProcPeaks& peaks);

class ProcSampler {
 public:
  ProcSampler() = default;
  ~ProcSampler() { Stop(); }
  ProcSampler(const ProcSampler&) = delete;
  ProcSampler& operator=(const ProcSampler&) = delete;

  // Samples `pid` every `interval_ms` until Stop() or the process is gone.
  void Start(pid_t pid, int interval_ms = 20);
  void Stop();
  ProcPeaks peaks() const;

 private:
  // Whether the process could be sampled (it is the broker, and alive).
  bool SampleOnce();

  pid_t pid_ = -1;
  int interval_ms_ = 20;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  mutable std::mutex mutex_;
  ProcPeaks peaks_;  // guarded by mutex_
};

// Whether this binary was built with AddressSanitizer (bounds and sizes scale with it).
constexpr bool kSanitized =
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
    true;
#else
    false;
#endif
#elif defined(__SANITIZE_ADDRESS__)
    true;
#else
    false;
#endif

}  // namespace airlock::integration

#endif  // INTEGRATION_PROC_SAMPLER_H_
