// tools.json: a full valid file parses; every validation refuses with a message naming the
// field; loading checks the file itself.
#include "broker/gateway/tool_config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker {
namespace {

using ::testing::HasSubstr;
using testing::IsOk;
using testing::StatusIs;

constexpr char kValid[] = R"json({
  "commandTools": [
    {
      "name": "fmt",
      "description": "Format files in place",
      "destructive": true,
      "parameters": {
        "type": "object",
        "properties": {
          "files": {"type": "array", "items": {"type": "string"}, "description": "what"},
          "style": {"type": "string", "enum": ["google", "llvm"]},
          "width": {"type": "integer"}
        },
        "required": ["files"],
        "additionalProperties": false
      },
      "argv": ["/usr/bin/clang-format", "-i", "--style={style}", "--width={{{width}}}", "--",
               "{files}"],
      "timeoutSeconds": 30
    },
    {"name": "date", "argv": ["date"]}
  ],
  "mcpServers": [
    {"name": "search", "command": "/usr/bin/python3", "args": ["server.py"],
     "timeoutSeconds": 10},
    {"name": "notes-2", "command": "notes-server"}
  ]
})json";

TEST(ToolConfigTest, AValidFileParses) {
  auto config = ParseToolsConfig(kValid, "tools.json");
  ASSERT_THAT(config, IsOk());
  ASSERT_EQ(config->command_tools_size(), 2);
  const v1::CommandTool& fmt = config->command_tools(0);
  EXPECT_EQ(fmt.name(), "fmt");
  EXPECT_TRUE(fmt.destructive());
  EXPECT_EQ(fmt.argv_size(), 6);
  EXPECT_EQ(fmt.timeout_seconds(), 30u);
  EXPECT_EQ(fmt.parameters().fields().at("type").string_value(), "object");
  EXPECT_FALSE(config->command_tools(1).destructive());
  ASSERT_EQ(config->mcp_servers_size(), 2);
  EXPECT_EQ(config->mcp_servers(0).args(0), "server.py");
  EXPECT_EQ(config->mcp_servers(1).timeout_seconds(), 0u);
}

TEST(ToolConfigTest, AnEmptyFileDeclaresNothing) {
  auto config = ParseToolsConfig("{}", "tools.json");
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->command_tools_size(), 0);
  EXPECT_EQ(config->mcp_servers_size(), 0);
}

struct BadCase {
  std::string json;
  std::string message;  // expected in the error, after the origin
};

// A command tool with `extra` spliced into its object.
std::string Tool(const std::string& extra) {
  return absl::StrCat(R"({"commandTools": [{"name": "ok", "argv": ["true"]}, {)", extra,
                      "}]}");
}

std::string Params(const std::string& parameters, const std::string& argv = R"(["true"])") {
  return Tool(absl::StrCat(R"("name": "t", "argv": )", argv, R"(, "parameters": )", parameters));
}

