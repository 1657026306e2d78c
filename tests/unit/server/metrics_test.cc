#include "server/metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Render() as series -> value, e.g. `colltest_runs{state="queued"}` -> 3. Comments are skipped.
std::map<std::string, double> Series(const std::string& text) {
  std::map<std::string, double> series;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    double value = 0;
    if (space == std::string::npos || !absl::SimpleAtod(line.substr(space + 1), &value)) {
      ADD_FAILURE() << "unparsable line: " << line;
      continue;
    }
    series[line.substr(0, space)] = value;
  }
  return series;
}

// The value of one series, or -1 when the scrape lacks it (every value here is >= 0).
double Value(const Metrics& metrics, const std::string& name) {
  const auto series = Series(metrics.Render());
  auto it = series.find(name);
  return it == series.end() ? -1 : it->second;
}

v1::CaseResult Case(v1::CaseStatus status, v1::Variant variant, v1::Mode mode, double median_us,
                    double wall_ms) {
  v1::CaseResult c;
  c.set_status(status);
  c.set_variant(variant);
  c.set_mode(mode);
  c.mutable_timing()->set_median_us(median_us);
  c.set_wall_ms(wall_ms);
  return c;
}

TEST(MetricsTest, KnownSeriesAreZeroBeforeAnyEvent) {
  Metrics metrics;
  const std::string text = metrics.Render();
  // Hangs and group states have no series (and so no family in a scrape) until their first event:
  // their label values are not known before.
  for (const char* family :
       {"colltest_cases_total", "colltest_case_latency_us", "colltest_case_wall_seconds",
        "colltest_worker_restarts_total", "colltest_runs", "colltest_health_checks_total"}) {
    EXPECT_THAT(text, HasSubstr(std::string("# TYPE ") + family + " ")) << family;
  }
  EXPECT_EQ(Value(metrics, R"(colltest_cases_total{mode="graph",status="wrong",variant="auto"})"),
            0);
  EXPECT_EQ(Value(metrics, R"(colltest_case_latency_us_count{mode="eager",variant="one_stage"})"),
            0);
  EXPECT_EQ(Value(metrics, "colltest_worker_restarts_total"), 0);
  EXPECT_EQ(Value(metrics, "colltest_runs{state=\"queued\"}"), 0);
  EXPECT_EQ(Value(metrics, "colltest_runs{state=\"running\"}"), 0);
  EXPECT_EQ(Value(metrics, "colltest_health_checks_total{status=\"hang\"}"), 0);
  EXPECT_EQ(Value(metrics, "colltest_case_wall_seconds_count"), 0);
}

TEST(MetricsTest, ObserveCaseCountsEveryStatusButTimesOnlyCasesThatRan) {
  Metrics metrics;
  metrics.ObserveCase(
      Case(v1::CASE_STATUS_HANG, v1::VARIANT_LAMPORT, v1::MODE_EAGER, /*median_us=*/0, 5000));
  metrics.ObserveCase(Case(v1::CASE_STATUS_OK, v1::VARIANT_LAMPORT_TB, v1::MODE_GRAPH, 3, 250));
  metrics.ObserveCase(
      Case(v1::CASE_STATUS_WRONG, v1::VARIANT_LAMPORT_TB, v1::MODE_GRAPH, 100, 750));
  // MODE_UNSPECIFIED is eager in the API and counts as such.
  metrics.ObserveCase(
      Case(v1::CASE_STATUS_UNSUPPORTED, v1::VARIANT_NCCL, v1::MODE_UNSPECIFIED, 0, 1));

  const auto s = Series(metrics.Render());
  EXPECT_EQ(s.at(R"(colltest_cases_total{mode="eager",status="hang",variant="lamport"})"), 1);
  EXPECT_EQ(s.at(R"(colltest_cases_total{mode="graph",status="ok",variant="lamport_tb"})"), 1);
  EXPECT_EQ(s.at(R"(colltest_cases_total{mode="graph",status="wrong",variant="lamport_tb"})"), 1);
  EXPECT_EQ(s.at(R"(colltest_cases_total{mode="eager",status="unsupported",variant="nccl"})"), 1);

  // Only the OK and WRONG cases are in the histograms: 3 us lands in le=4, 100 us in le=128.
  const std::string lat = R"(colltest_case_latency_us_bucket{mode="graph",variant="lamport_tb",)";
  EXPECT_EQ(s.at(lat + R"(le="2"})"), 0);
  EXPECT_EQ(s.at(lat + R"(le="4"})"), 1);
  EXPECT_EQ(s.at(lat + R"(le="64"})"), 1);
  EXPECT_EQ(s.at(lat + R"(le="128"})"), 2);
  EXPECT_EQ(s.at(lat + R"(le="+Inf"})"), 2);
  EXPECT_EQ(s.at(R"(colltest_case_latency_us_sum{mode="graph",variant="lamport_tb"})"), 103);
  EXPECT_EQ(s.at(R"(colltest_case_latency_us_count{mode="eager",variant="lamport"})"), 0);
  EXPECT_EQ(s.at("colltest_case_wall_seconds_count"), 2);
  EXPECT_DOUBLE_EQ(s.at("colltest_case_wall_seconds_sum"), 1.0);
}

