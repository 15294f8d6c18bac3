// The path-argument detector on a real tree: which strings count as paths (by name, by value,
// at any depth), how each is classified (links, dangling links, "..", absolute paths,
// protected names, the broker's storage), and the refusals (backslash, empty, too deep, too
// many).
#include "broker/gateway/path_arguments.h"

#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "broker/wire_error.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;
using testing::IsOk;
using testing::StatusIs;

google::protobuf::Struct Json(const std::string& text) {
  google::protobuf::Struct out;
  const auto status = google::protobuf::util::JsonStringToMessage(text, &out);
  EXPECT_TRUE(status.ok()) << text;
  return out;
}

using Found = std::vector<std::pair<std::string, std::string>>;

Found Find(const std::string& json) {
  auto found = FindPathArguments(Json(json));
  EXPECT_THAT(found, IsOk()) << json;
  return found.ok() ? *found : Found{};
}

TEST(IsPathLikeNameTest, NamesThatArePaths) {
  for (const char* name :
       {"path", "PATH", "Path", "paths", "file", "files", "filename", "fileName", "file_name",
        "file-name", "filepath", "filePath", "file_path", "FILE_PATH", "dir", "dirs",
        "directory", "folder", "target", "source", "src", "dest", "dst", "destination", "cwd",
        "root", "workdir", "work_dir", "working_directory", "output", "input", "location",
        "config_file", "configFile", "CONFIG_FILE", "outputDir", "output_dir", "XMLFile",
        "log_path", "logPath", "cache_folder", "build_dirs", "extraFiles", "out_dir"}) {
    EXPECT_TRUE(IsPathLikeName(name)) << name;
  }
}

TEST(IsPathLikeNameTest, NamesThatAreNot) {
  for (const char* name : {"", "query", "pattern", "content", "text", "message", "count",
                           "profile", "xpath", "filesystem", "directive", "sourcemap_enabled",
                           "name", "id", "mode", "compile", "dirty", "rooted", "pathological",
                           "targeted"}) {
    EXPECT_FALSE(IsPathLikeName(name)) << name;
  }
}

TEST(FindPathArgumentsTest, ByNameAndByValue) {
  EXPECT_THAT(Find(R"({"path": "a.txt", "query": "hello", "count": 3})"),
              ElementsAre(Pair("/path", "a.txt")));
  EXPECT_THAT(Find(R"({"query": "dir/a.txt", "text": "no slash here"})"),
              ElementsAre(Pair("/query", "dir/a.txt")));
  EXPECT_THAT(Find(R"({"pattern": "a\\d+"})"), ElementsAre(Pair("/pattern", "a\\d+")));
  EXPECT_THAT(Find(R"({"note": "/etc/passwd"})"), ElementsAre(Pair("/note", "/etc/passwd")));
  // A value starting with '.' names an entry of the working directory (found by review:
  // {"name": ".envrc"} passed unchecked).
  EXPECT_THAT(Find(R"({"name": ".envrc", "up": "..", "text": "no dot first."})"),
              ElementsAre(Pair("/name", ".envrc"), Pair("/up", "..")));
}

TEST(FindPathArgumentsTest, NonPathStringsAndOtherTypesAreLeftAlone) {
  EXPECT_THAT(Find(R"({"query": "hello", "message": "a b c", "n": 1, "flag": true,
                       "nothing": null, "path": 7, "file": false})"),
              IsEmpty());
  EXPECT_THAT(Find("{}"), IsEmpty());
}

TEST(FindPathArgumentsTest, NestedObjectsAndArraysInOrder) {
  EXPECT_THAT(
      Find(R"({"files": ["a", "b/c"], "opts": {"output": "o.txt", "label": "x",
               "deeper": {"dir": "d", "items": [{"source": "s"}, "plain", "p/q"]}},
               "words": ["one", "two"]})"),
      ElementsAre(Pair("/files/0", "a"), Pair("/files/1", "b/c"),
                  Pair("/opts/deeper/dir", "d"), Pair("/opts/deeper/items/0/source", "s"),
                  Pair("/opts/deeper/items/2", "p/q"), Pair("/opts/output", "o.txt")));
  // Arrays of arrays keep the name of the field that holds them.
  EXPECT_THAT(Find(R"({"paths": [["x"], ["y", ["z"]]]})"),
              ElementsAre(Pair("/paths/0/0", "x"), Pair("/paths/1/0", "y"),
                          Pair("/paths/1/1/0", "z")));
}