TEST(ToolConfigTest, EveryValidationNamesTheField) {
  const std::vector<BadCase> cases = {
      // The parser: syntax, unknown fields, wrong types, scalars for lists.
      {"{", ""},
      {R"({"tools": []})", "tools"},
      {Tool(R"("name": "t", "argv": ["true"], "shell": true)"), "shell"},
      {Tool(R"("name": "t", "argv": ["true"], "destructive": "yes")"),
       "commandTools[1].destructive: must be true or false"},
      {Tool(R"("name": "t", "argv": ["true"], "destructive": "false")"),
       "commandTools[1].destructive: must be true or false"},
      {Tool(R"("name": "t", "argv": ["true"], "destructive": 1)"), "destructive"},
      {Tool(R"("name": "t", "argv": ["true"], "timeoutSeconds": -1)"),
       "command_tools[1].timeout_seconds"},
      {R"({"commandTools": {"name": "t", "argv": ["true"]}})", "commandTools: must be a JSON array"},
      {Tool(R"("name": "t", "argv": "true")"), "commandTools[1].argv: must be a JSON array"},
      {R"({"mcpServers": [{"name": "s", "command": "x", "args": "a"}]})",
       "mcpServers[0].args: must be a JSON array"},
      // Names.
      {Tool(R"("argv": ["true"])"), "commandTools[1].name: \"\" is not a valid name"},
      {Tool(R"("name": "Fmt", "argv": ["true"])"), "commandTools[1].name: \"Fmt\""},
      {Tool(R"("name": "a.b", "argv": ["true"])"), "commandTools[1].name: \"a.b\""},
      {Tool(R"("name": "a b", "argv": ["true"])"), "commandTools[1].name"},
      {Tool(absl::StrCat(R"("name": ")", std::string(65, 'a'), R"(", "argv": ["true"])")),
       "commandTools[1].name"},
      {Tool(R"("name": "bash", "argv": ["true"])"),
       "commandTools[1].name: \"bash\" is a built-in tool"},
      {Tool(R"("name": "get_context", "argv": ["true"])"), "is a built-in tool"},
      {Tool(R"("name": "ls", "argv": ["true"])"), "is a built-in tool"},
      {Tool(R"("name": "ok", "argv": ["true"])"),
       "commandTools[1].name: \"ok\" is already declared by commandTools[0].name"},
      {R"({"commandTools": [{"name": "x", "argv": ["true"]}],
           "mcpServers": [{"name": "x", "command": "srv"}]})",
       "mcpServers[0].name: \"x\" is already declared by commandTools[0].name"},
      {R"({"mcpServers": [{"name": "s", "command": "a"}, {"name": "s", "command": "b"}]})",
       "mcpServers[1].name: \"s\" is already declared by mcpServers[0].name"},
      {R"({"mcpServers": [{"name": "s.t", "command": "a"}]})", "mcpServers[0].name"},
      {R"({"mcpServers": [{"name": "edit", "command": "a"}]})",
       "mcpServers[0].name: \"edit\" is a built-in tool"},
      // Programs.
      {Tool(R"("name": "t")"), "commandTools[1].argv: is empty"},
      {Tool(R"("name": "t", "argv": [])"), "commandTools[1].argv: is empty"},
      {Tool(R"("name": "t", "argv": [""])"), "commandTools[1].argv[0]: the program"},
      {Tool(R"("name": "t", "argv": ["bin/tool"])"),
       "commandTools[1].argv[0]: \"bin/tool\" must be an absolute path or a bare program name"},
      {Params(R"({"type": "object", "properties": {"p": {"type": "string"}}})", R"(["{p}"])"),
       "commandTools[1].argv[0]: the program must be literal text"},
      {Params(R"({"type": "object", "properties": {"p": {"type": "string"}}})",
              R"(["/bin/{p}"])"),
       "commandTools[1].argv[0]: the program must be literal text"},
      {Tool(R"("name": "t", "argv": ["tr\u0000ue"])"), "commandTools[1].argv[0]: NUL byte"},
      {Tool(R"("name": "t", "argv": ["true", "a\u0000"])"), "commandTools[1].argv[1]: NUL byte"},
      {R"({"mcpServers": [{"name": "s"}]})", "mcpServers[0].command: the program is empty"},
      {R"({"mcpServers": [{"name": "s", "command": "./srv"}]})",
       "mcpServers[0].command: \"./srv\" must be an absolute path"},
      {R"({"mcpServers": [{"name": "s", "command": "srv", "args": ["a\u0000"]}]})",
       "mcpServers[0].args[0]: NUL byte"},
      {Tool(R"("name": "t", "argv": ["true"], "timeoutSeconds": 86401)"),
       "commandTools[1].timeoutSeconds: 86401 is more than 86400 seconds"},
      {R"({"mcpServers": [{"name": "s", "command": "srv", "timeoutSeconds": 100000}]})",
       "mcpServers[0].timeoutSeconds"},
      // Templates.
      {Params(R"({"type": "object", "properties": {"path": {"type": "string"}}})",
              R"(["cat", "{pth}"])"),
       "commandTools[1].argv[1]: placeholder {pth} names no parameter"},
      {Tool(R"("name": "t", "argv": ["echo", "{x}"])"),
       "commandTools[1].argv[1]: placeholder {x} names no parameter"},
      {Tool(R"("name": "t", "argv": ["echo", "{"])"), "commandTools[1].argv[1]: an unclosed '{'"},
      {Tool(R"("name": "t", "argv": ["echo", "a}b"])"), "commandTools[1].argv[1]: a lone '}'"},
      {Tool(R"("name": "t", "argv": ["echo", "{}"])"), "commandTools[1].argv[1]: an empty"},
      {Tool(R"("name": "t", "argv": ["echo", "{a b}"])"),
       "commandTools[1].argv[1]: placeholder {a b} is not a parameter name"},
      {Params(R"({"type": "object", "properties": {"o": {"type": "object"}}})",
              R"(["echo", "{o}"])"),
       "commandTools[1].argv[1]: placeholder {o} names an object parameter"},
      {Params(R"({"type": "object", "properties": {"l": {"type": "array"}}})",
              R"(["echo", "--l={l}"])"),
       "commandTools[1].argv[1]: placeholder {l} names an array"},
      // Parameter schemas.
      {Params(R"({"properties": {}})"), "commandTools[1].parameters.type: must be \"object\""},
      {Params(R"({"type": "array"})"), "commandTools[1].parameters.type: must be \"object\""},
      {Params(R"({"type": "object", "properties": []})"),
       "commandTools[1].parameters.properties: must be an object"},
      {Params(R"({"type": "object", "properties": {"p": {"type": "str"}}})"),
       "commandTools[1].parameters.properties.p.type: unknown type \"str\""},
      {Params(R"({"type": "object", "properties": {"p": {"type": ["string", "null"]}}})"),
       "commandTools[1].parameters.properties.p.type: must be one type name"},
      {Params(R"({"type": "object", "properties": {"p": {}}})"),
       "commandTools[1].parameters.properties.p: missing \"type\""},
      {Params(R"({"type": "object", "properties": {"p": "string"}})"),
       "commandTools[1].parameters.properties.p: must be an object"},
      {Params(R"({"type": "object", "properties": {"a.b": {"type": "string"}}})"),
       "commandTools[1].parameters.properties.a.b: a parameter name may contain only"},
      {Params(R"({"type": "object", "properties": {"p": {"type": "string", "pattern": "x"}}})"),
       "commandTools[1].parameters.properties.p.pattern: unsupported schema keyword"},
      {Params(R"({"type": "object", "properties": {"p": {"type": "string", "default": "x"}}})"),
       "commandTools[1].parameters.properties.p.default: unsupported schema keyword"},
      {Params(R"({"type": "object", "properties": {"p": {"type": "string", "description": 3}}})"),
       "commandTools[1].parameters.properties.p.description: must be a string"},
      {Params(R"({"type": "object", "properties": {"p": {"type": "string", "items": {}}}})"),
       "commandTools[1].parameters.properties.p.items: only arrays have items"},
      {Params(R"({"type": "object", "properties": {"p": {"type": "array",
                  "items": {"type": "object"}}}})"),
       "commandTools[1].parameters.properties.p.items.type: array elements must be"},
      {Params(R"({"type": "object", "properties": {"p": {"type": "array",
                  "items": {"type": "string", "minLength": 1}}}})"),
       "commandTools[1].parameters.properties.p.items.minLength: unsupported"},
      {Params(R"({"type": "object", "properties": {"p": {"type": "string", "enum": []}}})"),
       "commandTools[1].parameters.properties.p.enum: must be a nonempty array"},
      {Params(R"({"type": "object", "properties": {"p": {"type": "string", "enum": ["a", 1]}}})"),
       "commandTools[1].parameters.properties.p.enum[1]: is not a string"},
      {Params(R"({"type": "object", "properties": {"p": {"type": "array", "enum": [[1]]}}})"),
       "commandTools[1].parameters.properties.p.enum: only scalar types take an enum"},
      {Params(R"({"type": "object", "properties": {"p": {"type": "integer", "enum": [1.5]}}})"),
       "commandTools[1].parameters.properties.p.enum[0]: is not a integer"},
      {Params(R"({"type": "object", "properties": {"p": {"type": "string"}},
                  "required": ["q"]})"),
       "commandTools[1].parameters.required[0]: \"q\" is not a declared property"},
      {Params(R"({"type": "object", "properties": {"p": {"type": "string"}},
                  "required": ["p", "p"]})"),
       "commandTools[1].parameters.required[1]: \"p\" listed twice"},
      {Params(R"({"type": "object", "required": "p"})"),
       "commandTools[1].parameters.required: must be an array"},
      {Params(R"({"type": "object", "properties": {"p": {"type": "string"}},
                  "required": [3]})"),
       "commandTools[1].parameters.required[0]: must be a parameter name"},
      {Params(R"({"type": "object", "additionalProperties": true})"),
       "commandTools[1].parameters.additionalProperties: only false is supported"},
      {Params(R"({"type": "object", "oneOf": []})"),
       "commandTools[1].parameters.oneOf: unsupported schema keyword"},
      {Params(R"({"type": "object", "description": 1})"),
       "commandTools[1].parameters.description: must be a string"},
  };
  for (const BadCase& c : cases) {
    const auto config = ParseToolsConfig(c.json, "tools.json");
    EXPECT_THAT(config, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)))
        << c.json;
    EXPECT_THAT(std::string(config.status().message()), ::testing::StartsWith("tools.json: "))
        << c.json;
  }
}