TEST(MetricsTest, ObserveHangCountsByCulprit) {
  Metrics metrics;
  metrics.ObserveHang(/*culprit_rank=*/2, /*culprit_device=*/5);
  metrics.ObserveHang(2, 5);
  metrics.ObserveHang(0, 1);
  EXPECT_EQ(Value(metrics, R"(colltest_hangs_total{device="5",rank="2"})"), 2);
  EXPECT_EQ(Value(metrics, R"(colltest_hangs_total{device="1",rank="0"})"), 1);
}

TEST(MetricsTest, ObserveRestartCounts) {
  Metrics metrics;
  metrics.ObserveRestart();
  metrics.ObserveRestart();
  EXPECT_EQ(Value(metrics, "colltest_worker_restarts_total"), 2);
}

TEST(MetricsTest, GroupStateHasExactlyOneSeriesAtOne) {
  Metrics metrics;
  const std::string prefix = R"(colltest_group_state{group="0,1,2,3",state=")";
  const v1::GroupState sequence[] = {v1::GROUP_STATE_SERVING, v1::GROUP_STATE_RECOVERING,
                                     v1::GROUP_STATE_DEGRADED, v1::GROUP_STATE_SERVING};
  for (v1::GroupState state : sequence) {
    metrics.SetGroupState({0, 1, 2, 3}, state);
    const double serving = Value(metrics, prefix + "serving\"}");
    const double degraded = Value(metrics, prefix + "degraded\"}");
    const double recovering = Value(metrics, prefix + "recovering\"}");
    EXPECT_EQ(serving, state == v1::GROUP_STATE_SERVING ? 1 : 0) << state;
    EXPECT_EQ(degraded, state == v1::GROUP_STATE_DEGRADED ? 1 : 0) << state;
    EXPECT_EQ(recovering, state == v1::GROUP_STATE_RECOVERING ? 1 : 0) << state;
  }
  // Another group has its own series and leaves the first alone.
  metrics.SetGroupState({4, 5}, v1::GROUP_STATE_DEGRADED);
  EXPECT_EQ(Value(metrics, R"(colltest_group_state{group="4,5",state="degraded"})"), 1);
  EXPECT_EQ(Value(metrics, prefix + "serving\"}"), 1);
}

TEST(MetricsTest, SetRunsSetsBothGauges) {
  Metrics metrics;
  metrics.SetRuns(/*queued=*/3, /*running=*/1);
  EXPECT_EQ(Value(metrics, R"(colltest_runs{state="queued"})"), 3);
  EXPECT_EQ(Value(metrics, R"(colltest_runs{state="running"})"), 1);
  metrics.SetRuns(0, 0);
  EXPECT_EQ(Value(metrics, R"(colltest_runs{state="queued"})"), 0);
}

