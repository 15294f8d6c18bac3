// A hostile or heavy worker for the reliability tests (SPEC §12), run under `airlock run`. It
// speaks the protocol through platform/ipc on channels it opens itself from AIRLOCK_FD, and
// reports on stdout, one "key: value" line per fact, for the test to judge.
//
//   stress_worker flood-requests N   N read requests on one channel, never reading the answers,
//                                    while a second channel is probed
//   stress_worker flood-channels MAX opens channels until the broker refuses one (or MAX)
//   stress_worker flood-descriptors N  N descriptors over the connector, then frames carrying
//                                    descriptors on channels
//   stress_worker huge-frame         a frame announcing 4 GiB
//   stress_worker load THREADS N BASH_EVERY serial-bash|parallel-bash
//                                    THREADS channels, N mixed requests each (every
//                                    BASH_EVERY-th a bash call), every answer checked
//   stress_worker write-loop PATH SIZE  writes PATH over and over until killed or refused
//   stress_worker probe              one read of "f"
//   stress_worker bash-loop COMMAND  runs COMMAND over and over (crash tests)
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "airlock/v1/wire.pb.h"
#include "platform/base/scoped_fd.h"
#include "platform/ipc/channel.h"
#include "platform/ipc/connector.h"
#include "platform/ipc/socket_io.h"

namespace airlock::stress {
namespace {

using v1::BrokerMessage;
using v1::ClientMessage;

std::mutex output_mutex;

template <typename... Args>
void Say(const Args&... args) {
  std::lock_guard<std::mutex> lock(output_mutex);
  std::string line = absl::StrCat(args...);
  line.push_back('\n');
  (void)!::write(1, line.data(), line.size());
}

int Connector() {
  const char* value = std::getenv("AIRLOCK_FD");
  if (value == nullptr) {
    Say("fatal: AIRLOCK_FD is not set");
    std::exit(2);
  }
  return std::atoi(value);
}

// A channel past its handshake, or the broker's refusal.
absl::StatusOr<std::unique_ptr<ipc::Channel>> Open() {
  absl::StatusOr<ScopedFd> fd = ipc::OpenChannel(Connector());
  if (!fd.ok()) return fd.status();
  auto channel = std::make_unique<ipc::Channel>(std::move(*fd));
  ClientMessage hello;
  hello.mutable_hello()->set_protocol_version(v1::PROTOCOL_VERSION_1);
  hello.mutable_hello()->set_client_name("stress_worker");
  // A refused channel is closed unread, so the hello may fail while the refusal waits.
  const absl::Status sent = channel->Send(hello);
  BrokerMessage reply;
  if (absl::Status got = channel->Receive(&reply); !got.ok()) return sent.ok() ? got : sent;
  if (reply.has_protocol_error()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        v1::ErrorCode_Name(reply.protocol_error().code()), " ", reply.protocol_error().message()));
  }
  if (!reply.has_hello_reply()) return absl::InternalError("no hello reply");
  return channel;
}

// One request, one answer (events are skipped).
absl::StatusOr<v1::Response> Call(ipc::Channel& channel, const v1::Request& request) {
  ClientMessage message;
  *message.mutable_request() = request;
  if (absl::Status sent = channel.Send(message); !sent.ok()) return sent;
  for (;;) {
    BrokerMessage reply;
    if (absl::Status got = channel.Receive(&reply); !got.ok()) return got;
    if (reply.has_event()) continue;
    if (reply.has_protocol_error()) {
      return absl::InternalError(absl::StrCat("protocol error: ", reply.protocol_error().message()));
    }
    if (reply.response().id() != request.id()) {
      return absl::InternalError(absl::StrCat("answer for ", reply.response().id(),
                                              " while waiting for ", request.id()));
    }
    return reply.response();
  }
}

v1::Request ReadOf(uint64_t id, const std::string& path) {
  v1::Request request;
  request.set_id(id);
  request.mutable_read()->set_path(path);
  return request;
}

