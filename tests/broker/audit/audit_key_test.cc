// Where the audit key comes from, and what is refused.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "broker/audit/audit_key.h"
#include "broker/wire_error.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker::audit {
namespace {

using ::airlock::testing::StatusIs;
using ::airlock::testing::TempDir;
using ::airlock::testing::WriteFileOrDie;
using ::testing::HasSubstr;

constexpr char kHexKey[] = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

std::string WriteKey(const TempDir& dir, const std::string& name, const std::string& content,
                     mode_t mode) {
  const std::string path = dir.Child(name);
  WriteFileOrDie(path, content);
  EXPECT_EQ(::chmod(path.c_str(), mode), 0);
  return path;
}

TEST(AuditKeyTest, HexKeyFile0600IsRead) {
  TempDir dir;
  const std::string path = WriteKey(dir, "k", std::string(kHexKey) + "\n", 0600);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(AuditKey key, ReadAuditKeyFile(path));
  EXPECT_EQ(key.master.size(), 32u);
  EXPECT_EQ(key.master.view().substr(0, 3), std::string("\x00\x11\x22", 3));
  EXPECT_EQ(key.path, path);
}

TEST(AuditKeyTest, RawKeyFileIsRead) {
  TempDir dir;
  const std::string path = WriteKey(dir, "k", "not hex, just a long passphrase", 0600);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(AuditKey key, ReadAuditKeyFile(path));
  EXPECT_EQ(key.master.view(), "not hex, just a long passphrase");
}

TEST(AuditKeyTest, KeyFileWithAnyOtherModeIsRefused) {
  TempDir dir;
  for (mode_t mode : {0644, 0640, 0604, 0400, 0700, 0660}) {
    const std::string path = WriteKey(dir, "k", kHexKey, mode);
    EXPECT_THAT(ReadAuditKeyFile(path),
                StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("must be exactly 0600")))
        << std::oct << mode;
    EXPECT_EQ(RuleOf(ReadAuditKeyFile(path).status()), "audit-key-mode");
  }
  const std::string path = WriteKey(dir, "k", kHexKey, 0644);
  EXPECT_THAT(ReadAuditKeyFile(path).status().message(), HasSubstr("0644"));
  // The broker's entry point refuses it too, rather than falling back to another key.
  AuditKeyOptions options;
  options.key_file = path;
  options.env_key = kHexKey;
  options.airlock_home = dir.Child("home");
  EXPECT_THAT(LoadOrCreateAuditKey(options), StatusIs(absl::StatusCode::kPermissionDenied));
}

TEST(AuditKeyTest, SymlinkDirectoryAndMissingKeyFilesAreRefused) {
  TempDir dir;
  const std::string real = WriteKey(dir, "real", kHexKey, 0600);
  ASSERT_EQ(::symlink(real.c_str(), dir.Child("link").c_str()), 0);
  EXPECT_THAT(ReadAuditKeyFile(dir.Child("link")),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("symbolic link")));
  ASSERT_EQ(::mkdir(dir.Child("d").c_str(), 0600), 0);
  EXPECT_THAT(ReadAuditKeyFile(dir.Child("d")), StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(ReadAuditKeyFile(dir.Child("missing")), StatusIs(absl::StatusCode::kNotFound));
}

TEST(AuditKeyTest, KeyFileOwnedBySomeoneElseIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a file to another user";
  TempDir dir;
  const std::string path = WriteKey(dir, "k", kHexKey, 0600);
  ASSERT_EQ(::chown(path.c_str(), 65534, 65534), 0);
  EXPECT_THAT(ReadAuditKeyFile(path),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("owned by uid 65534")));
}