// The listener reports through ListenerEvents only; each reason is its own series, at 0 from the
// start so that rate() sees the first refusal.
TEST(MetricsTest, ListenerEventsFeedTheConnectionSeries) {
  Metrics metrics;
  ListenerEvents& events = metrics;
  EXPECT_EQ(Value(metrics, "colltest_connections_open"), 0);
  for (const char* reason : {"cap", "handshake_timeout", "bad_preface", "accept_error"}) {
    EXPECT_EQ(
        Value(metrics, absl::StrCat("colltest_connections_refused_total{reason=\"", reason, "\"}")),
        0)
        << reason;
  }
  events.SetConnectionsOpen(7);
  events.ObserveRefused(ListenerEvents::Refusal::kCap, 5);
  events.ObserveRefused(ListenerEvents::Refusal::kCap, 1);
  events.ObserveRefused(ListenerEvents::Refusal::kHandshakeTimeout, 2);
  events.ObserveRefused(ListenerEvents::Refusal::kBadPreface, 3);
  events.ObserveRefused(ListenerEvents::Refusal::kAcceptError, 4);
  EXPECT_EQ(Value(metrics, "colltest_connections_open"), 7);
  EXPECT_EQ(Value(metrics, R"(colltest_connections_refused_total{reason="cap"})"), 6);
  EXPECT_EQ(Value(metrics, R"(colltest_connections_refused_total{reason="handshake_timeout"})"), 2);
  EXPECT_EQ(Value(metrics, R"(colltest_connections_refused_total{reason="bad_preface"})"), 3);
  EXPECT_EQ(Value(metrics, R"(colltest_connections_refused_total{reason="accept_error"})"), 4);
  events.SetConnectionsOpen(0);
  EXPECT_EQ(Value(metrics, "colltest_connections_open"), 0);
}

TEST(MetricsTest, ObserveHealthCheckCountsByStatus) {
  Metrics metrics;
  metrics.ObserveHealthCheck(v1::CASE_STATUS_OK);
  metrics.ObserveHealthCheck(v1::CASE_STATUS_HANG);
  metrics.ObserveHealthCheck(v1::CASE_STATUS_HANG);
  EXPECT_EQ(Value(metrics, R"(colltest_health_checks_total{status="ok"})"), 1);
  EXPECT_EQ(Value(metrics, R"(colltest_health_checks_total{status="hang"})"), 2);
  EXPECT_EQ(Value(metrics, R"(colltest_health_checks_total{status="wrong"})"), 0);
}

// A connected loopback TCP socket, closed on destruction; -1 when the connection failed. Reads
// and writes time out after `timeout_s` so that a stuck server fails the test.
class Connection {
 public:
  Connection(int port, int timeout_s) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    if (fd_ < 0) return;
    timeval timeout{.tv_sec = timeout_s, .tv_usec = 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      close(fd_);
      fd_ = -1;
    }
  }
  ~Connection() {
    if (fd_ >= 0) close(fd_);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  Connection(Connection&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

  int fd() const { return fd_; }
  bool Send(const std::string& text) const {
    return fd_ >= 0 &&
           send(fd_, text.data(), text.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(text.size());
  }

 private:
  int fd_;
};

// GET `path` from 127.0.0.1:`port` with HTTP/1.0 (the server closes when done) and the extra
// header lines `headers`; the whole response, or "" on any socket error. Reads are bounded so a
// stuck server fails the test.
std::string HttpGet(int port, const std::string& path, const std::string& headers = "") {
  Connection connection(port, /*timeout_s=*/5);
  const int fd = connection.fd();
  std::string response;
  if (fd >= 0) {
    const std::string request =
        "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n" + headers + "\r\n";
    if (send(fd, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size())) {
      char buf[4096];
      ssize_t n;
      while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) response.append(buf, static_cast<size_t>(n));
    }
  }
  return response;
}

int PortOf(const std::string& address) {
  int port = 0;
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port)) return 0;
  return port;
}

