// Filling a command tool's argv: whole-element and inline placeholders, arrays, absent
// optional arguments, braces, and every refusal (unknown, missing, wrong type, enum, objects,
// NUL bytes, sizes) naming the tool and the argument.
#include "broker/gateway/argv_template.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "broker/gateway/tool_config.h"
#include "broker/wire_error.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace airlock::broker {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::IsOk;
using testing::StatusIs;

google::protobuf::Struct Json(const std::string& text) {
  google::protobuf::Struct out;
  const auto status = google::protobuf::util::JsonStringToMessage(text, &out);
  EXPECT_TRUE(status.ok()) << text;
  return out;
}

constexpr char kParameters[] = R"({
  "type": "object",
  "properties": {
    "path": {"type": "string"},
    "files": {"type": "array", "items": {"type": "string"}},
    "mixed": {"type": "array"},
    "count": {"type": "integer"},
    "ratio": {"type": "number"},
    "force": {"type": "boolean"},
    "style": {"type": "string", "enum": ["google", "llvm"]},
    "opts": {"type": "object"},
    "note": {"type": "string"}
  },
  "required": ["path"]
})";

// A validated tool with `argv` and the parameters above.
v1::CommandTool Tool(const std::vector<std::string>& argv) {
  std::string json = absl::StrCat(R"({"commandTools": [{"name": "tool", "parameters": )",
                                  kParameters, R"(, "argv": [)");
  for (size_t i = 0; i < argv.size(); ++i) {
    std::string quoted;
    const auto status = google::protobuf::util::MessageToJsonString(
        [&] {
          google::protobuf::Value v;
          v.set_string_value(argv[i]);
          return v;
        }(),
        &quoted);
    EXPECT_TRUE(status.ok());
    absl::StrAppend(&json, i ? ", " : "", quoted);
  }
  json += "]}]}";
  auto config = ParseToolsConfig(json, "test");
  EXPECT_THAT(config, IsOk()) << json;
  return config.ok() ? config->command_tools(0) : v1::CommandTool();
}

std::vector<std::string> Fill(const std::vector<std::string>& argv, const std::string& args) {
  auto filled = FillArgv(Tool(argv), Json(args));
  EXPECT_THAT(filled, IsOk()) << args;
  return filled.ok() ? *filled : std::vector<std::string>{"<failed>"};
}

absl::Status Refusal(const std::vector<std::string>& argv, const std::string& args) {
  auto filled = FillArgv(Tool(argv), Json(args));
  EXPECT_FALSE(filled.ok()) << args;
  return filled.status();
}

TEST(FillArgvTest, WholeElementPlaceholdersBecomeOneElementEach) {
  EXPECT_THAT(Fill({"cat", "--", "{path}"}, R"({"path": "a file; rm -rf / $(x) `y`"})"),
              ElementsAre("cat", "--", "a file; rm -rf / $(x) `y`"));
  EXPECT_THAT(Fill({"cat", "{path}"}, R"({"path": ""})"), ElementsAre("cat", ""));
  EXPECT_THAT(Fill({"t", "{path}", "{count}", "{ratio}", "{force}"},
                   R"({"path": "p", "count": 42, "ratio": 0.5, "force": false})"),
              ElementsAre("t", "p", "42", "0.5", "false"));
  EXPECT_THAT(Fill({"t", "{count}", "{ratio}"}, R"({"path": "p", "count": -3, "ratio": 1e21})"),
              ElementsAre("t", "-3", "1e+21"));
}

