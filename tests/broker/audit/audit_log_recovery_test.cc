// The signed log across crashes and faults: a torn or unsealed log recovered with an explicit
// record, unsafe or tampered logs refused, concurrent appends in one chain, epochs closed on
// time, durability (pending records, background flush, a killed broker) and full or
// size-limited file systems refusing appends.
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "broker/audit/audit_crypto.h"
#include "broker/audit/audit_format.h"
#include "broker/audit/audit_log.h"
#include "broker/audit/audit_verifier.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/broker/audit/audit_log_testing.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker::audit {
namespace {

using ::airlock::testing::IsOk;
using ::airlock::testing::ReadFileOrMissing;
using ::airlock::testing::StatusIs;
using ::airlock::testing::TempDir;
using ::airlock::testing::WriteFileOrDie;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(AuditLogOpenTest, TornTailIsCutAndExplainedByARecoveryRecord) {
  TempDir dir;
  const std::string path = dir.Child("log");
  const AuditKey key = TestKey();
  {
    AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                                 AuditLog::Open(path, Copy(key), kSession, SmallEpochs(3)));
    for (int i = 0; i < 4; ++i) ASSERT_THAT(log->Append(AuditRecord{}), IsOk());
    // The broker dies here: no seal. Then a half-written record.
  }
  const std::string before = ReadFileOrMissing(path);
  const std::string torn = "{\"v\":1,\"seq\":6,\"time\":\"2026-";
  WriteFileOrDie(path, before + torn);
  EXPECT_EQ(Verify(ReadFileOrMissing(path), key).problem, AuditProblem::kTruncated);

  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(path, Copy(key), kSession, SmallEpochs(3)));
  EXPECT_EQ(log->open_outcome(), OpenOutcome::kRecovered);
  EXPECT_THAT(log->recovery_detail(), HasSubstr(absl::StrCat("torn final record of ",
                                                             torn.size(), " bytes after seq 5")));
  AuditRecord start;
  start.event = AuditEvent::kRunStart;
  ASSERT_THAT(log->Append(start), IsOk());
  ASSERT_THAT(log->Seal(), IsOk());

  const std::string after = ReadFileOrMissing(path);
  EXPECT_TRUE(absl::StartsWith(after, before));
  EXPECT_THAT(after, Not(HasSubstr(torn + "{")));
  std::vector<std::string> lines = Lines(after);
  EXPECT_THAT(lines[5], HasSubstr("\"event\":\"recovery\""));
  EXPECT_THAT(lines[5], HasSubstr(absl::StrCat("\"cut_bytes\":", torn.size())));
  EXPECT_THAT(lines[5], HasSubstr(Sha256Hex(torn)));
  VerifyResult result = Verify(after, key);
  EXPECT_TRUE(result.intact()) << result.detail;
  EXPECT_EQ(result.recoveries, 1u);
  ASSERT_EQ(result.notes.size(), 1u);
  EXPECT_THAT(result.notes[0], HasSubstr("line 6 (seq 6) recovery"));
  EXPECT_THAT(result.notes[0], HasSubstr("torn"));
}

TEST(AuditLogOpenTest, TornFirstRecordIsRecoveredToo) {
  TempDir dir;
  const std::string path = dir.Child("log");
  const AuditKey key = TestKey();
  WriteFileOrDie(path, "{\"v\":1,\"se");
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(path, Copy(key), kSession, SmallEpochs(3)));
  EXPECT_EQ(log->open_outcome(), OpenOutcome::kRecovered);
  ASSERT_THAT(log->Seal(), IsOk());
  VerifyResult result = Verify(ReadFileOrMissing(path), key);
  EXPECT_TRUE(result.intact()) << result.detail;
  EXPECT_EQ(result.recoveries, 1u);
}

