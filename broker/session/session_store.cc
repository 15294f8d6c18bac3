#include "broker/session/session_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "broker/session/settings.h"
#include "broker/wire_error.h"
#include "broker/session/strict_json.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "platform/base/errno_status.h"
#include "platform/base/fd_io.h"
#include "platform/base/status_macros.h"

namespace airlock::broker {
namespace {

constexpr size_t kMaxSessionBytes = 256u << 20;
// Tool calls and results waiting for the writer thread, at most.
constexpr size_t kMaxQueuedEntries = 1024;

absl::Status ParseLine(absl::string_view line, google::protobuf::Message* message,
                       absl::string_view origin, size_t line_number) {
  return ParseStrictJson(line, message, absl::StrCat(origin, " line ", line_number));
}

absl::Status FsyncDirectory(const std::string& dir) {
  ScopedFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return LastErrnoStatus("open", dir);
  if (::fsync(fd.get()) != 0) return LastErrnoStatus("fsync", dir);
  return absl::OkStatus();
}

absl::Status EnsurePrivateDirectory(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return LastErrnoStatus("mkdir", dir);
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) return LastErrnoStatus("stat", dir);
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(dir, " is not a directory"));
  }
  if (st.st_uid != ::geteuid()) {
    return absl::FailedPreconditionError(
        absl::StrCat(dir, " is owned by uid ", st.st_uid, ", not by this user"));
  }
  return absl::OkStatus();
}

bool SameContext(const v1::ContextSnapshot& a, const v1::ContextSnapshot& b) {
  v1::ContextSnapshot x = a, y = b;
  x.clear_time();
  x.clear_reason();
  y.clear_time();
  y.clear_reason();
  return google::protobuf::util::MessageDifferencer::Equals(x, y);
}

}  // namespace

bool IsValidSessionId(absl::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

v1::ContextSnapshot SnapshotOfContext(const v1::Context& context) {
  v1::ContextSnapshot snapshot;
  snapshot.set_preset(std::string(PresetName(context.preset())));
  snapshot.set_mode(std::string(ModeName(context.mode())));
  for (const std::string& root : context.roots()) snapshot.add_roots(root);
  snapshot.set_shell_network(context.shell_network() == v1::NETWORK_POLICY_HOST ? "host" : "none");
  snapshot.set_worker_network(context.worker_network() == v1::NETWORK_POLICY_NONE ? "none"
                                                                                  : "host");
  snapshot.set_policy_epoch(context.policy_epoch());
  return snapshot;
}

std::string NowRfc3339() {
  timespec now;
  ::clock_gettime(CLOCK_REALTIME, &now);
  tm utc;
  ::gmtime_r(&now.tv_sec, &utc);
  return absl::StrFormat("%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1,
                         utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                         static_cast<int>(now.tv_nsec / 1000000));
}

absl::StatusOr<SessionStore::Parsed> SessionStore::Parse(absl::string_view bytes,
                                                         absl::string_view origin) {
  if (bytes.empty()) return absl::InvalidArgumentError(absl::StrCat(origin, ": empty file"));
  if (bytes.back() != '\n') {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": truncated (the last line has no newline)"));
  }
  std::vector<absl::string_view> lines = absl::StrSplit(bytes.substr(0, bytes.size() - 1), '\n');
  Parsed parsed;
  AIRLOCK_RETURN_IF_ERROR(ParseLine(lines[0], &parsed.header, origin, 1));
  if (parsed.header.version() != kSessionVersion) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": unsupported session version ",
                                                   parsed.header.version(), " (this broker reads ",
                                                   kSessionVersion, ")"));
  }
  if (parsed.header.permission_preset().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": header has no permissionPreset"));
  }
  if (!IsPresetName(parsed.header.permission_preset())) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": invalid permissionPreset \"",
                                                   parsed.header.permission_preset(), "\""));
  }
  for (size_t i = 1; i < lines.size(); ++i) {
    v1::SessionEntry entry;
    AIRLOCK_RETURN_IF_ERROR(ParseLine(lines[i], &entry, origin, i + 1));
    if (entry.entry_case() == v1::SessionEntry::ENTRY_NOT_SET) {
      return absl::InvalidArgumentError(absl::StrCat(origin, " line ", i + 1, ": empty entry"));
    }
    if (entry.has_context()) {
      if (!IsPresetName(entry.context().preset())) {
        return absl::InvalidArgumentError(absl::StrCat(origin, " line ", i + 1,
                                                       ": invalid preset \"",
                                                       entry.context().preset(), "\""));
      }
      parsed.last_context = entry.context();
    }
    ++parsed.entries;
  }
  return parsed;
}