// A string value the program would read as an option — and so as no path any check saw — is
// refused unless the template ends the options first with a literal "--" (found by review:
// `git log {rev}` with rev "--output=PATH" wrote anywhere).
TEST(FillArgvTest, AValueThatWouldBeAnOptionIsRefusedUnlessOptionsEnded) {
  for (const char* value : {"--output=/etc/x", "-o/etc/x", "--"}) {
    const std::string args = absl::StrCat(R"({"path": ")", value, R"("})");
    EXPECT_THAT(Refusal({"git", "log", "{path}"}, args),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("the program would read it as an option")))
        << value;
    EXPECT_THAT(Refusal({"cp", "{path}.bak", "x"}, args),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("argument path")))
        << value;
    EXPECT_THAT(Fill({"git", "log", "--", "{path}"}, args), ElementsAre("git", "log", "--", value));
  }
  EXPECT_THAT(Refusal({"sort", "{files}", "--", "{path}"},
                      R"({"path": "p", "files": ["a", "--output=/etc/x"]})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("argument files")));
  // The template's own option, a lone "-", and negative numbers stay as they are.
  EXPECT_THAT(Fill({"t", "--out={path}", "{path}", "{count}"}, R"({"path": "-", "count": -3})"),
              ElementsAre("t", "--out=-", "-", "-3"));
}

TEST(FillArgvTest, ArraysExpandToOneElementPerItem) {
  EXPECT_THAT(Fill({"fmt", "-i", "--", "{files}"},
                   R"({"path": "p", "files": ["a.c", "b c.c", "-x"]})"),
              ElementsAre("fmt", "-i", "--", "a.c", "b c.c", "-x"));
  EXPECT_THAT(Fill({"fmt", "{files}", "end"}, R"({"path": "p", "files": []})"),
              ElementsAre("fmt", "end"));
  EXPECT_THAT(Fill({"t", "{mixed}"}, R"({"path": "p", "mixed": ["s", 1, true]})"),
              ElementsAre("t", "s", "1", "true"));
}

TEST(FillArgvTest, InlinePlaceholdersSubstituteScalars) {
  EXPECT_THAT(Fill({"t", "--path={path}", "{path}:{count}:{force}"},
                   R"({"path": "a b", "count": 7, "force": true})"),
              ElementsAre("t", "--path=a b", "a b:7:true"));
}

TEST(FillArgvTest, DoubledBracesAreLiteral) {
  EXPECT_THAT(Fill({"t", "{{path}}", "{{{path}}}", "}}{{", "x{{"}, R"({"path": "p"})"),
              ElementsAre("t", "{path}", "{p}", "}{", "x{"));
}

TEST(FillArgvTest, AbsentOptionalArgumentsDropWholeElements) {
  EXPECT_THAT(Fill({"t", "{note}", "{path}", "{files}", "{style}"}, R"({"path": "p"})"),
              ElementsAre("t", "p"));
  // JSON null counts as absent.
  EXPECT_THAT(Fill({"t", "{note}", "{path}"}, R"({"path": "p", "note": null})"),
              ElementsAre("t", "p"));
}

TEST(FillArgvTest, AbsentArgumentsUsedInlineAreRefused) {
  const absl::Status status = Refusal({"t", "--note={note}"}, R"({"path": "p"})");
  EXPECT_EQ(WireCodeOf(status), v1::INVALID_ARGUMENT);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("tool tool: argument note: absent, but argv[1] needs it inline"));
}

TEST(FillArgvTest, ArgumentsAreValidatedAgainstTheSchema) {
  struct Case {
    std::string args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {R"({})", "argument path: required but absent"},
      {R"({"path": null})", "argument path: required but absent"},
      {R"({"path": "p", "pth": "x"})", "argument pth: no such parameter"},
      {R"({"path": 3})", "argument path: expected string, got number"},
      {R"({"path": ["a"]})", "argument path: expected string, got array"},
      {R"({"path": "p", "count": 1.5})", "argument count: expected integer, got number"},
      {R"({"path": "p", "count": "3"})", "argument count: expected integer, got string"},
      {R"({"path": "p", "count": 1e300})", "argument count: expected integer"},
      {R"({"path": "p", "ratio": "0.5"})", "argument ratio: expected number, got string"},
      {R"({"path": "p", "force": "true"})", "argument force: expected boolean, got string"},
      {R"({"path": "p", "files": "a.c"})", "argument files: expected array, got string"},
      {R"({"path": "p", "files": ["a", 2]})", "argument files: element 1: expected string"},
      {R"({"path": "p", "style": "gnu"})", "argument style: not one of the declared enum"},
      {R"({"path": "p", "opts": []})", "argument opts: expected object, got array"},
      {R"({"path": "a\u0000b"})", "argument path: NUL byte"},
      {R"({"path": "p", "mixed": ["ok", "a\u0000"]})", "argument mixed: NUL byte"},
      {R"({"path": "p", "opts": {"k\u0000": 1}})", "argument opts: NUL byte"},
  };
  for (const Case& c : cases) {
    const absl::Status status = Refusal({"t", "{path}"}, c.args);
    EXPECT_EQ(WireCodeOf(status), v1::INVALID_ARGUMENT) << c.args;
    EXPECT_THAT(std::string(status.message()), HasSubstr(absl::StrCat("tool tool: ", c.message)))
        << c.args;
  }
}

TEST(FillArgvTest, UnknownNamesAreEscapedInMessages) {
  const absl::Status status = Refusal(
      {"t", "{path}"}, absl::StrCat(R"({"path": "p", "\u001b]0;x)", std::string(300, 'n'),
                                    R"(": 1})"));
  const std::string message(status.message());
  EXPECT_EQ(message.find('\x1b'), std::string::npos);
  EXPECT_THAT(message, HasSubstr("argument \\x1b]0;x"));
  EXPECT_LT(message.size(), 200u);
}