TEST(AuditLogOpenTest, UnsealedLogGetsARecoveryRecord) {
  TempDir dir;
  const std::string path = dir.Child("log");
  const AuditKey key = TestKey();
  {
    AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                                 AuditLog::Open(path, Copy(key), kSession, SmallEpochs(2)));
    for (int i = 0; i < 3; ++i) ASSERT_THAT(log->Append(AuditRecord{}), IsOk());
  }
  EXPECT_EQ(Verify(ReadFileOrMissing(path), key).problem, AuditProblem::kUnsealed);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(path, Copy(key), kSession, SmallEpochs(2)));
  EXPECT_EQ(log->open_outcome(), OpenOutcome::kRecovered);
  EXPECT_THAT(log->recovery_detail(), HasSubstr("ended at seq 4 without a seal"));
  EXPECT_EQ(log->current_epoch(), 1u);
  ASSERT_THAT(log->Append(AuditRecord{}), IsOk());
  ASSERT_THAT(log->Seal(), IsOk());
  VerifyResult result = Verify(ReadFileOrMissing(path), key);
  EXPECT_TRUE(result.intact()) << result.detail;
  EXPECT_EQ(result.recoveries, 1u);
}

TEST(AuditLogOpenTest, SealedLogIsResumed) {
  TempDir dir;
  const std::string path = dir.Child("log");
  const AuditKey key = TestKey();
  WriteSampleLog(path, key);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(path, Copy(key), kSession, SmallEpochs(3)));
  EXPECT_EQ(log->open_outcome(), OpenOutcome::kResumedSealed);
  EXPECT_EQ(log->last_seq(), 11u);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(uint64_t seq, log->Append(AuditRecord{}));
  EXPECT_EQ(seq, 12u);
  ASSERT_THAT(log->Seal(), IsOk());
  VerifyResult result = Verify(ReadFileOrMissing(path), key);
  EXPECT_TRUE(result.intact()) << result.detail;
  EXPECT_EQ(result.seals, 2u);
}

TEST(AuditLogOpenTest, TamperedLogIsRefusedNotRepaired) {
  TempDir dir;
  const std::string path = dir.Child("log");
  const AuditKey key = TestKey();
  WriteSampleLog(path, key);
  std::string content = ReadFileOrMissing(path);
  content[content.size() / 2] ^= 0x01;
  WriteFileOrDie(path, content);
  EXPECT_THAT(AuditLog::Open(path, Copy(key), kSession, SmallEpochs(3)),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("not intact")));
  EXPECT_EQ(ReadFileOrMissing(path), content);
  // Wrong key, wrong session: refused as well.
  WriteSampleLog(dir.Child("good"), key);
  EXPECT_THAT(AuditLog::Open(dir.Child("good"), TestKey('z'), kSession),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("MAC")));
  EXPECT_THAT(AuditLog::Open(dir.Child("good"), Copy(key), "other-session"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("belongs to session")));
}

TEST(AuditLogOpenTest, UnsafeLogFilesAreRefused) {
  TempDir dir;
  const AuditKey key = TestKey();
  WriteFileOrDie(dir.Child("open"), "");
  ASSERT_EQ(::chmod(dir.Child("open").c_str(), 0644), 0);
  EXPECT_THAT(AuditLog::Open(dir.Child("open"), Copy(key), kSession),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("0644")));
  ASSERT_EQ(::symlink(dir.Child("target").c_str(), dir.Child("link").c_str()), 0);
  EXPECT_THAT(AuditLog::Open(dir.Child("link"), Copy(key), kSession),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("symbolic link")));
  struct stat st;
  EXPECT_NE(::lstat(dir.Child("target").c_str(), &st), 0);  // nothing created through it
  ASSERT_EQ(::mkdir(dir.Child("d").c_str(), 0700), 0);
  EXPECT_THAT(AuditLog::Open(dir.Child("d"), Copy(key), kSession), Not(IsOk()));
  EXPECT_THAT(AuditLog::Open(dir.Child("x"), Copy(key), "../bad"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(AuditLogOpenTest, ASecondWriterIsRefused) {
  TempDir dir;
  const AuditKey key = TestKey();
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(dir.Child("log"), Copy(key), kSession));
  ASSERT_THAT(log->Append(AuditRecord{}), IsOk());
  EXPECT_THAT(AuditLog::Open(dir.Child("log"), Copy(key), kSession),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("in use")));
}

