// The file tools end to end on a real tree: every path case, protected storage, the broker's
// own storage, reads and lists, sizes and special files (the plan/commit binding is in
// plan_commit_test.cc). Every case runs with openat2 and with the O_NOFOLLOW component walk.
#include "broker/fs/file_tools.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <set>
#include <string>

#include "absl/strings/escaping.h"
#include "broker/fs/beneath.h"
#include "broker/fs/digest.h"
#include "broker/wire_error.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/broker/fs/file_tools_fixture.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker {
namespace {

using ::testing::HasSubstr;

struct WriteCase {
  std::string requested;   // "$B" is the temp base
  v1::ErrorCode code;      // ERROR_CODE_UNSPECIFIED: success
  std::string expected;    // canonical path on success; a message fragment on failure
};

TEST_P(FileToolsTest, WriteHandlesEveryPathCase) {
  const WriteCase cases[] = {
      {"a.txt", v1::ERROR_CODE_UNSPECIFIED, "$B/ws/a.txt"},
      {"$B/ws/a.txt", v1::ERROR_CODE_UNSPECIFIED, "$B/ws/a.txt"},
      {"dir/../a.txt", v1::ERROR_CODE_UNSPECIFIED, "$B/ws/a.txt"},
      {"dir//b.txt", v1::ERROR_CODE_UNSPECIFIED, "$B/ws/dir/b.txt"},
      {"./dir/./b.txt", v1::ERROR_CODE_UNSPECIFIED, "$B/ws/dir/b.txt"},
      {"link_in", v1::ERROR_CODE_UNSPECIFIED, "$B/ws/dir/b.txt"},
      {"chain1/b.txt", v1::ERROR_CODE_UNSPECIFIED, "$B/ws/dir/b.txt"},
      {"dangling_in", v1::ERROR_CODE_UNSPECIFIED, "$B/ws/new_in.txt"},
      {"$B/ws_link/a.txt", v1::ERROR_CODE_UNSPECIFIED, "$B/ws/a.txt"},
      {"~/x", v1::ERROR_CODE_UNSPECIFIED, "$B/ws/~/x"},
      {"new/deep/file.txt", v1::ERROR_CODE_UNSPECIFIED, "$B/ws/new/deep/file.txt"},
      {"", v1::INVALID_ARGUMENT, "empty path"},
      {std::string("a\0b", 3), v1::INVALID_ARGUMENT, "NUL byte"},
      {"dir\\b.txt", v1::INVALID_ARGUMENT, "backslash"},
      {std::string(256, 'n'), v1::INVALID_ARGUMENT, "component of 256 bytes"},
      {"d/" + std::string(4100, 'p'), v1::INVALID_ARGUMENT, "bytes"},
      {"a.txt/", v1::INVALID_ARGUMENT, "names a directory"},
      {"dir", v1::INVALID_ARGUMENT, "a directory, not a regular file"},
      {"/", v1::OUTSIDE_SANDBOX, "write / refused: outside every root"},
      {"a.txt/x", v1::INVALID_ARGUMENT, "not a directory"},
      {"loop1", v1::INVALID_ARGUMENT, "loop"},
      {"../out/o.txt", v1::OUTSIDE_SANDBOX, "write $B/out/o.txt refused: outside every root"},
      {"$B/out/new.txt", v1::OUTSIDE_SANDBOX, "rule outside-roots"},
      {"link_out", v1::OUTSIDE_SANDBOX, "$B/out/o.txt"},
      {"dangling_out", v1::OUTSIDE_SANDBOX, "$B/out/new_out.txt"},
      {"out_dir_link/fresh.txt", v1::OUTSIDE_SANDBOX, "$B/out/fresh.txt"},
      {"$B/ws_link/../out/x", v1::OUTSIDE_SANDBOX, "$B/out/x"},
      {".git/hooks/pre-commit", v1::PROTECTED_PATH,
       "write $B/ws/.git/hooks/pre-commit refused: protected storage (rule protected:.git/hooks)"},
      {".git/hooks/new-hook", v1::PROTECTED_PATH, "protected:.git/hooks"},
      {".git/config", v1::PROTECTED_PATH, "protected:.git/config"},
      {"hook_link", v1::PROTECTED_PATH, "$B/ws/.git/hooks/pre-commit"},
      {"hook_dangling", v1::PROTECTED_PATH, "$B/ws/.git/hooks/post-merge"},
      {"git_link/config", v1::PROTECTED_PATH, "$B/ws/.git/config"},
      // Whatever redirects git's hooks and configuration: a commondir, a submodule's git
      // directory under .git/modules, a gitfile (`sub/.git` naming another git directory).
      {".git/commondir", v1::PROTECTED_PATH, "protected:.git/commondir"},
      {".git/config.worktree", v1::PROTECTED_PATH, "protected:.git"},
      {".git/modules/lib/config", v1::PROTECTED_PATH, "protected:.git"},
      {".git/modules/lib/hooks/post-checkout", v1::PROTECTED_PATH, "protected:.git"},
      {"vendor/lib/.git", v1::PROTECTED_PATH, "protected:.git"},
      {"sub/.vscode/settings.json", v1::PROTECTED_PATH, "protected:.vscode"},
      {"deep/er/.bashrc", v1::PROTECTED_PATH, "protected:.bashrc"},
      {".airlock/x", v1::PROTECTED_PATH, "protected:.airlock"},
      {".mcp.json", v1::PROTECTED_PATH, "protected:.mcp.json"},
      {"secret.txt", v1::PROTECTED_PATH, "protect:$B/ws/secret.txt"},
      {"key_link", v1::PROTECTED_PATH, "the broker's own storage (rule broker-secret:$B/home)"},
      {"$B/home/new", v1::PROTECTED_PATH, "broker-secret"},
  };
  for (const WriteCase& c : cases) {
    SCOPED_TRACE(absl::CHexEscape(c.requested.substr(0, 80)));
    const std::set<std::string> ws_before = TreeOf(ws_);
    auto result = Write(c.requested, "new content");
    if (c.code == v1::ERROR_CODE_UNSPECIFIED) {
      ASSERT_THAT(result, testing::IsOk());
      const std::string canonical = Expand(c.expected, base_.path());
      EXPECT_EQ(result->canonical_path(), canonical);
      EXPECT_EQ(testing::ReadFileOrMissing(canonical), "new content");
      EXPECT_EQ(result->content_sha256(), Sha256Hex("new content"));
    } else {
      ASSERT_FALSE(result.ok()) << result->canonical_path();
      EXPECT_EQ(WireCodeOf(result.status()), c.code) << result.status();
      EXPECT_THAT(std::string(result.status().message()),
                  HasSubstr(Expand(c.expected, base_.path())));
      EXPECT_EQ(TreeOf(ws_), ws_before) << "a refused write changed the workspace";
    }
    ExpectOutsideAndHomeUntouched();
  }
  EXPECT_EQ(testing::ReadFileOrMissing(ws_ + "/.git/hooks/pre-commit"), "#!/bin/sh\n");
  EXPECT_EQ(testing::ReadFileOrMissing(ws_ + "/secret.txt"), "guarded");
  ExpectNoTempFiles();
}

TEST_P(FileToolsTest, RefusalsCarryTheirRule) {
  auto result = Write(".git/hooks/pre-commit", "x");
  EXPECT_EQ(RuleOf(result.status()), "protected:.git/hooks");
  result = Write("../out/o.txt", "x");
  EXPECT_EQ(RuleOf(result.status()), "outside-roots");
}

TEST_P(FileToolsTest, EditRefusesProtectedTargetsIncludingThroughLinks) {
  for (const char* path : {".git/hooks/pre-commit", "hook_link", "git_link/config", "secret.txt",
                           "key_link"}) {
    SCOPED_TRACE(path);
    auto result = Edit(path, "#", "X", true);
    EXPECT_EQ(WireCodeOf(result.status()), v1::PROTECTED_PATH) << result.status();
  }
  EXPECT_EQ(testing::ReadFileOrMissing(ws_ + "/.git/hooks/pre-commit"), "#!/bin/sh\n");
  ExpectOutsideAndHomeUntouched();
}

TEST_P(FileToolsTest, ProtectedFilesAreReadable) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(v1::ReadResult result, Read("hook_link"));
  EXPECT_EQ(result.content(), "#!/bin/sh\n");
  EXPECT_EQ(result.canonical_path(), ws_ + "/.git/hooks/pre-commit");
}