TEST(FillArgvTest, ObjectsAndNestedArraysHaveNoArgvForm) {
  // The configuration refuses {opts} in a template; a Struct-built tool that skipped
  // validation must still not get one through.
  v1::CommandTool tool = Tool({"t", "{path}"});
  tool.set_argv(1, "{opts}");
  auto filled = FillArgv(tool, Json(R"({"path": "p", "opts": {"a": 1}})"));
  EXPECT_EQ(WireCodeOf(filled.status()), v1::INVALID_ARGUMENT);
  EXPECT_THAT(std::string(filled.status().message()),
              HasSubstr("argument opts: an object cannot become"));

  const absl::Status nested = Refusal({"t", "{mixed}"}, R"({"path": "p", "mixed": [["a"]]})");
  EXPECT_THAT(std::string(nested.message()),
              HasSubstr("argument mixed: element 0: only arrays of scalars"));
  const absl::Status object_item =
      Refusal({"t", "{mixed}"}, R"({"path": "p", "mixed": ["a", {"b": 1}]})");
  EXPECT_THAT(std::string(object_item.message()), HasSubstr("element 1"));
}

TEST(FillArgvTest, SizesAreBounded) {
  std::string many = R"({"path": "p", "files": [)";
  for (int i = 0; i < 5000; ++i) absl::StrAppend(&many, i ? "," : "", "\"f\"");
  many += "]}";
  const absl::Status count = Refusal({"t", "{files}"}, many);
  EXPECT_EQ(WireCodeOf(count), v1::TOO_LARGE);
  EXPECT_THAT(std::string(count.message()), HasSubstr("tool tool"));
  const std::string big = absl::StrCat(R"({"path": ")", std::string(600 << 10, 'a'), R"("})");
  EXPECT_EQ(WireCodeOf(Refusal({"t", "{path}", "{path}"}, big)), v1::TOO_LARGE);
  EXPECT_THAT(FillArgv(Tool({"t", "{path}"}), Json(big)), IsOk());
}

TEST(FillArgvTest, UnvalidatedToolsAreRefusedNotRun) {
  v1::CommandTool tool = Tool({"t", "{path}"});
  tool.set_argv(1, "{nope}");
  EXPECT_THAT(FillArgv(tool, Json(R"({"path": "p"})")),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("names no parameter")));
  tool.set_argv(0, "{path}");
  EXPECT_THAT(FillArgv(tool, Json(R"({"path": "p"})")),
              StatusIs(absl::StatusCode::kInternal));
  v1::CommandTool bad_schema = Tool({"t"});
  (*bad_schema.mutable_parameters()->mutable_fields())["type"].set_string_value("array");
  EXPECT_THAT(FillArgv(bad_schema, Json("{}")), StatusIs(absl::StatusCode::kInternal));
}

TEST(FillArgvTest, AToolWithoutParametersTakesNoArguments) {
  auto config = ParseToolsConfig(R"({"commandTools": [{"name": "date", "argv": ["date", "-u"]}]})",
                                 "test");
  ASSERT_THAT(config, IsOk());
  auto filled = FillArgv(config->command_tools(0), Json("{}"));
  ASSERT_THAT(filled, IsOk());
  EXPECT_THAT(*filled, ElementsAre("date", "-u"));
  EXPECT_THAT(FillArgv(config->command_tools(0), Json(R"({"x": 1})")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("argument x: no such")));
}

TEST(ParseTemplateElementTest, Pieces) {
  auto pieces = ParseTemplateElement("a{{b}}{c}-{d_e}");
  ASSERT_THAT(pieces, IsOk());
  ASSERT_EQ(pieces->size(), 4u);
  EXPECT_FALSE((*pieces)[0].placeholder);
  EXPECT_EQ((*pieces)[0].text, "a{b}");
  EXPECT_TRUE((*pieces)[1].placeholder);
  EXPECT_EQ((*pieces)[1].text, "c");
  EXPECT_EQ((*pieces)[2].text, "-");
  EXPECT_EQ((*pieces)[3].text, "d_e");
  for (const char* bad : {"{", "}", "{}", "a{b", "a}b", "{a}}", "{{a}", "{a{b}}", "{a.b}"}) {
    EXPECT_THAT(ParseTemplateElement(bad), StatusIs(absl::StatusCode::kInvalidArgument)) << bad;
  }
  auto empty = ParseTemplateElement("");
  ASSERT_THAT(empty, IsOk());
  EXPECT_TRUE(empty->empty());
}

}  // namespace
}  // namespace airlock::broker