TEST(AuditLogAppendTest, SealedLogRefusesAppends) {
  TempDir dir;
  const AuditKey key = TestKey();
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(dir.Child("log"), Copy(key), kSession));
  ASSERT_THAT(log->Seal(), IsOk());
  EXPECT_THAT(log->Append(AuditRecord{}), StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(log->Seal(), StatusIs(absl::StatusCode::kFailedPrecondition));
  AuditRecord control;
  control.event = AuditEvent::kSeal;
  EXPECT_THAT(log->Append(control), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(AuditLogAppendTest, ConcurrentAppendsAreAllRecordedInOneChain) {
  TempDir dir;
  const std::string path = dir.Child("log");
  const AuditKey key = TestKey();
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(path, Copy(key), kSession, SmallEpochs(7)));
  constexpr int kThreads = 8;
  constexpr int kPerThread = 100;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        AuditRecord record;
        record.channel = static_cast<uint64_t>(t);
        record.request_id = static_cast<uint64_t>(i);
        const Durability durability = i % 2 == 0 ? Durability::kDurable : Durability::kBuffered;
        if (!log->Append(record, durability).ok()) ++failures;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  ASSERT_THAT(log->Flush(), IsOk());
  ASSERT_THAT(log->Seal(), IsOk());
  VerifyResult result = Verify(ReadFileOrMissing(path), key);
  EXPECT_TRUE(result.intact()) << result.detail;
  const uint64_t records = kThreads * kPerThread;
  EXPECT_EQ(result.records, records + records / 7 + 1);
}

TEST(AuditLogAppendTest, AnIdleEpochIsClosedOnTime) {
  TempDir dir;
  const std::string path = dir.Child("log");
  const AuditKey key = TestKey();
  AuditLogOptions options;
  options.epoch_max_records = 0;
  options.epoch_max_duration = absl::Milliseconds(20);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(path, Copy(key), kSession, options));
  const std::string first_key = log->CurrentKeyForTesting();
  // Two 20 ms epochs closed by the timer alone; waited for boundedly (a loaded machine).
  for (int i = 0; i < 1000 && log->current_epoch() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GE(log->current_epoch(), 2u);
  EXPECT_NE(log->CurrentKeyForTesting(), first_key);
  ASSERT_THAT(log->Seal(), IsOk());
  const std::string content = ReadFileOrMissing(path);
  EXPECT_THAT(content, HasSubstr("\"event\":\"epoch_close\",\"records\":0"));
  VerifyResult result = Verify(content, key);
  EXPECT_TRUE(result.intact()) << result.detail;
  EXPECT_GE(result.epochs_closed, 3u);
}

TEST(AuditLogAppendTest, ClockSteppingBackDoesNotBreakTheOrder) {
  TempDir dir;
  const std::string path = dir.Child("log");
  const AuditKey key = TestKey();
  auto now = std::make_shared<absl::Time>(absl::FromUnixSeconds(2000000000));
  AuditLogOptions options = SmallEpochs(0);
  options.clock = [now] { return *now; };
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(path, Copy(key), kSession, options));
  ASSERT_THAT(log->Append(AuditRecord{}), IsOk());
  *now -= absl::Hours(1);
  ASSERT_THAT(log->Append(AuditRecord{}), IsOk());
  ASSERT_THAT(log->Seal(), IsOk());
  VerifyResult result = Verify(ReadFileOrMissing(path), key);
  EXPECT_TRUE(result.intact()) << result.detail;
}

TEST(AuditLogDurabilityTest, APendingRecordIsInTheFileAtOnceAndDurableWhenAwaited) {
  TempDir dir;
  const std::string path = dir.Child("log");
  const AuditKey key = TestKey();
  auto syncs = std::make_shared<std::atomic<int>>(0);
  AuditLogOptions options = SmallEpochs(0);
  options.flush_delay = absl::Hours(1);  // only waiters sync
  options.sync_for_testing = [syncs](int fd) {
    ++*syncs;
    return ::fdatasync(fd);
  };
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(path, Copy(key), kSession, options));
  AuditRecord record;
  record.detail = "intent: replace atomically";
  AIRLOCK_ASSERT_OK_AND_ASSIGN(PendingRecord pending, log->AppendPending(record));
  EXPECT_EQ(pending.seq, 1u);
  EXPECT_EQ(pending.end, ReadFileOrMissing(path).size());
  ASSERT_THAT(log->AwaitDurable(pending), IsOk());
  EXPECT_GE(syncs->load(), 1);
  const int after_intent = syncs->load();
  // A buffered record does not sync by itself (the delay is an hour) ...
  ASSERT_THAT(log->Append(AuditRecord{}, Durability::kBuffered), IsOk());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(syncs->load(), after_intent);
  // ... but the next durable one covers it with one sync.
  ASSERT_THAT(log->Append(AuditRecord{}, Durability::kDurable), IsOk());
  EXPECT_EQ(syncs->load(), after_intent + 1);
  ASSERT_THAT(log->Seal(), IsOk());
  VerifyResult result = Verify(ReadFileOrMissing(path), key);
  EXPECT_TRUE(result.intact()) << result.detail;
  EXPECT_EQ(result.records, 4u);
}