TEST(FindPathArgumentsTest, KeysWithSeparatorsArePathsToo) {
  EXPECT_THAT(Find(R"({"edits": {"src/a.c": "int x;", "plain": "y", "w\\in": 1}})"),
              ElementsAre(Pair("/edits/src~1a.c", "src/a.c"), Pair("/edits/w\\in", "w\\in")));
}

TEST(FindPathArgumentsTest, PointerTokensAreEscaped) {
  EXPECT_THAT(Find(R"({"a/b": {"c~d": "x/y"}})"),
              ElementsAre(Pair("/a~1b", "a/b"), Pair("/a~1b/c~0d", "x/y")));
}

std::string Nested(int depth, const std::string& inner) {
  std::string text = inner;
  for (int i = 0; i < depth; ++i) text = absl::StrCat("{\"k\": ", text, "}");
  return text;
}

TEST(FindPathArgumentsTest, DepthIsBounded) {
  // The top-level object is level 1.
  EXPECT_THAT(FindPathArguments(Json(Nested(31, R"({"path": "a"})"))), IsOk());
  EXPECT_THAT(FindPathArguments(Json(Nested(32, R"({"path": "a"})"))),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("deeper than 32")));
  std::string arrays = "\"x\"";
  for (int i = 0; i < 40; ++i) arrays = "[" + arrays + "]";
  const auto deep = FindPathArguments(Json(absl::StrCat(R"({"list": )", arrays, "}")));
  EXPECT_THAT(deep, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(WireCodeOf(deep.status()), v1::INVALID_ARGUMENT);
}

TEST(FindPathArgumentsTest, CountIsBounded) {
  auto many = [](int n) {
    std::string text = R"({"files": [)";
    for (int i = 0; i < n; ++i) absl::StrAppend(&text, i ? "," : "", "\"f", i, "\"");
    return text + "]}";
  };
  auto ok = FindPathArguments(Json(many(1000)));
  ASSERT_THAT(ok, IsOk());
  EXPECT_EQ(ok->size(), 1000u);
  EXPECT_THAT(FindPathArguments(Json(many(1001))),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("more than 1000")));
}

class ClassifyPathArgumentsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ws_ = base_.Child("ws");
    out_ = base_.Child("out");
    home_ = base_.Child("home");
    for (const std::string& dir : {ws_, out_, home_, ws_ + "/dir", ws_ + "/.git",
                                   ws_ + "/.git/hooks", ws_ + "/sub"}) {
      ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0) << dir;
    }
    testing::WriteFileOrDie(ws_ + "/a.txt", "alpha");
    testing::WriteFileOrDie(ws_ + "/dir/b.txt", "beta");
    testing::WriteFileOrDie(out_ + "/o.txt", "outside");
    testing::WriteFileOrDie(home_ + "/audit.key", "KEY");
    ASSERT_EQ(::symlink("dir/b.txt", (ws_ + "/link_in").c_str()), 0);
    ASSERT_EQ(::symlink((out_ + "/o.txt").c_str(), (ws_ + "/link_out").c_str()), 0);
    ASSERT_EQ(::symlink("new_in.txt", (ws_ + "/dangling_in").c_str()), 0);
    ASSERT_EQ(::symlink("../out/new_out.txt", (ws_ + "/dangling_out").c_str()), 0);
    ASSERT_EQ(::symlink(".git/hooks", (ws_ + "/hooks_link").c_str()), 0);
    ASSERT_EQ(::symlink(home_.c_str(), (ws_ + "/home_link").c_str()), 0);
    FileToolsOptions options;
    options.roots = {ws_};
    options.broker_secret_paths = {home_};
    options.sweep_temporary_files = false;
    auto files = FileTools::Create(options);
    ASSERT_THAT(files, IsOk());
    files_ = *std::move(files);
  }

  absl::StatusOr<std::vector<PathArgument>> Classify(const std::string& json) {
    return ClassifyPathArguments(*files_, Json(json));
  }

  // The one path argument of `json`, classified.
  PathArgument One(const std::string& json) {
    auto result = Classify(json);
    EXPECT_THAT(result, IsOk()) << json;
    if (!result.ok() || result->size() != 1) {
      ADD_FAILURE() << json << " gave " << (result.ok() ? result->size() : 0) << " arguments";
      return {};
    }
    return (*result)[0];
  }

  testing::TempDir base_;
  std::string ws_, out_, home_;
  std::unique_ptr<FileTools> files_;
};

