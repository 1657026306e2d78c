// colltestd's listener and stream limits, end to end (docs/limits.md): a connection flood at a
// reduced descriptor limit neither kills the listener nor starves the workers, idle connections
// are closed after the handshake timeout, a client that never reads its Sweep stream loses its run
// instead of holding the devices, and a burst of concurrent clients is served without loss.
#include <arpa/inet.h>
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <iostream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/integration/daemon.h"

namespace colltest::testing {
namespace {

namespace v1 = ::colltest::v1;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

// At 256 descriptors and 4 devices the default cap is (256 - 64 - 8 x 4) / 2 = 80.
constexpr uint64_t kFdLimit = 256;
constexpr size_t kDefaultCapAt256 = 80;
constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

class Socket {
 public:
  explicit Socket(int fd = -1) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) close(fd_);
  }
  Socket(Socket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Socket& operator=(Socket&&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

// A blocking TCP connection to "127.0.0.1:PORT".
Socket Connect(const std::string& address) {
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1))));
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  Socket s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (connect(s.fd(), reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) return Socket();
  return s;
}

bool SendAll(int fd, const std::string& bytes) {
  return send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
}

// True once the server has closed the connection (EOF or reset), data it sent aside.
bool ClosedByServer(int fd) {
  char buf[4096];
  for (;;) {
    const ssize_t got = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (got == 0) return true;
    if (got < 0) return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
  }
}

// Waits up to `limit` for at least `want` of `sockets` to be closed by the server; returns how many
// are.
size_t WaitClosed(const std::vector<Socket>& sockets, size_t want, Clock::duration limit) {
  const auto end = Clock::now() + limit;
  std::vector<bool> closed(sockets.size(), false);
  size_t count = 0;
  for (;;) {
    for (size_t i = 0; i < sockets.size(); ++i) {
      if (!closed[i] && ClosedByServer(sockets[i].fd())) {
        closed[i] = true;
        ++count;
      }
    }
    if (count >= want || Clock::now() >= end) return count;
    std::this_thread::sleep_for(milliseconds(50));
  }
}

std::unique_ptr<v1::CollectiveTest::Stub> FreshStub(const std::string& address) {
  // A channel of its own: a new connection, not one that got through before.
  grpc::ChannelArguments args;
  args.SetInt("grpc.use_local_subchannel_pool", 1);
  return v1::CollectiveTest::NewStub(
      grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));
}

grpc::Status ListDevicesWithin(const std::string& address, Clock::duration limit) {
  auto stub = FreshStub(address);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + limit);
  ctx.set_wait_for_ready(true);  // connection refusals count against the deadline, not as failure
  v1::ListDevicesRequest request;
  v1::ListDevicesResponse response;
  return stub->ListDevices(&ctx, request, &response);
}

v1::SweepSpec SmallSpec(std::vector<uint32_t> devices, uint32_t cases) {
  v1::SweepSpec s;
  s.set_world_size(static_cast<uint32_t>(devices.size()));
  for (uint32_t d : devices) s.add_devices(d);
  for (uint32_t m = 1; m <= cases; ++m) s.add_m(m);
  s.add_n(1024);
  s.add_variants(v1::VARIANT_LAMPORT);
  s.set_pattern(v1::PATTERN_INTEGERS);
  s.set_warmup(1);
  s.set_iters(2);
  return s;
}

bool AllOk(const v1::RunResult& run) {
  if (run.state() != v1::RUN_STATE_DONE) return false;
  for (const v1::CaseResult& c : run.cases()) {
    if (c.status() != v1::CASE_STATUS_OK) return false;
  }
  return true;
}

// Holds `count` connections; with `preface` each sends the HTTP/2 client preface, so the ones under
// the cap are handed to gRPC and stay open there.
std::vector<Socket> Flood(const std::string& address, size_t count, bool preface) {
  std::vector<Socket> sockets;
  for (size_t i = 0; i < count; ++i) {
    Socket s = Connect(address);
    if (s.fd() < 0) continue;
    if (preface) SendAll(s.fd(), std::string(kPreface, sizeof(kPreface) - 1));
    sockets.push_back(std::move(s));
  }
  return sockets;
}

TEST(ListenerTest, PrintsTheChosenPortAndServesOnIt) {
  auto d = Daemon::Start(2);
  ASSERT_NE(d, nullptr);
  const std::string& address = d->address();
  ASSERT_EQ(address.rfind("127.0.0.1:", 0), 0u) << address;
  EXPECT_NE(std::stoi(address.substr(address.rfind(':') + 1)), 0) << address;
  EXPECT_TRUE(ListDevicesWithin(address, seconds(10)).ok());
}

