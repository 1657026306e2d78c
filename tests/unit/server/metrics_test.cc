#include "server/runs/metrics.h"

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/build_info.h"
#include "tests/unit/server/metrics_series.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;
using metrics_test_support::Series;
using metrics_test_support::Value;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

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
  // Group states have no series (and so no family in a scrape) until a group spawns: its device
  // set is not known before; nor have the per-case latency histograms and gauges until a case of
  // their label set ran. Hangs, build info and the per-GPU series wait for SetBackend.
  for (const char* family :
       {"colltest_cases_total", "colltest_case_wall_seconds", "colltest_worker_restarts_total",
        "colltest_runs", "colltest_health_checks_total", "colltest_health_status",
        "colltest_health_last_check_timestamp_seconds", "colltest_health_self_test",
        "colltest_compare_cases_total", "colltest_start_time_seconds"}) {
    EXPECT_THAT(text, HasSubstr(std::string("# TYPE ") + family + " ")) << family;
  }
  for (const char* status : {"ok", "wrong", "hang", "error", "unsupported"}) {
    for (const char* variant :
         {"one_stage", "two_kernel", "lamport", "lamport_tb", "nccl", "auto"}) {
      for (const char* mode : {"eager", "graph"}) {
        EXPECT_EQ(Value(metrics, absl::StrCat("colltest_cases_total{mode=\"", mode, "\",status=\"",
                                              status, "\",variant=\"", variant, "\"}")),
                  0)
            << status << " " << variant << " " << mode;
      }
    }
    EXPECT_EQ(Value(metrics, absl::StrCat("colltest_health_status{status=\"", status, "\"}")), 0)
        << status;
  }
  for (const char* family :
       {"colltest_case_latency_seconds", "colltest_case_busbw_bytes_per_second",
        "colltest_hangs_total", "colltest_device_health"}) {
    EXPECT_THAT(text, Not(HasSubstr(std::string("# TYPE ") + family + " "))) << family;
  }
  for (const char* result : {"passed", "failed", "not_run"}) {
    EXPECT_EQ(Value(metrics, absl::StrCat("colltest_health_self_test{result=\"", result, "\"}")), 0)
        << result;
  }
  EXPECT_EQ(Value(metrics, "colltest_health_last_check_timestamp_seconds"), 0);
  EXPECT_GT(Value(metrics, "colltest_start_time_seconds"), 1.6e9);
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

  // Only the OK and WRONG cases are in the histograms, in seconds: 3 us lands in le=4e-06,
  // 100 us in le=0.000128. Case() leaves the shape at 0: world "0", the smallest size class.
  const std::string lat =
      R"(colltest_case_latency_seconds_bucket{mode="graph",size_class="le_64KiB",)"
      R"(variant="lamport_tb",world="0",)";
  EXPECT_EQ(s.at(lat + R"(le="2e-06"})"), 0);
  EXPECT_EQ(s.at(lat + R"(le="4e-06"})"), 1);
  EXPECT_EQ(s.at(lat + R"(le="6.4e-05"})"), 1);
  EXPECT_EQ(s.at(lat + R"(le="0.000128"})"), 2);
  EXPECT_EQ(s.at(lat + R"(le="0.131072"})"), 2);
  EXPECT_EQ(s.at(lat + R"(le="+Inf"})"), 2);
  EXPECT_DOUBLE_EQ(s.at(R"(colltest_case_latency_seconds_sum{mode="graph",size_class="le_64KiB",)"
                        R"(variant="lamport_tb",world="0"})"),
                   103e-6);
  // The hung lamport case made no histogram of its own.
  EXPECT_EQ(s.count(R"(colltest_case_latency_seconds_count{mode="eager",size_class="le_64KiB",)"
                    R"(variant="lamport",world="0"})"),
            0);
  EXPECT_EQ(s.at("colltest_case_wall_seconds_count"), 2);
  EXPECT_DOUBLE_EQ(s.at("colltest_case_wall_seconds_sum"), 1.0);
}

// Every name a scrape shows follows Prometheus' conventions: no abbreviated units (us, ms) and
// no non-base units, which `promtool check metrics` rejects (tests/metrics runs promtool itself).
TEST(MetricsTest, NamesUseBaseUnits) {
  Metrics metrics;
  v1::MachineIdentity machine;
  machine.set_backend("cpu");
  machine.add_devices()->set_uuid("cpu-host-0");
  metrics.SetBackend(machine, {Version(), BuildCommit()});
  std::istringstream in(metrics.Render());
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("# TYPE ")) continue;
    const std::string name = line.substr(7, line.find(' ', 7) - 7);
    for (const char* unit : {"_us", "_ms", "_ns", "_milliseconds", "_microseconds", "_kb", "_mb"}) {
      EXPECT_FALSE(absl::StrContains(name + "_", absl::StrCat(unit, "_"))) << name;
    }
    if (line.ends_with(" counter")) {
      EXPECT_TRUE(name.ends_with("_total")) << name;
    }
  }
}

