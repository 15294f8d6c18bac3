#include "worker/mcp_line_reader.h"

namespace airlock::worker {

void McpLineReader::Feed(absl::string_view data) {
  while (!data.empty()) {
    const size_t newline = data.find('\n');
    const absl::string_view piece = data.substr(0, newline);
    if (!skipping_) {
      if (buffer_.size() + piece.size() > max_line_bytes_) {
        sinks_.overlong();
        std::string().swap(buffer_);
        skipping_ = true;
      } else {
        buffer_.append(piece.data(), piece.size());
      }
    }
    if (newline == absl::string_view::npos) return;
    data.remove_prefix(newline + 1);
    Complete();
  }
}

void McpLineReader::Finish() { Complete(); }

void McpLineReader::Complete() {
  if (!skipping_) {
    absl::string_view line = buffer_;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") != absl::string_view::npos) sinks_.line(line);
  }
  if (buffer_.capacity() > (1u << 20)) {
    std::string().swap(buffer_);  // a large write's line is not kept for the session
  } else {
    buffer_.clear();
  }
  skipping_ = false;
}

}  // namespace airlock::worker