TEST(ListenerTest, ServesOnAUnixSocket) {
  const std::string path = "/tmp/colltest-listener-" + std::to_string(getpid()) + ".sock";
  auto d = Daemon::StartWithBackend("cpu", {"--cpu-ranks", "2", "--listen", "unix:" + path});
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->address(), "unix:" + path);
  EXPECT_TRUE(ListDevicesWithin(d->address(), seconds(10)).ok());
  d->Stop();
  EXPECT_NE(access(path.c_str(), F_OK), 0) << "the socket file is removed at the end";
}

// 2x the descriptor limit in connections that speak HTTP/2: the cap closes the excess at once, the
// workers keep their descriptors (a sweep running through the flood completes OK), and once the
// flood is gone the cap frees up within a prune interval.
TEST(ListenerTest, FloodAtTheFdLimitLeavesTheDaemonServing) {
  auto d = Daemon::StartWithBackend("cpu", {"--cpu-ranks", "4"}, {}, kFdLimit);
  ASSERT_NE(d, nullptr);
  auto stub = d->Stub();
  v1::RunResult sweep;
  grpc::Status sweep_status;
  std::thread sweeper([&] {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + seconds(120));
    v1::RunRequest request;
    *request.mutable_spec() = SmallSpec({0, 1, 2, 3}, 96);
    sweep_status = stub->Run(&ctx, request, &sweep);
  });
  std::this_thread::sleep_for(milliseconds(300));  // the sweep's connection is in
  std::vector<Socket> flood = Flood(d->address(), 2 * kFdLimit, /*preface=*/true);
  EXPECT_GE(flood.size(), 2 * kFdLimit - 8);
  const size_t beyond_cap = flood.size() - kDefaultCapAt256;
  EXPECT_GE(WaitClosed(flood, beyond_cap, seconds(5)), beyond_cap);
  EXPECT_EQ(kill(d->pid(), 0), 0) << "colltestd died";
  sweeper.join();
  ASSERT_TRUE(sweep_status.ok()) << sweep_status.error_message();
  EXPECT_TRUE(AllOk(sweep)) << sweep.message();
  flood.clear();
  const auto start = Clock::now();
  const grpc::Status after = ListDevicesWithin(d->address(), seconds(2));
  EXPECT_TRUE(after.ok()) << after.error_message() << " after "
                          << std::chrono::duration_cast<milliseconds>(Clock::now() - start).count()
                          << " ms";
}

// With a cap above what the descriptors allow, accept meets EMFILE: the listener pauses and goes
// on (gRPC 1.51's own listener stopped for good), so the daemon answers once the flood is gone.
TEST(ListenerTest, AcceptErrorsPauseButNeverStopListening) {
  auto d = Daemon::StartWithBackend("cpu", {"--cpu-ranks", "4", "--max-connections", "5000"}, {},
                                    kFdLimit);
  ASSERT_NE(d, nullptr);
  std::vector<Socket> flood = Flood(d->address(), 2 * kFdLimit, /*preface=*/true);
  std::this_thread::sleep_for(seconds(1));  // let it run into EMFILE
  EXPECT_EQ(kill(d->pid(), 0), 0) << "colltestd died";
  flood.clear();
  const grpc::Status after = ListDevicesWithin(d->address(), seconds(2));
  EXPECT_TRUE(after.ok()) << after.error_message();
}

// Connections that never send the preface hold a slot for the handshake timeout only; a client
// then gets through while they are still open on the client's side.
TEST(ListenerTest, IdleConnectionsAreClosedAfterTheHandshakeTimeout) {
  auto d = Daemon::StartWithBackend("cpu", {"--cpu-ranks", "4", "--handshake-timeout", "1s"}, {},
                                    kFdLimit);
  ASSERT_NE(d, nullptr);
  const auto start = Clock::now();
  std::vector<Socket> idle = Flood(d->address(), 200, /*preface=*/false);
  ASSERT_EQ(idle.size(), 200u);
  EXPECT_EQ(WaitClosed(idle, idle.size(), seconds(5)), idle.size());
  EXPECT_GE(Clock::now() - start, milliseconds(900)) << "closed before the handshake timeout";
  const grpc::Status fresh = ListDevicesWithin(d->address(), seconds(2));
  EXPECT_TRUE(fresh.ok()) << fresh.error_message();
}