TEST(MetricsTest, SetBackendAddsBuildInfoAndZeroHangsForEveryRankAndGpu) {
  Metrics metrics;
  v1::MachineIdentity machine;
  machine.set_backend("cuda");
  machine.set_hostname("node7");
  for (uint32_t i = 0; i < 3; ++i) {
    v1::Device& d = *machine.add_devices();
    d.set_index(i + 4);
    d.set_physical_index(i + 4);
    d.set_uuid(absl::StrCat("GPU-", i + 4));
  }
  metrics.SetBackend(machine, {Version(), BuildCommit()});
  const std::string info = absl::StrCat("colltest_build_info{backend=\"cuda\",commit=\"",
                                        BuildCommit(), "\",version=\"", Version(), "\"}");
  EXPECT_EQ(Value(metrics, info), 1);
  int hangs = 0;
  for (const auto& [series, value] : Series(metrics.Render())) {
    if (!series.starts_with("colltest_hangs_total{")) continue;
    ++hangs;
    EXPECT_EQ(value, 0) << series;
  }
  EXPECT_EQ(hangs, 9);
  const std::string gpu6_rank2 =
      R"(colltest_hangs_total{Hostname="node7",UUID="GPU-6",gpu="6",modelName="",pci_bus_id="",)"
      R"(rank="2"})";
  EXPECT_EQ(Value(metrics, gpu6_rank2), 0);
  metrics.ObserveHang(2, 6);
  EXPECT_EQ(Value(metrics, gpu6_rank2), 1);
}

// Without SetBackend (or for a device the machine does not list) a hang still counts, under the
// device's index alone.
TEST(MetricsTest, ObserveHangCountsByCulprit) {
  Metrics metrics;
  metrics.ObserveHang(/*culprit_rank=*/2, /*culprit_device=*/5);
  metrics.ObserveHang(2, 5);
  metrics.ObserveHang(0, 1);
  EXPECT_EQ(Value(metrics, R"(colltest_hangs_total{Hostname="",UUID="",gpu="5",modelName="",)"
                           R"(pci_bus_id="",rank="2"})"),
            2);
  EXPECT_EQ(Value(metrics, R"(colltest_hangs_total{Hostname="",UUID="",gpu="1",modelName="",)"
                           R"(pci_bus_id="",rank="0"})"),
            1);
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
  for (const char* reason : {"cap", "handshake_timeout", "bad_preface", "accept_error",
                             "peer_limit", "first_call_timeout", "evicted"}) {
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
  events.ObserveRefused(ListenerEvents::Refusal::kEvicted, 8);
  EXPECT_EQ(Value(metrics, "colltest_connections_open"), 7);
  EXPECT_EQ(Value(metrics, R"(colltest_connections_refused_total{reason="cap"})"), 6);
  EXPECT_EQ(Value(metrics, R"(colltest_connections_refused_total{reason="handshake_timeout"})"), 2);
  EXPECT_EQ(Value(metrics, R"(colltest_connections_refused_total{reason="bad_preface"})"), 3);
  EXPECT_EQ(Value(metrics, R"(colltest_connections_refused_total{reason="accept_error"})"), 4);
  EXPECT_EQ(Value(metrics, R"(colltest_connections_refused_total{reason="evicted"})"), 8);
  events.SetConnectionsOpen(0);
  EXPECT_EQ(Value(metrics, "colltest_connections_open"), 0);
}

v1::HealthResponse Health(v1::CaseStatus status) {
  v1::HealthResponse response;
  response.set_status(status);
  return response;
}

TEST(MetricsTest, ObserveHealthCountsByStatus) {
  Metrics metrics;
  metrics.ObserveHealth(Health(v1::CASE_STATUS_OK));
  metrics.ObserveHealth(Health(v1::CASE_STATUS_HANG));
  metrics.ObserveHealth(Health(v1::CASE_STATUS_HANG));
  EXPECT_EQ(Value(metrics, R"(colltest_health_checks_total{status="ok"})"), 1);
  EXPECT_EQ(Value(metrics, R"(colltest_health_checks_total{status="hang"})"), 2);
  EXPECT_EQ(Value(metrics, R"(colltest_health_checks_total{status="wrong"})"), 0);
}

TEST(MetricsTest, HealthStatusHoldsTheLastVerdictAndItsTime) {
  Metrics metrics;
  const double before = absl::ToUnixSeconds(absl::Now());
  metrics.ObserveHealth(Health(v1::CASE_STATUS_HANG));
  EXPECT_EQ(Value(metrics, R"(colltest_health_status{status="hang"})"), 1);
  EXPECT_EQ(Value(metrics, R"(colltest_health_status{status="ok"})"), 0);
  EXPECT_GE(Value(metrics, "colltest_health_last_check_timestamp_seconds"), before);
  metrics.ObserveHealth(Health(v1::CASE_STATUS_OK));
  EXPECT_EQ(Value(metrics, R"(colltest_health_status{status="hang"})"), 0);
  EXPECT_EQ(Value(metrics, R"(colltest_health_status{status="ok"})"), 1);
}

// A cached or BUSY answer repeats an earlier verdict: counting it would make one check look like
// many, and its stale status would overwrite a newer one. A planted fault's verdict is not the
// machine's.
TEST(MetricsTest, ObserveHealthIgnoresCachedBusyAndPlantedFaultAnswers) {
  Metrics metrics;
  v1::HealthResponse cached = Health(v1::CASE_STATUS_HANG);
  cached.set_cached(true);
  v1::HealthResponse busy = Health(v1::CASE_STATUS_HANG);
  busy.set_busy(true);
  metrics.ObserveHealth(cached);
  metrics.ObserveHealth(busy);
  // A planted fault tests colltest, not the machine: its HANG must not fire the machine's alerts.
  metrics.ObserveHealth(Health(v1::CASE_STATUS_HANG), /*planted_fault=*/true);
  EXPECT_EQ(Value(metrics, R"(colltest_health_checks_total{status="hang"})"), 0);
  EXPECT_EQ(Value(metrics, R"(colltest_health_status{status="hang"})"), 0);
  EXPECT_EQ(Value(metrics, "colltest_health_last_check_timestamp_seconds"), 0);
}

}  // namespace
}  // namespace colltest::server
