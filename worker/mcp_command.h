#ifndef WORKER_MCP_COMMAND_H_
#define WORKER_MCP_COMMAND_H_

#include "CLI/CLI.hpp"

namespace airlock::worker {

// Registers `airlock mcp`: an MCP server on stdin/stdout for the agent inside `airlock run`,
// whose tools are broker requests (mcp_bridge.h). Calls run concurrently, each on its own
// channel; notifications/cancelled hangs that channel up, and the broker cancels the call.
void AddMcpCommand(CLI::App& app, int& exit_code);

}  // namespace airlock::worker

#endif  // WORKER_MCP_COMMAND_H_
