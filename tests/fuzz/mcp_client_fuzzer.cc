// Fuzzes the MCP client with arbitrary server output: whatever a server prints (the bytes of
// one input, then end of file), the handshake, tools/list and tools/call end with a result or
// a clear failure — no crash, no hang, nothing unbounded.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "broker/mcp/mcp_client.h"
#include "google/protobuf/struct.pb.h"

namespace {

struct Pipe {
  int read = -1;
  int write = -1;
  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) == 0) {
      read = fds[0];
      write = fds[1];
    }
  }
  ~Pipe() {
    if (read >= 0) ::close(read);
    if (write >= 0) ::close(write);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The whole server output fits the pipe (64 KiB, the fuzzer's -max_len): written, then EOF.
  if (size > 65536) return 0;
  Pipe from_server;
  Pipe to_server;
  if (from_server.read < 0 || to_server.read < 0) return 0;
  ::fcntl(from_server.write, F_SETPIPE_SZ, 1 << 17);
  ::fcntl(to_server.read, F_SETPIPE_SZ, 1 << 17);
  size_t written = 0;
  while (written < size) {
    const ssize_t n = ::write(from_server.write, data + written, size - written);
    if (n <= 0) return 0;
    written += static_cast<size_t>(n);
  }
  ::close(from_server.write);
  from_server.write = -1;

  airlock::broker::McpLimits limits;
  limits.max_line_bytes = 16 * 1024;
  limits.max_tools = 50;
  limits.max_pages = 5;
  auto client = airlock::broker::McpClient::Connect(to_server.write, from_server.read, "fuzz",
                                                    absl::Milliseconds(200), limits);
  if (!client.ok()) return 0;
  (void)(*client)->ListTools(absl::Milliseconds(200));
  google::protobuf::Struct arguments;
  (*arguments.mutable_fields())["text"].set_string_value("x");
  (void)(*client)->CallTool("echo", arguments, absl::Milliseconds(200));
  return 0;
}