// A read of "f" answered with its content: the broker serves this channel.
bool Probe(ipc::Channel& channel, uint64_t id) {
  absl::StatusOr<v1::Response> response = Call(channel, ReadOf(id, "f"));
  if (!response.ok()) {
    Say("probe-failure: ", response.status().ToString());
    return false;
  }
  if (!response->has_read()) {
    Say("probe-failure: ", response->ShortDebugString());
    return false;
  }
  return true;
}

int FloodRequests(uint64_t count) {
  auto probe = Open();
  auto flood = Open();
  if (!probe.ok() || !flood.ok()) {
    Say("fatal: cannot open channels");
    return 2;
  }
  std::atomic<bool> done{false};
  std::atomic<uint64_t> sent{0};
  absl::Status flood_status;
  std::thread flooder([&] {
    ClientMessage message;
    for (uint64_t id = 1; id <= count; ++id) {
      *message.mutable_request() = ReadOf(id, "f");
      flood_status = (*flood)->Send(message);
      if (!flood_status.ok()) break;
      sent = id;
    }
    done = true;
  });
  uint64_t ok = 0, failed = 0, id = 1;
  auto last_progress = std::chrono::steady_clock::now();
  uint64_t last_sent = 0;
  bool stalled_reported = false;
  while (!done) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (Probe(**probe, id++)) ++ok; else ++failed;
    if (sent != last_sent) {
      last_sent = sent;
      last_progress = std::chrono::steady_clock::now();
    } else if (!stalled_reported &&
               std::chrono::steady_clock::now() - last_progress > std::chrono::milliseconds(500)) {
      stalled_reported = true;
      Say("flood-stalled-at: ", last_sent);
    }
  }
  flooder.join();
  for (int i = 0; i < 5; ++i) {
    if (Probe(**probe, id++)) ++ok; else ++failed;
  }
  Say("flood-sent: ", sent.load(), " of ", count);
  Say("flood-status: ", flood_status.ok() ? "all sent" : flood_status.ToString());
  // What the broker had answered before it gave up on the channel is still readable.
  uint64_t answers = 0;
  for (;;) {
    BrokerMessage reply;
    if (!(*flood)->Receive(&reply).ok()) break;
    if (reply.has_response()) ++answers;
  }
  Say("flood-answers-read-afterwards: ", answers);
  Say("probes-ok: ", ok);
  Say("probes-failed: ", failed);
  return 0;
}