TEST_F(ClassifyPathArgumentsTest, EachCaseLandsWhereTheFileToolsWouldPutIt) {
  struct Case {
    std::string json;
    std::string canonical;  // "$W" workspace, "$O" outside, "$H" home
    TargetClass target_class;
    std::string rule_prefix;
  };
  const std::vector<Case> cases = {
      {R"({"path": "a.txt"})", "$W/a.txt", TargetClass::kInsideRoots, "inside-roots"},
      {R"({"file": "dir/../a.txt"})", "$W/a.txt", TargetClass::kInsideRoots, "inside-roots"},
      {R"({"path": "link_in"})", "$W/dir/b.txt", TargetClass::kInsideRoots, "inside-roots"},
      {R"({"path": "dangling_in"})", "$W/new_in.txt", TargetClass::kInsideRoots,
       "inside-roots"},
      {R"({"dest": "new/deeper/file.txt"})", "$W/new/deeper/file.txt",
       TargetClass::kInsideRoots, "inside-roots"},
      {R"({"path": "../out/o.txt"})", "$O/o.txt", TargetClass::kOutsideRoots, "outside-roots"},
      {R"({"path": "dir/../../out/o.txt"})", "$O/o.txt", TargetClass::kOutsideRoots,
       "outside-roots"},
      {R"({"path": "link_out"})", "$O/o.txt", TargetClass::kOutsideRoots, "outside-roots"},
      {R"({"target": "dangling_out"})", "$O/new_out.txt", TargetClass::kOutsideRoots,
       "outside-roots"},
      {R"({"query": "$O/o.txt"})", "$O/o.txt", TargetClass::kOutsideRoots, "outside-roots"},
      {R"({"cwd": "/"})", "/", TargetClass::kOutsideRoots, "outside-roots"},
      {R"({"note": "$W/a.txt"})", "$W/a.txt", TargetClass::kInsideRoots, "inside-roots"},
      {R"({"path": ".git/hooks/pre-commit"})", "$W/.git/hooks/pre-commit",
       TargetClass::kProtected, "protected:.git/hooks"},
      {R"({"path": "hooks_link/post-merge"})", "$W/.git/hooks/post-merge",
       TargetClass::kProtected, "protected:.git/hooks"},
      {R"({"file": "sub/.bashrc"})", "$W/sub/.bashrc", TargetClass::kProtected,
       "protected:.bashrc"},
      {R"({"dir": "sub/.vscode"})", "$W/sub/.vscode", TargetClass::kProtected,
       "protected:.vscode"},
      {R"({"path": "sub/.git/config"})", "$W/sub/.git/config", TargetClass::kProtected,
       "protected:.git/config"},
      {R"({"name": ".envrc"})", "$W/.envrc", TargetClass::kProtected, "protected:.envrc"},
      {R"({"path": "home_link/audit.key"})", "$H/audit.key", TargetClass::kBrokerSecret,
       "broker-secret"},
      {R"({"x": "$H/audit.key"})", "$H/audit.key", TargetClass::kBrokerSecret,
       "broker-secret"},
  };
  auto expand = [&](std::string text) {
    for (auto [from, to] : {std::pair<std::string, std::string>{"$W", ws_}, {"$O", out_},
                            {"$H", home_}}) {
      for (size_t at = text.find(from); at != std::string::npos; at = text.find(from)) {
        text.replace(at, from.size(), to);
      }
    }
    return text;
  };
  for (const Case& c : cases) {
    const PathArgument argument = One(expand(c.json));
    EXPECT_EQ(argument.target.canonical_path, expand(c.canonical)) << c.json;
    EXPECT_EQ(argument.target.target_class, c.target_class) << c.json;
    EXPECT_THAT(argument.target.rule, ::testing::StartsWith(c.rule_prefix)) << c.json;
    EXPECT_EQ(argument.target.inside_roots, c.target_class == TargetClass::kInsideRoots ||
                                                c.target_class == TargetClass::kProtected)
        << c.json;
  }
}

TEST_F(ClassifyPathArgumentsTest, ExistenceIsReported) {
  EXPECT_TRUE(One(R"({"path": "a.txt"})").target.exists);
  EXPECT_FALSE(One(R"({"path": "dangling_in"})").target.exists);
}