TEST(MetricsTest, ServeBindsAFreePortAndAnswersAScrape) {
  Metrics metrics;
  EXPECT_EQ(metrics.bound_address(), "");
  ASSERT_TRUE(metrics.Serve("127.0.0.1:0").ok());
  const std::string bound = metrics.bound_address();
  EXPECT_THAT(bound, StartsWith("127.0.0.1:"));
  const int port = PortOf(bound);
  ASSERT_GT(port, 0) << bound;

  metrics.ObserveRestart();
  const std::string response = HttpGet(port, "/metrics");
  EXPECT_THAT(response, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(response, HasSubstr("colltest_worker_restarts_total 1"));

  // A second Serve is refused rather than leaking a second listener.
  const absl::Status again = metrics.Serve("127.0.0.1:0");
  EXPECT_FALSE(again.ok());
}

TEST(MetricsTest, ServeOnAnAddressInUseNamesIt) {
  Metrics first;
  ASSERT_TRUE(first.Serve("127.0.0.1:0").ok());
  const std::string taken = first.bound_address();

  Metrics second;
  const absl::Status status = second.Serve(taken);
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), HasSubstr(taken));
  EXPECT_EQ(second.bound_address(), "");
}

// Clients that connect and then send nothing, or stop halfway through the request line, must not
// hold the HTTP threads: CivetWeb's defaults (2 threads, a 30 s request timeout) let two such
// connections block every scrape for half a minute.
TEST(MetricsTest, StalledConnectionsDoNotBlockAScrape) {
  Metrics metrics;
  ASSERT_TRUE(metrics.Serve("127.0.0.1:0").ok());
  const int port = PortOf(metrics.bound_address());
  std::vector<Connection> stalled;
  for (int i = 0; i < 8; ++i) {
    Connection& c = stalled.emplace_back(port, /*timeout_s=*/5);
    ASSERT_GE(c.fd(), 0);
    if (i % 2 == 1) ASSERT_TRUE(c.Send("GET /metr"));
  }
  const auto start = std::chrono::steady_clock::now();
  const std::string response = HttpGet(port, "/metrics");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_THAT(response, StartsWith("HTTP/1.1 200"));
  EXPECT_LT(seconds, 3.0);
}

std::string BasicAuthHeader(const std::string& user, const std::string& password) {
  return "Authorization: Basic " + absl::Base64Escape(user + ":" + password) + "\r\n";
}

TEST(MetricsTest, BasicAuthGuardsTheScrape) {
  Metrics metrics;
  ASSERT_TRUE(metrics
                  .Serve("127.0.0.1:0",
                         [](const std::string& user, const std::string& password) {
                           return user == "grafana" && password == "viewer-token-000001";
                         })
                  .ok());
  const int port = PortOf(metrics.bound_address());
  EXPECT_THAT(HttpGet(port, "/metrics"), StartsWith("HTTP/1.1 401"));
  EXPECT_THAT(HttpGet(port, "/metrics", BasicAuthHeader("grafana", "wrong-token-0000001")),
              StartsWith("HTTP/1.1 401"));
  EXPECT_THAT(HttpGet(port, "/metrics", BasicAuthHeader("other", "viewer-token-000001")),
              StartsWith("HTTP/1.1 401"));
  const std::string ok =
      HttpGet(port, "/metrics", BasicAuthHeader("grafana", "viewer-token-000001"));
  EXPECT_THAT(ok, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(ok, HasSubstr("colltest_worker_restarts_total 0"));
}

TEST(MetricsTest, ServeRejectsAnAddressWithoutPort) {
  Metrics metrics;
  const absl::Status status = metrics.Serve("localhost");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("localhost"));
}

}  // namespace
}  // namespace colltest::server