TEST_P(FileToolsTest, BrokerStorageIsNeverReadListedPlannedOrWritten) {
  auto read = Read("key_link");
  EXPECT_EQ(WireCodeOf(read.status()), v1::PROTECTED_PATH);
  EXPECT_THAT(std::string(read.status().message()), HasSubstr(home_ + "/audit.key"));
  EXPECT_EQ(WireCodeOf(Read("$B/home/audit.key").status()), v1::PROTECTED_PATH);
  EXPECT_EQ(WireCodeOf(List("$B/home").status()), v1::PROTECTED_PATH);
  v1::WriteRequest request;
  request.set_path(home_ + "/audit.key");
  request.set_content("forged");
  EXPECT_EQ(WireCodeOf(files_->PlanWrite(request).status()), v1::PROTECTED_PATH);
  // Even a plan for an ordinary file cannot be committed once it points at the storage, and
  // no permission opens it.
  v1::WriteRequest ok_request;
  ok_request.set_path("a.txt");
  ok_request.set_content("x");
  AIRLOCK_ASSERT_OK_AND_ASSIGN(MutationPlan plan, files_->PlanWrite(ok_request));
  plan.canonical_path = home_ + "/audit.key";
  plan.target_class = TargetClass::kBrokerSecret;
  auto committed = files_->Commit(plan, {.allow_outside = true, .allow_protected = true});
  EXPECT_EQ(WireCodeOf(committed.status()), v1::PROTECTED_PATH);
  ExpectOutsideAndHomeUntouched();
}