// --- a raw HTTP/2 client that opens a Sweep and then never reads ---

std::string Frame(uint8_t type, uint8_t flags, uint32_t stream, const std::string& payload) {
  std::string f;
  const uint32_t length = static_cast<uint32_t>(payload.size());
  f.push_back(static_cast<char>(length >> 16));
  f.push_back(static_cast<char>(length >> 8));
  f.push_back(static_cast<char>(length));
  f.push_back(static_cast<char>(type));
  f.push_back(static_cast<char>(flags));
  for (int shift = 24; shift >= 0; shift -= 8) f.push_back(static_cast<char>(stream >> shift));
  return f + payload;
}

// HPACK "literal header field without indexing, new name", no Huffman (lengths < 127).
std::string Literal(const std::string& name, const std::string& value) {
  std::string h(1, '\0');
  h.push_back(static_cast<char>(name.size()));
  h += name;
  h.push_back(static_cast<char>(value.size()));
  return h + value;
}

// Preface, SETTINGS with INITIAL_WINDOW_SIZE 0 (the server may send no DATA on any stream), the
// Sweep call's HEADERS and its one DATA frame (gRPC's 5-byte prefix and the request).
std::string UnreadSweepBytes(const v1::SweepSpec& spec) {
  constexpr uint8_t kData = 0, kHeaders = 1, kSettings = 4;
  constexpr uint8_t kEndStream = 1, kEndHeaders = 4;
  std::string bytes(kPreface, sizeof(kPreface) - 1);
  bytes += Frame(kSettings, 0, 0, std::string("\x00\x04\x00\x00\x00\x00", 6));
  const std::string headers =
      Literal(":method", "POST") + Literal(":scheme", "http") +
      Literal(":path", "/colltest.v1.CollectiveTest/Sweep") + Literal(":authority", "localhost") +
      Literal("content-type", "application/grpc") + Literal("te", "trailers");
  bytes += Frame(kHeaders, kEndHeaders, 1, headers);
  v1::RunRequest request;
  *request.mutable_spec() = spec;
  const std::string message = request.SerializeAsString();
  std::string grpc_message(1, '\0');
  for (int shift = 24; shift >= 0; shift -= 8) {
    grpc_message.push_back(static_cast<char>(message.size() >> shift));
  }
  bytes += Frame(kData, kEndStream, 1, grpc_message + message);
  return bytes;
}

std::vector<v1::RunSummary> ListRuns(v1::CollectiveTest::Stub& stub,
                                     const std::string& token = "") {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + seconds(10));
  if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
  v1::ListRunsRequest request;
  request.set_limit(1000);
  v1::ListRunsResponse response;
  if (!stub.ListRuns(&ctx, request, &response).ok()) return {};
  return {response.runs().begin(), response.runs().end()};
}

// A Sweep whose client grants no flow-control window: its sends block, the stream send timeout
// cancels the call, the run is CANCELLED with the reason, and the devices serve the next client.
TEST(ListenerTest, AStreamNobodyReadsLosesItsRunAndFreesTheDevices) {
  auto d = Daemon::Start(4, {"--stream-send-timeout", "1s"});
  ASSERT_NE(d, nullptr);
  Socket raw = Connect(d->address());
  ASSERT_GE(raw.fd(), 0);
  v1::SweepSpec greedy = SmallSpec({0, 1, 2, 3}, 1024);
  greedy.set_label("never reads");
  ASSERT_TRUE(SendAll(raw.fd(), UnreadSweepBytes(greedy)));

  auto stub = d->Stub();
  const auto start = Clock::now();
  v1::RunSummary seen;
  while (Clock::now() - start < seconds(30)) {
    for (const v1::RunSummary& r : ListRuns(*stub)) {
      if (r.label() == "never reads") seen = r;
    }
    if (seen.state() == v1::RUN_STATE_CANCELLED) break;
    std::this_thread::sleep_for(milliseconds(100));
  }
  ASSERT_EQ(seen.state(), v1::RUN_STATE_CANCELLED)
      << v1::RunState_Name(seen.state()) << " after 30 s, " << seen.cases() << " cases";
  EXPECT_LT(seen.cases(), 1024u);
  grpc::ClientContext get_ctx;
  v1::GetRunRequest get;
  get.set_run_id(seen.run_id());
  v1::RunResult greedy_run;
  ASSERT_TRUE(stub->GetRun(&get_ctx, get, &greedy_run).ok());
  EXPECT_NE(greedy_run.message().find("the client stopped reading its stream"), std::string::npos)
      << greedy_run.message();

  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + seconds(30));
  v1::RunRequest next;
  *next.mutable_spec() = SmallSpec({0, 1, 2, 3}, 4);
  v1::RunResult result;
  const grpc::Status status = stub->Run(&ctx, next, &result);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(AllOk(result)) << result.message();
}