absl::StatusOr<std::unique_ptr<SessionStore>> SessionStore::Create(const std::string& sessions_dir,
                                                                  const std::string& id,
                                                                  const std::string& preset,
                                                                  const std::string& workspace) {
  if (!IsValidSessionId(id)) return absl::InvalidArgumentError(absl::StrCat("invalid session id \"", id, "\""));
  if (!IsPresetName(preset)) return absl::InvalidArgumentError(absl::StrCat("invalid preset \"", preset, "\""));
  AIRLOCK_RETURN_IF_ERROR(EnsurePrivateDirectory(sessions_dir));
  const std::string path = absl::StrCat(sessions_dir, "/", id, ".jsonl");
  ScopedFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_NOFOLLOW | O_CLOEXEC,
                     0600));
  if (!fd) return LastErrnoStatus("create session file", path);
  v1::SessionHeader header;
  header.set_version(kSessionVersion);
  header.set_id(id);
  header.set_permission_preset(preset);
  header.set_created_at(NowRfc3339());
  header.set_workspace(workspace);
  std::unique_ptr<SessionStore> store(
      new SessionStore(path, std::move(fd), header, std::nullopt));
  AIRLOCK_RETURN_IF_ERROR(store->StartSync());
  {
    std::string line;
    if (!google::protobuf::util::MessageToJsonString(header, &line).ok()) {
      return absl::InternalError("cannot serialize the session header");
    }
    line.push_back('\n');
    std::lock_guard<std::mutex> lock(store->mutex_);
    AIRLOCK_RETURN_IF_ERROR(store->WriteLocked(line));
    AIRLOCK_RETURN_IF_ERROR(store->sync_->WaitThrough(store->size_));
  }
  AIRLOCK_RETURN_IF_ERROR(FsyncDirectory(sessions_dir));
  return store;
}

absl::StatusOr<std::unique_ptr<SessionStore>> SessionStore::Resume(const std::string& sessions_dir,
                                                                  const std::string& id) {
  if (!IsValidSessionId(id)) return absl::InvalidArgumentError(absl::StrCat("invalid session id \"", id, "\""));
  const std::string path = absl::StrCat(sessions_dir, "/", id, ".jsonl");
  ScopedFd fd(::open(path.c_str(), O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd) return LastErrnoStatus("open session", path);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return LastErrnoStatus("stat", path);
  if (!S_ISREG(st.st_mode)) return absl::InvalidArgumentError(absl::StrCat(path, " is not a regular file"));
  AIRLOCK_ASSIGN_OR_RETURN(std::string bytes, ReadToEnd(fd.get(), kMaxSessionBytes, path));
  AIRLOCK_ASSIGN_OR_RETURN(Parsed parsed, Parse(bytes, path));
  if (parsed.header.id() != id) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": header names session \"",
                                                   parsed.header.id(), "\""));
  }
  std::unique_ptr<SessionStore> store(new SessionStore(
      path, std::move(fd), std::move(parsed.header), std::move(parsed.last_context)));
  AIRLOCK_RETURN_IF_ERROR(store->StartSync());
  return store;
}

absl::Status SessionStore::StartSync() {
  struct stat st;
  if (::fstat(fd_.get(), &st) != 0) return LastErrnoStatus("stat", path_);
  size_ = static_cast<uint64_t>(st.st_size);
  sync_ = std::make_unique<GroupSync>(fd_.get(), size_, absl::StrCat("session ", path_));
  writer_ = std::thread([this] { WriterLoop(); });
  return absl::OkStatus();
}

SessionStore::~SessionStore() {
  if (writer_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(queue_mutex_);
      stopping_ = true;
    }
    queue_cv_.notify_one();
    writer_.join();  // after writing what is queued
  }
  sync_.reset();  // syncs what was written
}