TEST_P(FileToolsTest, ReadsOutsideTheRootsAreAllowedUnlessConfined) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(v1::ReadResult result, Read("link_out"));
  EXPECT_EQ(result.content(), "outside");
  EXPECT_EQ(result.canonical_path(), out_ + "/o.txt");

  FileToolsOptions options = Options();
  options.reads_confined_to_roots = true;
  files_ = Make(options);
  auto confined = Read("link_out");
  EXPECT_EQ(WireCodeOf(confined.status()), v1::OUTSIDE_SANDBOX);
  EXPECT_THAT(std::string(confined.status().message()), HasSubstr(out_ + "/o.txt"));
  EXPECT_EQ(WireCodeOf(List("$B/out").status()), v1::OUTSIDE_SANDBOX);
  EXPECT_THAT(Read("a.txt"), testing::IsOk());
  // An edit's match count would reveal an unreadable file's content: refused before reading.
  v1::EditRequest edit;
  edit.set_path("link_out");
  edit.set_old_string("outside");
  edit.set_new_string("x");
  auto plan = files_->PlanEdit(edit);
  EXPECT_EQ(WireCodeOf(plan.status()), v1::OUTSIDE_SANDBOX);
  EXPECT_EQ(RuleOf(plan.status()), "read-scope:workspace");
}

TEST_P(FileToolsTest, ReadHonoursOffsetAndLimit) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(v1::ReadResult result, Read("a.txt", 1, 3));
  EXPECT_EQ(result.content(), "lph");
  EXPECT_EQ(result.file_size(), 5u);
  EXPECT_FALSE(result.eof());
  AIRLOCK_ASSERT_OK_AND_ASSIGN(result, Read("a.txt", 3));
  EXPECT_EQ(result.content(), "ha");
  EXPECT_TRUE(result.eof());
  AIRLOCK_ASSERT_OK_AND_ASSIGN(result, Read("a.txt", 99));
  EXPECT_EQ(result.content(), "");
  EXPECT_TRUE(result.eof());
}

TEST_P(FileToolsTest, ReadRefusesBadTargets) {
  EXPECT_EQ(WireCodeOf(Read("missing").status()), v1::NOT_FOUND);
  EXPECT_EQ(WireCodeOf(Read("dangling_in").status()), v1::NOT_FOUND);
  EXPECT_EQ(WireCodeOf(Read("dir").status()), v1::INVALID_ARGUMENT);
  EXPECT_EQ(WireCodeOf(Read("a.txt/").status()), v1::INVALID_ARGUMENT);
  EXPECT_EQ(WireCodeOf(Read("loop1").status()), v1::INVALID_ARGUMENT);
  EXPECT_EQ(WireCodeOf(Read(std::string("a\0", 2)).status()), v1::INVALID_ARGUMENT);
}