TEST_F(ClassifyPathArgumentsTest, NestedArgumentsAreEachClassified) {
  auto result = Classify(
      R"({"files": ["a.txt", "../out/o.txt"], "opts": {"output": ".git/config"}, "q": "hi"})");
  ASSERT_THAT(result, IsOk());
  ASSERT_EQ(result->size(), 3u);
  EXPECT_EQ((*result)[0].pointer, "/files/0");
  EXPECT_EQ((*result)[0].target.target_class, TargetClass::kInsideRoots);
  EXPECT_EQ((*result)[1].pointer, "/files/1");
  EXPECT_EQ((*result)[1].value, "../out/o.txt");
  EXPECT_EQ((*result)[1].target.target_class, TargetClass::kOutsideRoots);
  EXPECT_EQ((*result)[2].pointer, "/opts/output");
  EXPECT_EQ((*result)[2].target.target_class, TargetClass::kProtected);

  const WorstPathTarget worst = MostRestrictive(*result);
  EXPECT_TRUE(worst.has_path);
  EXPECT_EQ(worst.target_class, TargetClass::kProtected);
  EXPECT_EQ(worst.rule, "protected:.git/config");
  EXPECT_EQ(worst.pointer, "/opts/output");
  EXPECT_EQ(worst.canonical_path, ws_ + "/.git/config");
}

TEST_F(ClassifyPathArgumentsTest, MostRestrictiveOrdersTheClasses) {
  auto worst_of = [&](const std::string& json) {
    auto result = Classify(json);
    EXPECT_THAT(result, IsOk()) << json;
    return MostRestrictive(result.ok() ? *result : std::vector<PathArgument>{});
  };
  EXPECT_FALSE(worst_of(R"({"q": "hello"})").has_path);
  EXPECT_EQ(worst_of(R"({"a": "x/y", "b": "a.txt"})").target_class, TargetClass::kInsideRoots);
  EXPECT_EQ(worst_of(R"({"a": "../out/o.txt", "b": "x/y"})").target_class,
            TargetClass::kOutsideRoots);
  EXPECT_EQ(worst_of(R"({"a": "../out/o.txt", "b": "envrc"})").target_class,
            TargetClass::kOutsideRoots)
      << "\"b\" is not path-like by name, has no slash and no leading dot";
  EXPECT_EQ(worst_of(R"({"a": "../out/o.txt", "b": ".envrc"})").target_class,
            TargetClass::kProtected);
  const WorstPathTarget secret =
      worst_of(absl::StrCat(R"({"a": ".git/hooks/x", "b": ")", home_, R"(/k", "c": "/tmp"})"));
  EXPECT_EQ(secret.target_class, TargetClass::kBrokerSecret);
  EXPECT_EQ(secret.pointer, "/b");
}