TEST(AuditLogDurabilityTest, BufferedRecordsAreFlushedInTheBackground) {
  TempDir dir;
  const std::string path = dir.Child("log");
  auto syncs = std::make_shared<std::atomic<int>>(0);
  AuditLogOptions options = SmallEpochs(0);
  options.flush_delay = absl::Milliseconds(2);
  options.sync_for_testing = [syncs](int fd) {
    ++*syncs;
    return ::fdatasync(fd);
  };
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(path, TestKey(), kSession, options));
  ASSERT_THAT(log->Append(AuditRecord{}, Durability::kBuffered), IsOk());
  for (int i = 0; i < 5000 && syncs->load() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(syncs->load(), 1);
}

TEST(AuditLogDurabilityTest, AKilledBrokerLosesNoWrittenRecordAndTheLogIsRecovered) {
  // Buffered records not yet synced are in the file once Append returns: SIGKILL loses none
  // of them (only a power loss could take the unsynced tail, which Open then cuts and
  // explains).
  TempDir dir;
  const std::string path = dir.Child("log");
  const AuditKey key = TestKey();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    AuditLogOptions options = SmallEpochs(0);
    options.flush_delay = absl::Hours(1);
    absl::StatusOr<std::unique_ptr<AuditLog>> log =
        AuditLog::Open(path, Copy(key), kSession, options);
    if (!log.ok()) ::_exit(2);
    AuditRecord record;
    record.detail = "buffered outcome";
    for (int i = 0; i < 5; ++i) {
      if (!(*log)->Append(record, Durability::kBuffered).ok()) ::_exit(3);
    }
    ::kill(::getpid(), SIGKILL);
    ::_exit(4);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(path, Copy(key), kSession, SmallEpochs(0)));
  EXPECT_EQ(log->open_outcome(), OpenOutcome::kRecovered);
  EXPECT_EQ(log->last_seq(), 6u);  // five records, then the recovery record
  ASSERT_THAT(log->Seal(), IsOk());
  VerifyResult result = Verify(ReadFileOrMissing(path), key);
  EXPECT_TRUE(result.intact()) << result.detail;
}

TEST(AuditLogDurabilityTest, AFailedSyncRefusesTheWaiterAndBreaksTheLog) {
  TempDir dir;
  const std::string path = dir.Child("log");
  const AuditKey key = TestKey();
  auto fail = std::make_shared<std::atomic<bool>>(false);
  AuditLogOptions options = SmallEpochs(0);
  options.sync_for_testing = [fail](int fd) {
    if (fail->load()) {
      errno = EIO;
      return -1;
    }
    return ::fdatasync(fd);
  };
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(path, Copy(key), kSession, options));
  ASSERT_THAT(log->Append(AuditRecord{}), IsOk());
  fail->store(true);
  AIRLOCK_ASSERT_OK_AND_ASSIGN(PendingRecord pending, log->AppendPending(AuditRecord{}));
  absl::Status durable = log->AwaitDurable(pending);
  EXPECT_FALSE(durable.ok());
  EXPECT_THAT(durable.message(), HasSubstr("can no longer be written"));
  EXPECT_THAT(durable.message(), HasSubstr("fdatasync"));
  // Fail closed: syncs would work again, but what the failed one lost is unknown.
  fail->store(false);
  EXPECT_THAT(log->Append(AuditRecord{}), Not(IsOk()));
  EXPECT_THAT(log->Append(AuditRecord{}, Durability::kBuffered), Not(IsOk()));
  EXPECT_TRUE(log->CurrentKeyForTesting().empty());
}