TEST(ToolConfigTest, NamesAndBuiltins) {
  EXPECT_TRUE(IsDeclaredName("a"));
  EXPECT_TRUE(IsDeclaredName("my-tool_2"));
  EXPECT_TRUE(IsDeclaredName(std::string(64, 'x')));
  EXPECT_FALSE(IsDeclaredName(std::string(65, 'x')));
  EXPECT_FALSE(IsDeclaredName(""));
  EXPECT_FALSE(IsDeclaredName("srv.tool"));
  EXPECT_FALSE(IsDeclaredName("Tool"));
  for (const char* builtin :
       {"read", "write", "edit", "list", "ls", "bash", "get_context", "cancel"}) {
    EXPECT_TRUE(IsBuiltinToolName(builtin)) << builtin;
  }
  EXPECT_FALSE(IsBuiltinToolName("fmt"));
}

class LoadToolsConfigTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& content, mode_t mode) {
    const std::string path = dir_.Child(name);
    testing::WriteFileOrDie(path, content);
    EXPECT_EQ(::chmod(path.c_str(), mode), 0);
    return path;
  }
  testing::TempDir dir_;
};

TEST_F(LoadToolsConfigTest, LoadsAFile) {
  auto config = LoadToolsConfig(Write("tools.json", kValid, 0600));
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->command_tools_size(), 2);
}