TEST_F(ClassifyPathArgumentsTest, BackslashesAreRefusedNamingTheArgument) {
  for (const char* json : {R"({"pattern": "a\\d+"})", R"({"path": "dir\\b.txt"})",
                           R"({"opts": {"files": ["ok.txt", "C:\\Windows"]}})"}) {
    const auto result = Classify(json);
    EXPECT_THAT(result, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("backslash")))
        << json;
    EXPECT_EQ(WireCodeOf(result.status()), v1::INVALID_ARGUMENT);
    EXPECT_EQ(RuleOf(result.status()), "path-argument:backslash");
  }
  EXPECT_THAT(Classify(R"({"opts": {"files": ["ok.txt", "C:\\Windows"]}})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("/opts/files/1")));
}

TEST_F(ClassifyPathArgumentsTest, KeysAreClassified) {
  auto result = Classify(R"({"edits": {"../out/o.txt": "x", "a.txt": "y"}})");
  ASSERT_THAT(result, IsOk());
  ASSERT_EQ(result->size(), 1u);
  EXPECT_EQ((*result)[0].pointer, "/edits/..~1out~1o.txt");
  EXPECT_EQ((*result)[0].target.target_class, TargetClass::kOutsideRoots);
}

TEST_F(ClassifyPathArgumentsTest, ALeadingTildeIsRefused) {
  for (const char* json : {R"({"path": "~/.ssh/id_rsa"})", R"({"q": "~root/x"})",
                           R"({"file": "~"})"}) {
    const auto result = Classify(json);
    EXPECT_EQ(WireCodeOf(result.status()), v1::INVALID_ARGUMENT) << json;
    EXPECT_EQ(RuleOf(result.status()), "path-argument:tilde") << json;
  }
  // Elsewhere a tilde is an ordinary character.
  EXPECT_EQ(One(R"({"path": "a~b/c~"})").target.canonical_path, ws_ + "/a~b/c~");
}

TEST_F(ClassifyPathArgumentsTest, FileUrisAreCheckedByTheirPath) {
  const PathArgument outside = One(absl::StrCat(R"({"uri": "file://)", out_, R"(/o.txt"})"));
  EXPECT_EQ(outside.value, absl::StrCat("file://", out_, "/o.txt"));
  EXPECT_EQ(outside.target.canonical_path, out_ + "/o.txt");
  EXPECT_EQ(outside.target.target_class, TargetClass::kOutsideRoots);
  EXPECT_EQ(One(R"({"uri": "FILE://localhost/etc/passwd"})").target.canonical_path,
            "/etc/passwd");
  EXPECT_EQ(One(R"({"uri": "file:/etc/passwd"})").target.canonical_path, "/etc/passwd");
  EXPECT_EQ(One(R"({"path": "file:../out/o.txt"})").target.canonical_path, out_ + "/o.txt");
  EXPECT_EQ(One(absl::StrCat(R"({"uri": "file://)", ws_, R"(/.git/hook%73/x?q#f"})"))
                .target.target_class,
            TargetClass::kProtected);
  EXPECT_EQ(One(absl::StrCat(R"({"uri": "file://)", ws_, R"(/a%20b.txt"})"))
                .target.canonical_path,
            ws_ + "/a b.txt");
  for (const char* json :
       {R"({"uri": "file://example.com/etc/passwd"})", R"({"uri": "file://host"})",
        R"({"uri": "file:///etc/%zzpasswd"})", R"({"uri": "file:///etc/passwd%"})",
        R"({"uri": "file:///a%5cb"})", R"({"uri": "file:///a%00b"})"}) {
    EXPECT_EQ(WireCodeOf(Classify(json).status()), v1::INVALID_ARGUMENT) << json;
  }
}

TEST_F(ClassifyPathArgumentsTest, MessagesEscapeAndShortenUntrustedNames) {
  const std::string key = absl::StrCat("\u001b[31m", std::string(500, 'k'));
  const auto result = Classify(absl::StrCat(R"({")", key, R"(": "a\\b"})"));
  ASSERT_FALSE(result.ok());
  const std::string message(result.status().message());
  EXPECT_EQ(message.find('\x1b'), std::string::npos);
  EXPECT_THAT(message, HasSubstr("\\x1b[31m"));
  EXPECT_LT(message.size(), 400u);
}

TEST_F(ClassifyPathArgumentsTest, InvalidPathsAreRefusedNamingTheArgument) {
  const std::string nul = std::string(R"({"path": "a)") + "\\u0000" + R"(b"})";
  const std::string longest = absl::StrCat(R"({"path": ")", std::string(5000, 'a'), R"("})");
  for (const std::string& json : {std::string(R"({"path": ""})"), nul, longest}) {
    const auto result = Classify(json);
    EXPECT_EQ(WireCodeOf(result.status()), v1::INVALID_ARGUMENT) << json.substr(0, 40);
    EXPECT_THAT(std::string(result.status().message()), HasSubstr("path-like argument /path: "));
  }
}

TEST_F(ClassifyPathArgumentsTest, LinkLoopsAreRefused) {
  ASSERT_EQ(::symlink("loop2", (ws_ + "/loop1").c_str()), 0);
  ASSERT_EQ(::symlink("loop1", (ws_ + "/loop2").c_str()), 0);
  const auto result = Classify(R"({"path": "loop1/x"})");
  EXPECT_EQ(WireCodeOf(result.status()), v1::INVALID_ARGUMENT);
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("/path"));
}

TEST_F(ClassifyPathArgumentsTest, AReplacedWorkspaceMakesEveryPathArgumentFail) {
  ASSERT_EQ(::rename(ws_.c_str(), (ws_ + ".moved").c_str()), 0);
  ASSERT_EQ(::mkdir(ws_.c_str(), 0755), 0);
  const auto result = Classify(R"({"path": "a.txt"})");
  EXPECT_EQ(WireCodeOf(result.status()), v1::SANDBOX_UNAVAILABLE);
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("path-like argument /path: "));
  // Without path arguments there is nothing to classify.
  EXPECT_THAT(Classify(R"({"q": "hello"})"), IsOk());
  testing::RemoveTree(ws_ + ".moved");
}

}  // namespace
}  // namespace airlock::broker