// Fills the filesystem under `path` and checks that appends fail, leave the log verifiable,
// and work again once there is room.
void ExpectFullFilesystemRefusesAppends(const std::string& directory) {
  const std::string path = directory + "/log";
  const AuditKey key = TestKey();
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(path, Copy(key), kSession, SmallEpochs(0)));
  ASSERT_THAT(log->Append(AuditRecord{}), IsOk());
  // Fill every block.
  const std::string filler = directory + "/filler";
  {
    int fd = ::open(filler.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    const std::string block(512, 'f');
    while (::write(fd, block.data(), block.size()) > 0) {
    }
    const std::string byte = "f";
    while (::write(fd, byte.data(), 1) > 0) {
    }
    ::close(fd);
  }
  AuditRecord record;
  record.target = "/" + std::string(3000, 'p');
  bool refused = false;
  for (int i = 0; i < 64 && !refused; ++i) {
    absl::StatusOr<uint64_t> appended = log->Append(record);
    if (!appended.ok()) {
      refused = true;
      EXPECT_THAT(appended.status().message(), HasSubstr("the action is refused"));
      EXPECT_EQ(appended.status().code(), absl::StatusCode::kResourceExhausted);
    }
  }
  ASSERT_TRUE(refused) << "the filesystem never filled up";
  // What is on disk is whole records only.
  std::string content = ReadFileOrMissing(path);
  ASSERT_FALSE(content.empty());
  EXPECT_EQ(content.back(), '\n');
  EXPECT_EQ(Verify(content, key).problem, AuditProblem::kUnsealed);

  ASSERT_EQ(::unlink(filler.c_str()), 0);
  ASSERT_THAT(log->Append(record), IsOk());
  ASSERT_THAT(log->Seal(), IsOk());
  VerifyResult result = Verify(ReadFileOrMissing(path), key);
  EXPECT_TRUE(result.intact()) << result.detail;
}

TEST(AuditLogFaultTest, FullFilesystemRefusesAppends) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a small tmpfs needs root";
  TempDir dir;
  const std::string mount_point = dir.Child("small");
  ASSERT_EQ(::mkdir(mount_point.c_str(), 0700), 0);
  if (::mount("tmpfs", mount_point.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0700") !=
      0) {
    GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
  }
  ExpectFullFilesystemRefusesAppends(mount_point);
  ::umount2(mount_point.c_str(), MNT_DETACH);
}

TEST(AuditLogFaultTest, FileSizeLimitRefusesAppends) {
  // The same without root: RLIMIT_FSIZE makes write() fail (EFBIG) like a full disk would.
  TempDir dir;
  const std::string path = dir.Child("log");
  const AuditKey key = TestKey();
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AuditLog> log,
                               AuditLog::Open(path, Copy(key), kSession, SmallEpochs(0)));
  ASSERT_THAT(log->Append(AuditRecord{}), IsOk());
  const std::string before = ReadFileOrMissing(path);

  struct rlimit saved;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  struct sigaction ignore = {}, old_action = {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGXFSZ, &ignore, &old_action), 0);
  struct rlimit small = saved;
  small.rlim_cur = before.size() + 100;  // room for part of a record, not all of it
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  AuditRecord record;
  record.target = "/" + std::string(500, 'p');
  absl::StatusOr<uint64_t> appended = log->Append(record);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &saved), 0);
  ASSERT_EQ(::sigaction(SIGXFSZ, &old_action, nullptr), 0);

  EXPECT_THAT(appended, Not(IsOk()));
  // The partial record was cut back off.
  EXPECT_EQ(ReadFileOrMissing(path), before);
  ASSERT_THAT(log->Append(record), IsOk());
  ASSERT_THAT(log->Seal(), IsOk());
  VerifyResult result = Verify(ReadFileOrMissing(path), key);
  EXPECT_TRUE(result.intact()) << result.detail;
  EXPECT_EQ(result.records, 3u);
}

}  // namespace
}  // namespace airlock::broker::audit