int FloodChannels(int max) {
  std::vector<std::unique_ptr<ipc::Channel>> open;
  for (int i = 0; i < max; ++i) {
    auto channel = Open();
    if (!channel.ok()) {
      Say("channel-refused-after: ", open.size());
      Say("channel-refusal: ", channel.status().message());
      break;
    }
    open.push_back(std::move(*channel));
  }
  if (static_cast<int>(open.size()) == max) Say("channel-refused-after: none (", max, " open)");
  Say("held-channel-served: ", !open.empty() && Probe(*open.front(), 1) ? "yes" : "no");
  Say("last-held-channel-served: ", !open.empty() && Probe(*open.back(), 1) ? "yes" : "no");
  open.clear();
  // Closed channels free their places: a new one is served again.
  for (int attempt = 0; attempt < 50; ++attempt) {
    auto channel = Open();
    if (channel.ok()) {
      Say("reopened-channel-served: ", Probe(**channel, 1) ? "yes" : "no");
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  Say("reopened-channel-served: no");
  return 0;
}

// Descriptors in flight count against the sender (ETOOMANYREFS past RLIMIT_NOFILE) until the
// broker has received them: wait for it to catch up, for at most 10 s.
bool InFlightLimit(int error) { return error == ETOOMANYREFS || error == ENOBUFS || error == EAGAIN; }

absl::StatusOr<std::unique_ptr<ipc::Channel>> OpenPatiently() {
  for (int attempt = 0;; ++attempt) {
    auto channel = Open();
    if (channel.ok() || attempt == 100 ||
        !absl::StrContains(channel.status().message(), "Too many references")) {
      return channel;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

int FloodDescriptors(int count) {
  auto probe = Open();
  if (!probe.ok()) {
    Say("fatal: ", probe.status().ToString());
    return 2;
  }
  ScopedFd null_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  int sockets[2];
  if (!null_fd || ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0) {
    Say("fatal: cannot make descriptors to send");
    return 2;
  }
  ScopedFd a(sockets[0]), b(sockets[1]);
  // Over the connector: as many descriptors as one message can carry (SCM_MAX_FD is 253),
  // raw sendmsg since the library refuses to send more than it accepts.
  constexpr int kPerMessage = 250;
  int sent = 0, messages = 0;
  std::vector<int> fds(kPerMessage, b.get());
  const char byte = 'C';
  while (sent < count) {
    iovec iov{const_cast<char*>(&byte), 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kPerMessage)];
    std::memset(control, 0, sizeof(control));
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* header = CMSG_FIRSTHDR(&msg);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int) * kPerMessage);
    std::memcpy(CMSG_DATA(header), fds.data(), sizeof(int) * kPerMessage);
    ssize_t n;
    int waits = 0;
    while ((n = ::sendmsg(Connector(), &msg, MSG_NOSIGNAL)) != 1 && InFlightLimit(errno) &&
           waits++ < 1000) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (n != 1) {
      Say("connector-send-failure: ", std::strerror(errno));
      break;
    }
    sent += kPerMessage;
    ++messages;
  }
  Say("connector-descriptors-sent: ", sent, " in ", messages, " messages");
  // A non-socket as a channel: refused.
  const int not_a_socket[] = {null_fd.get()};
  int refused_non_sockets = 0;
  for (int i = 0; i < 100; ++i) {
    for (int waits = 0; waits < 1000; ++waits) {
      absl::Status sent = ipc::SendWithDescriptors(Connector(), "C", not_a_socket);
      if (sent.ok()) {
        ++refused_non_sockets;
        break;
      }
      if (!absl::StrContains(sent.message(), "Too many references")) {
        Say("connector-send-failure: ", sent.ToString());
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  Say("connector-non-sockets-sent: ", refused_non_sockets);
  // On channels: a frame with descriptors attached costs the channel.
  int closed = 0;
  std::string refusal;
  const int eight[] = {b.get(), b.get(), b.get(), b.get(), b.get(), b.get(), b.get(), b.get()};
  for (int i = 0; i < 100; ++i) {
    auto channel = OpenPatiently();
    if (!channel.ok()) {
      Say("open-failure: ", channel.status().ToString());
      continue;
    }
    ClientMessage message;
    *message.mutable_request() = ReadOf(1, "f");
    std::string payload = message.SerializeAsString();
    if (!(*channel)->SendFrame(payload, eight).ok()) continue;
    BrokerMessage reply;
    if ((*channel)->Receive(&reply).ok() && reply.has_protocol_error()) {
      refusal = reply.protocol_error().message();
      BrokerMessage after;
      if (!(*channel)->Receive(&after).ok()) ++closed;
    }
  }
  Say("channels-closed-for-descriptors: ", closed);
  Say("channel-refusal: ", refusal);
  Say("probe-after: ", Probe(**probe, 1) ? "ok" : "failed");
  auto fresh = OpenPatiently();
  Say("new-channel-after: ", fresh.ok() && Probe(**fresh, 1) ? "ok" : "failed");
  return 0;
}

int HugeFrame() {
  auto probe = Open();
  auto channel = Open();
  if (!probe.ok() || !channel.ok()) {
    Say("fatal: cannot open channels");
    return 2;
  }
  // 0xffffffff: the largest length a header can announce, 4 GiB - 1.
  std::string bytes = "\xff\xff\xff\xff";
  bytes.append(64 * 1024, 'x');
  absl::Status sent = ipc::SendWithDescriptors((*channel)->fd(), bytes, {});
  Say("huge-frame-sent: ", sent.ok() ? "yes" : sent.ToString());
  BrokerMessage reply;
  absl::Status got = (*channel)->Receive(&reply);
  if (got.ok() && reply.has_protocol_error()) {
    Say("huge-frame-answer: ", v1::ErrorCode_Name(reply.protocol_error().code()), " ",
        reply.protocol_error().message());
    BrokerMessage after;
    Say("huge-frame-channel-closed: ", (*channel)->Receive(&after).ok() ? "no" : "yes");
  } else {
    Say("huge-frame-answer: none (", got.ToString(), ")");
  }
  Say("probe-after: ", Probe(**probe, 1) ? "ok" : "failed");
  return 0;
}

// One channel's share of the load: reads, writes, edits, lists and a few bash calls over its
// own ten files, every answer checked against what this thread last had acknowledged.
struct LoadTally {
  uint64_t answered = 0, failures = 0, reads = 0, writes = 0, edits = 0, lists = 0, bashes = 0;
  std::map<std::string, std::string> expected;  // path -> content last acknowledged
};

// Held around bash calls when they must not overlap (see load_test.cc).
std::mutex bash_mutex;

void LoadThread(int thread, uint64_t count, uint64_t bash_every, bool serial_bash,
                LoadTally* tally) {
  auto channel = Open();
  if (!channel.ok()) {
    Say("load-failure: thread ", thread, ": ", channel.status().ToString());
    tally->failures = count;
    return;
  }
  std::mt19937_64 random(static_cast<uint64_t>(thread) * 7919 + 17);
  auto fail = [&](uint64_t id, const std::string& what) {
    ++tally->failures;
    if (tally->failures <= 5) Say("load-failure: thread ", thread, " request ", id, ": ", what);
  };
  for (uint64_t id = 1; id <= count; ++id) {
    const std::string path = absl::StrCat("load/t", thread, "/f", random() % 10);
    auto known = tally->expected.find(path);
    v1::Request request;
    request.set_id(id);
    const uint64_t pick = random() % 100;
    std::string content;
    std::string edit_new;
    if (bash_every > 0 && id % bash_every == 0) {
      request.mutable_bash()->set_command(absl::StrCat("echo t", thread, "-", id));
    } else if (known == tally->expected.end() || (pick >= 40 && pick < 70)) {
      content = absl::StrCat("t", thread, "-i", id, " ", std::string(random() % 4096, 'x'));
      request.mutable_write()->set_path(path);
      request.mutable_write()->set_content(content);
    } else if (pick < 40) {
      request.mutable_read()->set_path(path);
    } else if (pick < 95) {
      const std::string& old_content = known->second;
      const std::string old_token = old_content.substr(0, old_content.find(' ') + 1);
      edit_new = absl::StrCat("t", thread, "-i", id, " ");
      request.mutable_edit()->set_path(path);
      request.mutable_edit()->set_old_string(old_token);
      request.mutable_edit()->set_new_string(edit_new);
    } else {
      request.mutable_list()->set_path(absl::StrCat("load/t", thread));
    }
    std::unique_lock<std::mutex> bash_lock(bash_mutex, std::defer_lock);
    if (serial_bash && request.has_bash()) bash_lock.lock();
    absl::StatusOr<v1::Response> response = Call(**channel, request);
    if (bash_lock.owns_lock()) bash_lock.unlock();
    if (!response.ok()) {
      fail(id, response.status().ToString());
      if (absl::IsOutOfRange(response.status()) || absl::IsDataLoss(response.status())) return;
      continue;
    }
    ++tally->answered;
    if (response->has_error()) {
      fail(id, response->error().message());
      continue;
    }
    switch (request.body_case()) {
      case v1::Request::kRead:
        ++tally->reads;
        if (response->read().content() != known->second) fail(id, "read returned other content");
        break;
      case v1::Request::kWrite:
        ++tally->writes;
        if (!response->has_write()) fail(id, "no write result");
        tally->expected[path] = content;
        break;
      case v1::Request::kEdit: {
        ++tally->edits;
        if (!response->has_edit() || response->edit().replacements() != 1) {
          fail(id, "edit did not replace once");
          break;
        }
        std::string& current = known->second;
        current = edit_new + current.substr(current.find(' ') + 1);
        break;
      }
      case v1::Request::kList:
        ++tally->lists;
        if (!response->has_list()) fail(id, "no list result");
        break;
      case v1::Request::kBash:
        ++tally->bashes;
        if (!response->has_bash() || response->bash().exit_code() != 0 ||
            response->bash().stdout() != absl::StrCat("t", thread, "-", id, "\n")) {
          fail(id, absl::StrCat("bash: ", response->ShortDebugString().substr(0, 300)));
        }
        break;
      default:
        break;
    }
  }
}

int Load(int threads, uint64_t count, uint64_t bash_every, bool serial_bash) {
  std::vector<LoadTally> tallies(threads);
  std::vector<std::thread> workers;
  const auto start = std::chrono::steady_clock::now();
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back(LoadThread, t, count, bash_every, serial_bash, &tallies[t]);
  }
  for (std::thread& worker : workers) worker.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  LoadTally total;
  for (const LoadTally& tally : tallies) {
    total.answered += tally.answered;
    total.failures += tally.failures;
    total.reads += tally.reads;
    total.writes += tally.writes;
    total.edits += tally.edits;
    total.lists += tally.lists;
    total.bashes += tally.bashes;
    for (const auto& [path, content] : tally.expected) Say("expect: ", path, "\t", content);
  }
  Say("load-answered: ", total.answered);
  Say("load-failures: ", total.failures);
  Say("load-mix: reads ", total.reads, ", writes ", total.writes, ", edits ", total.edits,
      ", lists ", total.lists, ", bash ", total.bashes);
  Say("load-seconds: ", seconds);
  Say("load-requests-per-second: ", static_cast<uint64_t>(total.answered / seconds));
  return 0;
}

// Crash tests: the broker is killed while these run.
int WriteLoop(const std::string& path, size_t size) {
  auto channel = Open();
  if (!channel.ok()) return 2;
  for (uint64_t id = 1;; ++id) {
    v1::Request request;
    request.set_id(id);
    request.mutable_write()->set_path(path);
    request.mutable_write()->set_content(std::string(size, static_cast<char>('a' + id % 26)));
    absl::StatusOr<v1::Response> response = Call(**channel, request);
    if (!response.ok()) return 0;
    if (response->has_error()) {
      Say("write-refused: ", v1::ErrorCode_Name(response->error().code()), " ",
          response->error().message());
      return 0;
    }
    Say("write-acknowledged: ", std::string(1, static_cast<char>('a' + id % 26)));
  }
}

int BashLoop(const std::string& command) {
  auto channel = Open();
  if (!channel.ok()) return 2;
  for (uint64_t id = 1;; ++id) {
    v1::Request request;
    request.set_id(id);
    request.mutable_bash()->set_command(command);
    if (!Call(**channel, request).ok()) return 0;
  }
}

}  // namespace
}  // namespace airlock::stress

int main(int argc, char** argv) {
  using namespace airlock::stress;
  ::signal(SIGPIPE, SIG_IGN);
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "flood-requests" && argc == 3) return FloodRequests(std::strtoull(argv[2], nullptr, 10));
  if (mode == "flood-channels" && argc == 3) return FloodChannels(std::atoi(argv[2]));
  if (mode == "flood-descriptors" && argc == 3) return FloodDescriptors(std::atoi(argv[2]));
  if (mode == "huge-frame" && argc == 2) return HugeFrame();
  if (mode == "probe" && argc == 2) {
    auto channel = Open();
    Say("probe: ", channel.ok() && Probe(**channel, 1) ? "ok" : "failed");
    return 0;
  }
  if (mode == "load" && argc == 6) {
    return Load(std::atoi(argv[2]), std::strtoull(argv[3], nullptr, 10),
                std::strtoull(argv[4], nullptr, 10), std::string(argv[5]) == "serial-bash");
  }
  if (mode == "write-loop" && argc == 4) return WriteLoop(argv[2], std::strtoull(argv[3], nullptr, 10));
  if (mode == "bash-loop" && argc == 3) return BashLoop(argv[2]);
  Say("usage: stress_worker flood-requests N | flood-channels MAX | flood-descriptors N | "
      "huge-frame");
  return 64;
}