TEST_F(LoadToolsConfigTest, AMissingFileIsNotFound) {
  EXPECT_THAT(LoadToolsConfig(dir_.Child("absent.json")), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(LoadToolsConfigTest, ErrorsNameThePath) {
  const std::string path = Write("bad.json", R"({"commandTools": [{"name": "X"}]})", 0600);
  EXPECT_THAT(LoadToolsConfig(path),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(absl::StrCat(path, ": commandTools[0].name"))));
}

TEST_F(LoadToolsConfigTest, RefusesLinksDirectoriesAndWritableFiles) {
  const std::string target = Write("real.json", "{}", 0644);
  ASSERT_THAT(LoadToolsConfig(target), IsOk());
  ASSERT_EQ(::symlink(target.c_str(), dir_.Child("link.json").c_str()), 0);
  EXPECT_THAT(LoadToolsConfig(dir_.Child("link.json")), ::testing::Not(IsOk()));
  ASSERT_EQ(::mkdir(dir_.Child("dir.json").c_str(), 0755), 0);
  EXPECT_THAT(LoadToolsConfig(dir_.Child("dir.json")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a regular file")));
  EXPECT_THAT(LoadToolsConfig(Write("group.json", "{}", 0664)),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("writable by group")));
  EXPECT_THAT(LoadToolsConfig(Write("world.json", "{}", 0646)),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("0646")));
}

TEST_F(LoadToolsConfigTest, RefusesTooLargeFiles) {
  const std::string path =
      Write("big.json", absl::StrCat("{", std::string(2 << 20, ' '), "}"), 0600);
  EXPECT_THAT(LoadToolsConfig(path), ::testing::Not(IsOk()));
}

}  // namespace
}  // namespace airlock::broker
