#include "integration/proc_sampler.h"

#include <dirent.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace airlock::integration {
namespace {

uint64_t StatusField(const std::string& status, const std::string& name) {
  const size_t at = status.find("\n" + name + ":");
  if (at == std::string::npos) return 0;
  size_t start = at + name.size() + 2;
  while (start < status.size() && (status[start] == ' ' || status[start] == '\t')) ++start;
  size_t end = start;
  while (end < status.size() && status[end] >= '0' && status[end] <= '9') ++end;
  uint64_t value = 0;
  (void)absl::SimpleAtoi(status.substr(start, end - start), &value);
  return value;
}

}  // namespace

std::ostream& operator<<(std::ostream& out, const ProcPeaks& peaks) {
  return out << "peak VmRSS " << peaks.rss_kib / 1024.0 << " MiB, VmHWM "
             << peaks.hwm_kib / 1024.0 << " MiB, peak descriptors " << peaks.descriptors
             << ", peak threads " << peaks.threads << " (" << peaks.samples << " samples)";
}

void ProcSampler::Start(pid_t pid, int interval_ms) {
  pid_ = pid;
  interval_ms_ = interval_ms;
  thread_ = std::thread([this] {
    // Until the process is the broker (it may still be setpriv, say), look every millisecond:
    // a short run must not end before its first sample.
    bool seen = false;
    while (!stop_) {
      seen |= SampleOnce();
      std::this_thread::sleep_for(std::chrono::milliseconds(seen ? interval_ms_ : 1));
    }
  });
}

void ProcSampler::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

ProcPeaks ProcSampler::peaks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peaks_;
}

bool ProcSampler::SampleOnce() {
  const std::string base = absl::StrCat("/proc/", pid_);
  std::ifstream file(base + "/status");
  if (!file) return false;
  std::string status = "\n";
  status.append(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  // A process that has exec'd into something else, or exited, is not the broker any more.
  if (status.find("\nName:\tairlock") == std::string::npos) return false;
  uint64_t descriptors = 0;
  if (DIR* dir = ::opendir((base + "/fd").c_str())) {
    while (dirent* entry = ::readdir(dir)) {
      if (entry->d_name[0] != '.') ++descriptors;
    }
    ::closedir(dir);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  ++peaks_.samples;
  peaks_.rss_kib = std::max(peaks_.rss_kib, StatusField(status, "VmRSS"));
  peaks_.hwm_kib = std::max(peaks_.hwm_kib, StatusField(status, "VmHWM"));
  peaks_.threads = std::max(peaks_.threads, StatusField(status, "Threads"));
  peaks_.descriptors = std::max(peaks_.descriptors, descriptors);
  return true;
}

}  // namespace airlock::integration