// --- load: many concurrent clients, Run and Sweep, overlapping device groups ---

struct LoadTally {
  std::mutex mu;
  std::vector<std::string> run_ids;
  std::vector<std::string> failures;
};

// Each load client's bearer token (LoadTokenFile): 32 clients are 32 callers, as 32 CI jobs with
// their own tokens are, so that each has its own share of --max-active-runs-per-owner.
std::string LoadToken(int client) { return absl::StrCat("load-client-token-", 1000 + client); }

std::string LoadTokenFile(int clients) {
  std::string text = "# one runner per load client\n";
  for (int c = 0; c < clients; ++c) {
    absl::StrAppend(&text, "load-", c, " runner ", LoadToken(c), "\n");
  }
  return WriteTokenFile("colltestd_load_tokens", text);
}

void LoadClient(const std::string& address, int client, int requests, LoadTally& tally) {
  auto stub = FreshStub(address);
  // Two pairs that run side by side, and two clients that need all four devices: each of their
  // runs makes the pool stop both pairs' workers and start a group of four (about 130 ms per
  // switch on the cpu backend), which bounds how many the test can afford. World 1 does not exist:
  // a collective needs two ranks.
  const std::vector<uint32_t> devices = client % 16 == 15 ? std::vector<uint32_t>{0, 1, 2, 3}
                                        : client % 2 == 0 ? std::vector<uint32_t>{0, 1}
                                                          : std::vector<uint32_t>{2, 3};
  for (int i = 0; i < requests; ++i) {
    v1::RunRequest request;
    *request.mutable_spec() = SmallSpec(devices, 1);
    request.mutable_spec()->set_iters(1);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + seconds(60));
    ctx.AddMetadata("authorization", "Bearer " + LoadToken(client));
    std::string run_id, failure;
    if ((client + i) % 2 == 0) {
      v1::RunResult result;
      const grpc::Status s = stub->Run(&ctx, request, &result);
      run_id = result.run_id();
      if (!s.ok() || !AllOk(result)) failure = s.error_message() + result.message();
    } else {
      auto reader = stub->Sweep(&ctx, request);
      v1::SweepEvent event;
      bool done = false;
      while (reader->Read(&event)) {
        if (event.has_summary()) {
          run_id = event.summary().run_id();
          done = AllOk(event.summary());
        }
      }
      const grpc::Status s = reader->Finish();
      if (!s.ok() || !done) failure = s.error_message() + " (sweep without a DONE summary)";
    }
    std::lock_guard<std::mutex> lock(tally.mu);
    if (!run_id.empty()) tally.run_ids.push_back(run_id);
    if (!failure.empty()) tally.failures.push_back(failure);
  }
}

TEST(ListenerTest, ThirtyTwoClientsAreAllAnswered) {
  constexpr int kClients = 32, kRequests = 20;
  auto d = Daemon::Start(4, {"--token-file", LoadTokenFile(kClients)});
  ASSERT_NE(d, nullptr);
  LoadTally tally;
  const auto start = Clock::now();
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] { LoadClient(d->address(), c, kRequests, tally); });
  }
  for (std::thread& t : clients) t.join();
  const auto took = Clock::now() - start;
  EXPECT_LT(took, seconds(60));
  std::cout << "load: " << kClients * kRequests << " requests in "
            << std::chrono::duration_cast<milliseconds>(took).count() << " ms\n";
  EXPECT_TRUE(tally.failures.empty())
      << tally.failures.size()
      << " failed, first: " << (tally.failures.empty() ? "" : tally.failures[0]);
  ASSERT_EQ(tally.run_ids.size(), static_cast<size_t>(kClients * kRequests));
  auto stub = d->Stub();
  std::set<std::string> done;
  for (const v1::RunSummary& r : ListRuns(*stub, LoadToken(0))) {
    if (r.state() == v1::RUN_STATE_DONE) done.insert(r.run_id());
  }
  for (const std::string& id : tally.run_ids) EXPECT_TRUE(done.count(id)) << id << " not DONE";
}

}  // namespace
}  // namespace colltest::testing