absl::StatusOr<uint64_t> SessionStore::Enqueue(v1::SessionEntry entry) {
  uint64_t ticket = 0;
  {
    std::unique_lock<std::mutex> lock(queue_mutex_);
    // Bounded: a writer held up by the disk holds up the calls, rather than growing memory.
    written_cv_.wait(lock, [this] {
      return queue_.size() < kMaxQueuedEntries || !write_failure_.ok();
    });
    if (!write_failure_.ok()) return write_failure_;
    queue_.push_back(std::move(entry));
    ticket = ++queued_;
  }
  queue_cv_.notify_one();
  return ticket;
}

absl::Status SessionStore::AwaitWritten(uint64_t ticket) {
  std::unique_lock<std::mutex> lock(queue_mutex_);
  written_cv_.wait(lock, [this, ticket] { return written_ >= ticket; });
  return write_failure_;
}

void SessionStore::WriterLoop() {
  std::unique_lock<std::mutex> lock(queue_mutex_);
  for (;;) {
    queue_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything is written
    std::deque<v1::SessionEntry> batch;
    batch.swap(queue_);
    const uint64_t through = queued_;
    lock.unlock();
    std::string lines;
    absl::Status status;
    for (const v1::SessionEntry& entry : batch) {
      std::string line;
      if (!google::protobuf::util::MessageToJsonString(entry, &line).ok()) {
        status = absl::InternalError("cannot serialize a session record");
        break;
      }
      lines.append(line).push_back('\n');
    }
    if (status.ok()) {
      std::lock_guard<std::mutex> file(mutex_);
      status = WriteLocked(lines);
      if (status.ok()) sync_->Written(size_);
    }
    lock.lock();
    if (!status.ok() && write_failure_.ok()) write_failure_ = status;
    written_ = through;
    written_cv_.notify_all();
  }
}

absl::Status SessionStore::Flush() {
  uint64_t ticket = 0;
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    ticket = queued_;
  }
  AIRLOCK_RETURN_IF_ERROR(AwaitWritten(ticket));
  return sync_->WaitThrough(WrittenBytes());
}

uint64_t SessionStore::WrittenBytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return size_;
}

std::string SessionStore::RecordedPreset() const {
  std::lock_guard<std::mutex> lock(context_mutex_);
  return last_context_.has_value() ? last_context_->preset() : header_.permission_preset();
}

absl::Status SessionStore::WriteLocked(const std::string& lines) {
  AIRLOCK_RETURN_IF_ERROR(sync_->status());
  const ssize_t n = ::write(fd_.get(), lines.data(), lines.size());
  if (n < 0) return LastErrnoStatus("append to session", path_);
  if (n > 0) size_ += static_cast<uint64_t>(n);
  if (static_cast<size_t>(n) != lines.size()) {
    return absl::DataLossError(absl::StrCat("short append to session ", path_));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> SessionStore::RecordContextIfChanged(v1::ContextSnapshot snapshot) {
  std::lock_guard<std::mutex> lock(context_mutex_);
  if (last_context_.has_value() && SameContext(*last_context_, snapshot)) return false;
  if (snapshot.time().empty()) snapshot.set_time(NowRfc3339());
  v1::SessionEntry entry;
  *entry.mutable_context() = snapshot;
  // In order with the calls queued before it, and durable before this returns.
  AIRLOCK_ASSIGN_OR_RETURN(const uint64_t ticket, Enqueue(std::move(entry)));
  AIRLOCK_RETURN_IF_ERROR(AwaitWritten(ticket));
  AIRLOCK_RETURN_IF_ERROR(sync_->WaitThrough(WrittenBytes()));
  last_context_ = std::move(snapshot);
  return true;
}

absl::Status SessionStore::RecordToolCall(const v1::ToolCallRecord& call) {
  v1::SessionEntry entry;
  *entry.mutable_tool_call() = call;
  return Enqueue(std::move(entry)).status();
}

absl::Status SessionStore::RecordToolResult(const v1::ToolResultRecord& result) {
  v1::SessionEntry entry;
  *entry.mutable_tool_result() = result;
  return Enqueue(std::move(entry)).status();
}

}  // namespace airlock::broker