TEST(AuditKeyTest, KeyMaterialHexOrRaw) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(SecretBytes hex, ParseAuditKeyMaterial(kHexKey, "test"));
  EXPECT_EQ(hex.size(), 32u);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(SecretBytes upper,
                               ParseAuditKeyMaterial("00112233445566778899AABBCCDDEEFF", "test"));
  EXPECT_EQ(upper.size(), 16u);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(SecretBytes raw, ParseAuditKeyMaterial("sixteen raw byte", "t"));
  EXPECT_EQ(raw.view(), "sixteen raw byte");
  EXPECT_THAT(ParseAuditKeyMaterial("short", "test"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("too short")));
  EXPECT_THAT(ParseAuditKeyMaterial("", "test"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseAuditKeyMaterial(std::string(5000, 'x'), "test"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(AuditKeyTest, EnvironmentKeyIsTakenOutOfTheEnvironment) {
  ASSERT_EQ(::setenv(kAuditKeyEnvironmentVariable, kHexKey, 1), 0);
  std::optional<std::string> taken = TakeAuditKeyFromEnvironment();
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(*taken, kHexKey);
  EXPECT_EQ(std::getenv(kAuditKeyEnvironmentVariable), nullptr);
  EXPECT_EQ(TakeAuditKeyFromEnvironment(), std::nullopt);

  TempDir dir;
  AuditKeyOptions options;
  options.env_key = *taken;
  options.airlock_home = dir.Child("home");
  AIRLOCK_ASSERT_OK_AND_ASSIGN(AuditKey key, LoadOrCreateAuditKey(options));
  EXPECT_EQ(key.source, kAuditKeyEnvironmentVariable);
  EXPECT_TRUE(key.path.empty());
  // No default key is created when the environment provides one.
  struct stat st;
  EXPECT_NE(::stat(DefaultAuditKeyPath(options.airlock_home).c_str(), &st), 0);
}

TEST(AuditKeyTest, TheBrokerEntryPointScrubsTheEnvironment) {
  // A caller that only getenv()s the key must not leave it for the worker to inherit.
  ASSERT_EQ(::setenv(kAuditKeyEnvironmentVariable, kHexKey, 1), 0);
  TempDir dir;
  AuditKeyOptions options;
  options.env_key = std::string(std::getenv(kAuditKeyEnvironmentVariable));
  options.airlock_home = dir.Child("home");
  AIRLOCK_ASSERT_OK_AND_ASSIGN(AuditKey key, LoadOrCreateAuditKey(options));
  EXPECT_EQ(key.master.size(), 32u);
  EXPECT_EQ(std::getenv(kAuditKeyEnvironmentVariable), nullptr);

  // The verifier leaves the environment alone.
  ASSERT_EQ(::setenv(kAuditKeyEnvironmentVariable, kHexKey, 1), 0);
  options.create_default = false;
  EXPECT_THAT(LoadOrCreateAuditKey(options), ::airlock::testing::IsOk());
  EXPECT_NE(std::getenv(kAuditKeyEnvironmentVariable), nullptr);
  ::unsetenv(kAuditKeyEnvironmentVariable);
}

TEST(AuditKeyTest, DefaultKeyIsCreatedPrivateAndReused) {
  TempDir dir;
  AuditKeyOptions options;
  options.airlock_home = dir.Child("home");
  AIRLOCK_ASSERT_OK_AND_ASSIGN(AuditKey first, LoadOrCreateAuditKey(options));
  EXPECT_EQ(first.master.size(), 32u);
  EXPECT_EQ(first.path, DefaultAuditKeyPath(options.airlock_home));
  struct stat st;
  ASSERT_EQ(::stat(options.airlock_home.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  ASSERT_EQ(::stat(first.path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_size, 65);

  AIRLOCK_ASSERT_OK_AND_ASSIGN(AuditKey second, LoadOrCreateAuditKey(options));
  EXPECT_EQ(first.master.view(), second.master.view());

  // Another home gets another random key.
  options.airlock_home = dir.Child("other");
  AIRLOCK_ASSERT_OK_AND_ASSIGN(AuditKey third, LoadOrCreateAuditKey(options));
  EXPECT_NE(first.master.view(), third.master.view());
}

TEST(AuditKeyTest, TheVerifierNeverCreatesAKey) {
  TempDir dir;
  AuditKeyOptions options;
  options.airlock_home = dir.Child("home");
  options.create_default = false;
  EXPECT_THAT(LoadOrCreateAuditKey(options),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("--key-file")));
  struct stat st;
  EXPECT_NE(::stat(options.airlock_home.c_str(), &st), 0);
}

TEST(AuditKeyTest, HomeWritableByOthersIsRefused) {
  TempDir dir;
  const std::string home = dir.Child("home");
  ASSERT_EQ(::mkdir(home.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(home.c_str(), 0777), 0);
  AuditKeyOptions options;
  options.airlock_home = home;
  EXPECT_THAT(LoadOrCreateAuditKey(options),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("writable by other")));
  ASSERT_EQ(::symlink(home.c_str(), dir.Child("link").c_str()), 0);
  EXPECT_THAT(EnsurePrivateDirectory(dir.Child("link")),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("not a directory")));
}

TEST(AuditKeyTest, DefaultLogPathIsPrivateAndSessionChecked) {
  TempDir dir;
  const std::string home = dir.Child("home");
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::string path, PrepareDefaultAuditLogPath(home, "abc123"));
  EXPECT_EQ(path, home + "/audit/abc123.jsonl");
  struct stat st;
  ASSERT_EQ(::stat((home + "/audit").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  for (const char* bad : {"", "../x", "a/b", ".hidden", "x\n"}) {
    EXPECT_THAT(PrepareDefaultAuditLogPath(home, bad),
                StatusIs(absl::StatusCode::kInvalidArgument))
        << bad;
  }
}

TEST(AuditKeyTest, ProtectedPathsNameTheLogAndTheKeyFile) {
  TempDir dir;
  AuditKeyOptions options;
  options.airlock_home = dir.Child("home");
  AIRLOCK_ASSERT_OK_AND_ASSIGN(AuditKey key, LoadOrCreateAuditKey(options));
  EXPECT_THAT(AuditProtectedPaths(key, "/x/log.jsonl"),
              ::testing::ElementsAre("/x/log.jsonl", key.path));
  AuditKey env_key;
  env_key.master = SecretBytes("0123456789abcdef");
  EXPECT_THAT(AuditProtectedPaths(env_key, "/x/log.jsonl"), ::testing::ElementsAre("/x/log.jsonl"));
}

}  // namespace
}  // namespace airlock::broker::audit
