#include "server/metrics.h"

#include <map>
#include <sstream>
#include <string>
#include <vector>

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

}  // namespace
}  // namespace colltest::server