TEST_P(FileToolsTest, FifosSocketsAndDevicesAreRefusedAtOnce) {
  ASSERT_EQ(::mkfifo((ws_ + "/fifo").c_str(), 0644), 0);
  int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(sock, 0);
  sockaddr_un address = {};
  address.sun_family = AF_UNIX;
  const std::string socket_path = ws_ + "/sock";
  ASSERT_LT(socket_path.size(), sizeof(address.sun_path));
  std::memcpy(address.sun_path, socket_path.c_str(), socket_path.size());
  ASSERT_EQ(::bind(sock, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  Link("/dev/zero", ws_ + "/zero");
  // Nobody ever opens the FIFO for writing: a blocking open would hang the test.
  for (const char* path : {"fifo", "sock", "zero", "/dev/null"}) {
    SCOPED_TRACE(path);
    auto read = Read(path);
    EXPECT_EQ(WireCodeOf(read.status()), v1::INVALID_ARGUMENT) << read.status();
    auto write = Write(path, "x");
    EXPECT_FALSE(write.ok());
  }
  EXPECT_THAT(std::string(Read("fifo").status().message()), HasSubstr("a FIFO"));
  EXPECT_EQ(WireCodeOf(Write("fifo", "x").status()), v1::INVALID_ARGUMENT);
  ::close(sock);
  ExpectNoTempFiles();
}

TEST_P(FileToolsTest, SizesAreBounded) {
  FileToolsOptions options = Options();
  options.max_file_bytes = 8;
  files_ = Make(options);
  testing::WriteFileOrDie(ws_ + "/big", "0123456789");
  EXPECT_EQ(WireCodeOf(Read("big").status()), v1::TOO_LARGE);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(v1::ReadResult part, Read("big", 2, 4));  // a bounded range
  EXPECT_EQ(part.content(), "2345");
  auto write = Write("a.txt", "123456789");
  EXPECT_EQ(WireCodeOf(write.status()), v1::TOO_LARGE);
  EXPECT_THAT(std::string(write.status().message()), HasSubstr("9 bytes"));
  EXPECT_EQ(WireCodeOf(Edit("a.txt", "alpha", "alphabetical").status()), v1::TOO_LARGE);
  EXPECT_EQ(testing::ReadFileOrMissing(ws_ + "/a.txt"), "alpha");
}

TEST_P(FileToolsTest, ListIsSortedTypedSizedAndBounded) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(v1::ListResult result, List("dir"));
  EXPECT_EQ(result.canonical_path(), ws_ + "/dir");
  ASSERT_EQ(result.entries_size(), 1);
  EXPECT_EQ(result.entries(0).name(), "b.txt");
  EXPECT_EQ(result.entries(0).type(), v1::ENTRY_TYPE_FILE);
  EXPECT_EQ(result.entries(0).size(), 4u);

  AIRLOCK_ASSERT_OK_AND_ASSIGN(result, List("."));
  std::vector<std::string> names;
  for (const v1::ListEntry& entry : result.entries()) names.push_back(entry.name());
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_FALSE(result.truncated());
  bool saw_link = false, saw_dir = false;
  for (const v1::ListEntry& entry : result.entries()) {
    saw_link |= entry.name() == "link_out" && entry.type() == v1::ENTRY_TYPE_SYMLINK;
    saw_dir |= entry.name() == "dir" && entry.type() == v1::ENTRY_TYPE_DIRECTORY;
  }
  EXPECT_TRUE(saw_link);
  EXPECT_TRUE(saw_dir);

  FileToolsOptions options = Options();
  options.max_list_entries = 3;
  files_ = Make(options);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(result, List("."));
  EXPECT_EQ(result.entries_size(), 3);
  EXPECT_TRUE(result.truncated());
  EXPECT_EQ(WireCodeOf(List("a.txt").status()), v1::INVALID_ARGUMENT);
}

TEST_P(FileToolsTest, EditReplacesExactlyOnceOrEveryOccurrence) {
  testing::WriteFileOrDie(ws_ + "/e.txt", "one two two");
  auto zero = Edit("e.txt", "three", "3");
  EXPECT_EQ(WireCodeOf(zero.status()), v1::INVALID_ARGUMENT);
  EXPECT_THAT(std::string(zero.status().message()), HasSubstr("0 times"));
  auto several = Edit("e.txt", "two", "2");
  EXPECT_THAT(std::string(several.status().message()), HasSubstr("2 times"));
  EXPECT_EQ(WireCodeOf(Edit("e.txt", "", "x").status()), v1::INVALID_ARGUMENT);
  EXPECT_EQ(WireCodeOf(Edit("missing.txt", "a", "b").status()), v1::NOT_FOUND);
  EXPECT_EQ(testing::ReadFileOrMissing(ws_ + "/e.txt"), "one two two");

  AIRLOCK_ASSERT_OK_AND_ASSIGN(v1::EditResult once, Edit("e.txt", "one", "1"));
  EXPECT_EQ(once.replacements(), 1u);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(v1::EditResult all, Edit("e.txt", "two", "2", true));
  EXPECT_EQ(all.replacements(), 2u);
  EXPECT_EQ(testing::ReadFileOrMissing(ws_ + "/e.txt"), "1 2 2");
  EXPECT_EQ(all.content_sha256(), Sha256Hex("1 2 2"));
  EXPECT_EQ(all.canonical_path(), ws_ + "/e.txt");
}

TEST_P(FileToolsTest, SandboxPermissionsAreRefusedForFileTools) {
  v1::WriteRequest write;
  write.set_path("a.txt");
  write.set_sandbox_permissions(v1::SANDBOX_PERMISSIONS_REQUIRE_ESCALATED);
  EXPECT_EQ(WireCodeOf(files_->Write(write).status()), v1::INVALID_ARGUMENT);
  v1::EditRequest edit;
  edit.set_path("a.txt");
  edit.set_old_string("alpha");
  edit.set_sandbox_permissions(v1::SANDBOX_PERMISSIONS_USE_DEFAULT);
  EXPECT_EQ(WireCodeOf(files_->Edit(edit).status()), v1::INVALID_ARGUMENT);
  EXPECT_EQ(testing::ReadFileOrMissing(ws_ + "/a.txt"), "alpha");
}

TEST_P(FileToolsTest, ModesNewFilesAre0600ReplacedKeepOrdinaryBits) {
  ASSERT_THAT(Write("fresh", "x"), testing::IsOk());
  struct stat st;
  ASSERT_EQ(::stat((ws_ + "/fresh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);

  ASSERT_EQ(::chmod((ws_ + "/a.txt").c_str(), 0755), 0);
  ASSERT_THAT(Write("a.txt", "y"), testing::IsOk());
  ASSERT_EQ(::stat((ws_ + "/a.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);

  ASSERT_EQ(::chmod((ws_ + "/a.txt").c_str(), 06755), 0);
  ASSERT_EQ(::stat((ws_ + "/a.txt").c_str(), &st), 0);
  ASSERT_EQ(st.st_mode & 06000, 06000u) << "cannot set setuid/setgid here";
  ASSERT_THAT(Edit("a.txt", "y", "z"), testing::IsOk());
  ASSERT_EQ(::stat((ws_ + "/a.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
}

TEST_P(FileToolsTest, MissingParentsAreCreatedInsideAuthority) {
  ASSERT_THAT(Write("n1/n2/n3/f", "deep"), testing::IsOk());
  EXPECT_EQ(testing::ReadFileOrMissing(ws_ + "/n1/n2/n3/f"), "deep");
  struct stat st;
  ASSERT_EQ(::stat((ws_ + "/n1/n2").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0700, 0700u);
  // Not outside, not under protected names.
  EXPECT_FALSE(Write("out_dir_link/m1/f", "x").ok());
  EXPECT_FALSE(Write("nest/.claude/f", "x").ok());
  EXPECT_EQ(testing::ReadFileOrMissing(ws_ + "/nest"), "<missing>");
  ExpectOutsideAndHomeUntouched();
}

TEST_P(FileToolsTest, HardLinkedFileElsewhereKeepsItsContent) {
  ASSERT_EQ(::link((out_ + "/o.txt").c_str(), (ws_ + "/hard").c_str()), 0);
  out_before_ = TreeOf(out_);
  ASSERT_THAT(Write("hard", "replaced"), testing::IsOk());
  EXPECT_EQ(testing::ReadFileOrMissing(ws_ + "/hard"), "replaced");
  EXPECT_EQ(testing::ReadFileOrMissing(out_ + "/o.txt"), "outside");
  ASSERT_EQ(::link((out_ + "/o.txt").c_str(), (ws_ + "/hard2").c_str()), 0);
  ASSERT_THAT(Edit("hard2", "outside", "edited"), testing::IsOk());
  EXPECT_EQ(testing::ReadFileOrMissing(out_ + "/o.txt"), "outside");
}

TEST_P(FileToolsTest, ARootReplacedByALinkOrAnotherDirectoryMakesEveryCallUnavailable) {
  ASSERT_EQ(::rename(ws_.c_str(), base_.Child("ws_moved").c_str()), 0);
  Link(base_.Child("ws_moved"), ws_);  // same content, through a link
  EXPECT_EQ(WireCodeOf(Read("a.txt").status()), v1::SANDBOX_UNAVAILABLE);
  EXPECT_EQ(WireCodeOf(List(".").status()), v1::SANDBOX_UNAVAILABLE);
  EXPECT_EQ(WireCodeOf(Write("a.txt", "x").status()), v1::SANDBOX_UNAVAILABLE);
  EXPECT_EQ(WireCodeOf(Edit("a.txt", "alpha", "x").status()), v1::SANDBOX_UNAVAILABLE);
  ASSERT_EQ(::unlink(ws_.c_str()), 0);
  ASSERT_EQ(::mkdir(ws_.c_str(), 0755), 0);  // another directory at the same path
  EXPECT_EQ(WireCodeOf(Write("a.txt", "x").status()), v1::SANDBOX_UNAVAILABLE);
  EXPECT_EQ(testing::ReadFileOrMissing(base_.Child("ws_moved/a.txt")), "alpha");
  EXPECT_EQ(testing::ReadFileOrMissing(ws_ + "/a.txt"), "<missing>");
}

TEST_P(FileToolsTest, CreateRefusesAMissingRoot) {
  FileToolsOptions options = Options();
  options.roots = {base_.Child("nope")};
  EXPECT_FALSE(FileTools::Create(options).ok());
  options.roots = {ws_ + "/a.txt"};
  EXPECT_FALSE(FileTools::Create(options).ok());
  options.roots = {};
  EXPECT_FALSE(FileTools::Create(options).ok());
}

TEST_P(FileToolsTest, CreateAcceptsARootGivenThroughALink) {
  FileToolsOptions options = Options();
  options.roots = {base_.Child("ws_link")};
  files_ = Make(options);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(v1::WriteResult result, Write("a.txt", "via link"));
  EXPECT_EQ(result.canonical_path(), ws_ + "/a.txt");
}

TEST_P(FileToolsTest, AProtectEntryCoveringTheWorkspaceProtectsItWhole) {
  FileToolsOptions options = Options();
  options.protected_paths = {base_.path()};
  files_ = Make(options);
  auto result = Write("dir/b.txt", "x");
  EXPECT_EQ(WireCodeOf(result.status()), v1::PROTECTED_PATH);
  EXPECT_THAT(Read("dir/b.txt"), testing::IsOk());

  // A workspace that itself lies under a protected name.
  const std::string nested = ws_ + "/sub/.vscode";
  options = Options();
  options.roots = {nested};
  files_ = Make(options);
  EXPECT_EQ(WireCodeOf(Write("anything", "x").status()), v1::PROTECTED_PATH);
}

TEST_P(FileToolsTest, ClassifySaysWhereAPathLandsAndHowTheFencesSeeIt) {
  struct Case {
    std::string requested;
    TargetClass target_class;
    std::string canonical;
    std::string rule;
    bool exists;
  };
  const Case cases[] = {
      {"a.txt", TargetClass::kInsideRoots, "$B/ws/a.txt", "inside-roots:$B/ws", true},
      {"dangling_in", TargetClass::kInsideRoots, "$B/ws/new_in.txt", "inside-roots:$B/ws", false},
      {"link_out", TargetClass::kOutsideRoots, "$B/out/o.txt", "outside-roots", true},
      {"hook_link", TargetClass::kProtected, "$B/ws/.git/hooks/pre-commit",
       "protected:.git/hooks", true},
      {"secret.txt", TargetClass::kProtected, "$B/ws/secret.txt", "protect:$B/ws/secret.txt",
       true},
      {"key_link", TargetClass::kBrokerSecret, "$B/home/audit.key", "broker-secret:$B/home", true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.requested);
    AIRLOCK_ASSERT_OK_AND_ASSIGN(ClassifiedTarget target, files_->Classify(c.requested));
    EXPECT_EQ(target.target_class, c.target_class);
    EXPECT_EQ(target.canonical_path, Expand(c.canonical, base_.path()));
    EXPECT_EQ(target.rule, Expand(c.rule, base_.path()));
    EXPECT_EQ(target.exists, c.exists);
  }
  EXPECT_EQ(WireCodeOf(files_->Classify("loop1").status()), v1::INVALID_ARGUMENT);
}

INSTANTIATE_TEST_SUITE_P(Walks, FileToolsTest,
                         ::testing::Values(WalkMode::kAuto, WalkMode::kComponentWalk), WalkName);

TEST(Openat2Test, TheKernelHasIt) {
  // This machine's kernel has openat2; where it does not, kAuto falls back to the walk.
  EXPECT_TRUE(Openat2Available());
}

}  // namespace
}  // namespace airlock::broker
