// The framing of `airlock mcp`'s input: the client's bytes cut into messages, one per line.
// A line ends at '\n' (a '\r' before it is dropped); blank lines are skipped; a line longer
// than the bound is skipped whole — never buffered past the bound — and reported once.
#ifndef WORKER_MCP_LINE_READER_H_
#define WORKER_MCP_LINE_READER_H_

#include <cstddef>
#include <functional>
#include <string>

#include "absl/strings/string_view.h"

namespace airlock::worker {

class McpLineReader {
 public:
  struct Sinks {
    std::function<void(absl::string_view)> line;
    std::function<void()> overlong;
  };

  McpLineReader(size_t max_line_bytes, Sinks sinks)
      : max_line_bytes_(max_line_bytes), sinks_(std::move(sinks)) {}

  // The next bytes of the stream, in any pieces.
  void Feed(absl::string_view data);
  // The end of the stream: a last line without a newline is a line too.
  void Finish();

 private:
  void Complete();

  size_t max_line_bytes_;
  Sinks sinks_;
  std::string buffer_;
  bool skipping_ = false;  // inside a line longer than the bound
};

}  // namespace airlock::worker

#endif  // WORKER_MCP_LINE_READER_H_
