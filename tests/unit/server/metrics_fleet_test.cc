// The fleet-facing metrics (docs/metrics.md): per-GPU and per-link series in DCGM-exporter's
// labels, per-case bandwidth and latency gauges by size class, the self test and comparisons.
#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "server/build_info.h"
#include "server/runs/metrics.h"
#include "tests/unit/server/metrics_series.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;
using metrics_test_support::Named;
using metrics_test_support::Series;
using metrics_test_support::Value;
using Labels = std::map<std::string, std::string>;

constexpr char kHost[] = "node7";

// Two H200s with two slots each (colltestd --ranks-per-gpu 2): devices 0 and 1 are GPU 0,
// devices 2 and 3 GPU 1.
v1::MachineIdentity SlottedMachine() {
  v1::MachineIdentity m;
  m.set_hostname(kHost);
  m.set_key("0123456789abcdef");
  m.set_backend("cuda");
  m.set_driver_version("580.159.04 (CUDA 13.0)");
  m.set_ranks_per_gpu(2);
  for (uint32_t i = 0; i < 4; ++i) {
    v1::Device& d = *m.add_devices();
    d.set_index(i);
    d.set_physical_index(i / 2);
    d.set_slot(i % 2);
    d.set_name("NVIDIA H200");
    d.set_uuid(absl::StrCat("GPU-", i / 2));
    d.set_pci_bus_id(absl::StrCat("0000:1", i / 2, ":00.0"));
  }
  return m;
}

Labels Gpu(uint32_t gpu) {
  return {{"gpu", absl::StrCat(gpu)},
          {"UUID", absl::StrCat("GPU-", gpu)},
          {"pci_bus_id", absl::StrCat("0000:1", gpu, ":00.0")},
          {"modelName", "NVIDIA H200"},
          {"Hostname", kHost}};
}

Labels Link(uint32_t gpu, uint32_t peer) {
  return {{"gpu", absl::StrCat(gpu)},
          {"peer_gpu", absl::StrCat(peer)},
          {"UUID", absl::StrCat("GPU-", gpu)},
          {"peer_UUID", absl::StrCat("GPU-", peer)},
          {"Hostname", kHost}};
}

Labels With(Labels labels, const std::string& name, const std::string& value) {
  labels[name] = value;
  return labels;
}

std::unique_ptr<Metrics> SlottedMetrics() {
  auto metrics = std::make_unique<Metrics>();
  metrics->SetBackend(SlottedMachine(), {Version(), BuildCommit()});
  return metrics;
}

constexpr const char* kHealthStatuses[] = {"ok", "warn", "wrong", "hang", "error", "unsupported"};

// The status whose series of a one-hot family is 1 for `labels`; "" when none is, "many" when
// more than one is, "missing" when a status has no series.
std::string OneHotStatus(const std::map<std::string, double>& series, const std::string& family,
                         const Labels& labels) {
  std::string found;
  for (const char* status : kHealthStatuses) {
    auto it = series.find(Named(family, With(labels, "status", status)));
    if (it == series.end()) return "missing";
    if (it->second != 1) continue;
    found = found.empty() ? status : "many";
  }
  return found;
}

TEST(MetricsFleetTest, SetBackendLabelsTheNodeAndEachGpuOnce) {
  const auto metrics = SlottedMetrics();
  const auto s = Series(metrics->Render());
  EXPECT_EQ(s.at(Named("colltest_node_info", {{"Hostname", kHost},
                                              {"machine_key", "0123456789abcdef"},
                                              {"backend", "cuda"},
                                              {"driver_version", "580.159.04 (CUDA 13.0)"}})),
            1);
  int device_info = 0;
  for (const auto& [name, value] : s) device_info += name.starts_with("colltest_device_info{");
  EXPECT_EQ(device_info, 2);  // two GPUs, not four slots
  EXPECT_EQ(s.at(Named("colltest_device_info", Gpu(0))), 1);
  EXPECT_EQ(s.at(Named("colltest_device_info", Gpu(1))), 1);
}

// Ranks 0..3 (a group may have a rank per slot) times the two GPUs, each at 0; a hang on device
// 3, the second slot of GPU 1, counts under GPU 1's labels.
TEST(MetricsFleetTest, HangOnASlotCountsUnderItsGpu) {
  const auto metrics = SlottedMetrics();
  int hangs = 0;
  for (const auto& [name, value] : Series(metrics->Render())) {
    if (!name.starts_with("colltest_hangs_total{")) continue;
    ++hangs;
    EXPECT_EQ(value, 0) << name;
  }
  EXPECT_EQ(hangs, 8);
  metrics->ObserveHang(/*culprit_rank=*/1, /*culprit_device=*/3);
  metrics->ObserveHang(/*culprit_rank=*/1, /*culprit_device=*/2);
  const auto s = Series(metrics->Render());
  EXPECT_EQ(s.at(Named("colltest_hangs_total", With(Gpu(1), "rank", "1"))), 2);
  EXPECT_EQ(s.at(Named("colltest_hangs_total", With(Gpu(0), "rank", "1"))), 0);
}

TEST(MetricsFleetTest, HealthSeriesExistAtZeroBeforeTheFirstCheck) {
  const auto metrics = SlottedMetrics();
  const auto s = Series(metrics->Render());
  for (uint32_t gpu : {0, 1}) {
    EXPECT_EQ(OneHotStatus(s, "colltest_device_health", Gpu(gpu)), "") << gpu;
    EXPECT_EQ(s.at(Named("colltest_device_health_last_check_timestamp_seconds", Gpu(gpu))), 0);
  }
  // Every pair of GPUs, and each GPU with itself: two of its slots form a pair.
  for (auto [gpu, peer] : {std::pair{0, 1}, {0, 0}, {1, 1}}) {
    EXPECT_EQ(OneHotStatus(s, "colltest_link_health", Link(gpu, peer)), "") << gpu << peer;
    EXPECT_EQ(s.at(Named("colltest_link_health_last_check_timestamp_seconds", Link(gpu, peer))), 0);
  }
  int links = 0;
  for (const auto& [name, value] : s) links += name.starts_with("colltest_link_health{");
  EXPECT_EQ(links, 3 * 6);
  EXPECT_EQ(s.count(Named("colltest_link_busbw_bytes_per_second", Link(0, 1))), 0);
}

v1::HealthTarget Target(std::initializer_list<uint32_t> devices, v1::CaseStatus status) {
  v1::HealthTarget t;
  for (uint32_t d : devices) t.add_devices(d);
  t.set_status(status);
  return t;
}

// The first slot of GPU 0 slow (a WARN), its second OK; the pair across the GPUs hung on one slot
// pair and passed on the next; the self test passed. Each GPU and link has a worse target before
// a better one, so that the last target alone would give the wrong verdict.
v1::HealthResponse WarnAndHangCheck() {
  v1::HealthResponse r;
  r.set_status(v1::CASE_STATUS_HANG);
  for (uint32_t d : {0, 1, 2, 3}) *r.add_ranks() = Target({d}, v1::CASE_STATUS_OK);
  r.mutable_ranks(0)->set_slow(true);
  *r.add_pairs() = Target({0, 1}, v1::CASE_STATUS_OK);
  *r.add_pairs() = Target({0, 2}, v1::CASE_STATUS_HANG);
  *r.add_pairs() = Target({3, 1}, v1::CASE_STATUS_OK);  // listed high first: still link (0, 1)
  *r.add_pairs() = Target({2, 3}, v1::CASE_STATUS_OK);
  r.mutable_pairs(3)->set_below_expected(true);
  r.mutable_self_test()->set_ran(true);
  r.mutable_self_test()->set_passed(true);
  return r;
}

TEST(MetricsFleetTest, HealthSetsOneStatusPerGpuAndLinkFromTheWorstTarget) {
  const auto metrics = SlottedMetrics();
  const double before = absl::ToUnixSeconds(absl::Now());
  metrics->ObserveHealth(WarnAndHangCheck());
  const auto s = Series(metrics->Render());
  EXPECT_EQ(OneHotStatus(s, "colltest_device_health", Gpu(0)), "warn");
  EXPECT_EQ(OneHotStatus(s, "colltest_device_health", Gpu(1)), "ok");
  EXPECT_EQ(OneHotStatus(s, "colltest_link_health", Link(0, 1)), "hang");
  EXPECT_EQ(OneHotStatus(s, "colltest_link_health", Link(0, 0)), "ok");
  EXPECT_EQ(OneHotStatus(s, "colltest_link_health", Link(1, 1)), "warn");
  EXPECT_EQ(s.at(R"(colltest_health_status{status="hang"})"), 1);
  EXPECT_EQ(s.at(R"(colltest_health_self_test{result="passed"})"), 1);
  EXPECT_EQ(s.at(R"(colltest_health_self_test{result="failed"})"), 0);
  EXPECT_EQ(s.at(R"(colltest_health_self_test{result="not_run"})"), 0);
  const double overall = s.at("colltest_health_last_check_timestamp_seconds");
  EXPECT_GE(overall, before);
  for (uint32_t gpu : {0, 1}) {
    EXPECT_EQ(s.at(Named("colltest_device_health_last_check_timestamp_seconds", Gpu(gpu))),
              overall);
  }
  EXPECT_EQ(s.at(Named("colltest_link_health_last_check_timestamp_seconds", Link(0, 1))), overall);
}

// A check of GPU 1 alone (devices 2 and 3, quick: no self test) leaves GPU 0's verdict and time.
TEST(MetricsFleetTest, HealthLeavesGpusTheCheckDidNotCover) {
  const auto metrics = SlottedMetrics();
  metrics->ObserveHealth(WarnAndHangCheck());
  const double first =
      Series(metrics->Render())
          .at(Named("colltest_device_health_last_check_timestamp_seconds", Gpu(0)));
  absl::SleepFor(absl::Milliseconds(20));  // so that the second check's time differs
  v1::HealthResponse second;
  second.set_status(v1::CASE_STATUS_ERROR);
  *second.add_ranks() = Target({2}, v1::CASE_STATUS_OK);
  *second.add_ranks() = Target({3}, v1::CASE_STATUS_ERROR);
  metrics->ObserveHealth(second);
  const auto s = Series(metrics->Render());
  EXPECT_EQ(OneHotStatus(s, "colltest_device_health", Gpu(0)), "warn");
  EXPECT_EQ(OneHotStatus(s, "colltest_device_health", Gpu(1)), "error");
  EXPECT_EQ(s.at(Named("colltest_device_health_last_check_timestamp_seconds", Gpu(0))), first);
  EXPECT_GT(s.at(Named("colltest_device_health_last_check_timestamp_seconds", Gpu(1))), first);
  EXPECT_EQ(OneHotStatus(s, "colltest_link_health", Link(0, 1)), "hang");
  EXPECT_EQ(s.at(Named("colltest_link_health_last_check_timestamp_seconds", Link(0, 1))), first);
  // The first check's self test stands: the quick one ran none.
  EXPECT_EQ(s.at(R"(colltest_health_self_test{result="not_run"})"), 0);
  EXPECT_EQ(s.at(R"(colltest_health_self_test{result="passed"})"), 1);
}

TEST(MetricsFleetTest, SelfTestHoldsTheLastSelfTestThatRan) {
  const auto metrics = SlottedMetrics();
  v1::HealthResponse failed;
  failed.set_status(v1::CASE_STATUS_ERROR);  // a failed self test makes the whole check ERROR
  failed.mutable_self_test()->set_ran(true);
  failed.mutable_self_test()->set_passed(false);
  v1::HealthResponse quick;
  quick.set_status(v1::CASE_STATUS_OK);
  metrics->ObserveHealth(quick);
  EXPECT_EQ(Series(metrics->Render()).at(R"(colltest_health_self_test{result="not_run"})"), 1);
  metrics->ObserveHealth(failed);
  // Quick checks between two standard ones (node-problem-detector's) run no self test: the
  // failure stands until a self test passes.
  metrics->ObserveHealth(quick);
  auto s = Series(metrics->Render());
  EXPECT_EQ(s.at(R"(colltest_health_self_test{result="failed"})"), 1);
  EXPECT_EQ(s.at(R"(colltest_health_self_test{result="passed"})"), 0);
  EXPECT_EQ(s.at(R"(colltest_health_self_test{result="not_run"})"), 0);
  failed.mutable_self_test()->set_passed(true);
  metrics->ObserveHealth(failed);
  s = Series(metrics->Render());
  EXPECT_EQ(s.at(R"(colltest_health_self_test{result="failed"})"), 0);
  EXPECT_EQ(s.at(R"(colltest_health_self_test{result="passed"})"), 1);
}

// Level long: the best figure over the slot pairs of a GPU pair, and the expected one; a check
// without figures leaves them.
TEST(MetricsFleetTest, LinkBandwidthIsSetOnlyFromFigures) {
  const auto metrics = SlottedMetrics();
  v1::HealthResponse r;
  r.set_status(v1::CASE_STATUS_OK);
  *r.add_pairs() = Target({0, 2}, v1::CASE_STATUS_OK);
  r.mutable_pairs(0)->set_busbw_gbps(300);
  r.mutable_pairs(0)->set_expected_busbw_gbps(350);
  *r.add_pairs() = Target({1, 3}, v1::CASE_STATUS_OK);
  r.mutable_pairs(1)->set_busbw_gbps(320);
  r.mutable_pairs(1)->set_expected_busbw_gbps(350);
  *r.add_pairs() = Target({0, 1}, v1::CASE_STATUS_OK);  // slots of one GPU: no figure
  metrics->ObserveHealth(r);
  metrics->ObserveHealth(WarnAndHangCheck());  // quick: no figures
  const auto s = Series(metrics->Render());
  EXPECT_DOUBLE_EQ(s.at(Named("colltest_link_busbw_bytes_per_second", Link(0, 1))), 320e9);
  EXPECT_DOUBLE_EQ(s.at(Named("colltest_link_expected_busbw_bytes_per_second", Link(0, 1))), 350e9);
  EXPECT_EQ(s.count(Named("colltest_link_busbw_bytes_per_second", Link(0, 0))), 0);
  EXPECT_EQ(s.count(Named("colltest_link_expected_busbw_bytes_per_second", Link(0, 0))), 0);
}

v1::CaseResult Timed(v1::CaseStatus status, uint32_t m, uint32_t n, v1::DType dtype,
                     double busbw_gbps) {
  v1::CaseResult c;
  c.set_status(status);
  c.set_variant(v1::VARIANT_LAMPORT);
  c.set_mode(v1::MODE_GRAPH);
  c.set_world_size(4);
  c.set_m(m);
  c.set_n(n);
  c.set_dtype(dtype);
  c.set_busbw_gbps(busbw_gbps);
  c.set_algbw_gbps(busbw_gbps / 1.5);
  c.mutable_timing()->set_median_us(busbw_gbps);  // any figure that tells cases apart
  return c;
}

Labels CaseLabels(const std::string& dtype, const std::string& size_class) {
  return {{"variant", "lamport"},
          {"mode", "graph"},
          {"world", "4"},
          {"dtype", dtype},
          {"size_class", size_class}};
}

TEST(MetricsFleetTest, SizeClassesSplitAtTheirBounds) {
  Metrics metrics;
  metrics.ObserveCase(Timed(v1::CASE_STATUS_OK, 1, 32768, v1::DTYPE_BF16, 1));    // 64 KiB
  metrics.ObserveCase(Timed(v1::CASE_STATUS_OK, 1, 16392, v1::DTYPE_FP32, 2));    // 64 KiB + 32
  metrics.ObserveCase(Timed(v1::CASE_STATUS_OK, 64, 4096, v1::DTYPE_FP32, 3));    // 1 MiB
  metrics.ObserveCase(Timed(v1::CASE_STATUS_OK, 65, 8192, v1::DTYPE_FP16, 4));    // 1 MiB + 16 KiB
  metrics.ObserveCase(Timed(v1::CASE_STATUS_OK, 1024, 4096, v1::DTYPE_BF16, 5));  // 8 MiB
  metrics.ObserveCase(Timed(v1::CASE_STATUS_OK, 1025, 4096, v1::DTYPE_BF16, 6));  // 8 MiB + 8 KiB
  const auto s = Series(metrics.Render());
  const std::string busbw = "colltest_case_busbw_bytes_per_second";
  EXPECT_EQ(s.at(Named(busbw, CaseLabels("bf16", "le_64KiB"))), 1e9);
  EXPECT_EQ(s.at(Named(busbw, CaseLabels("fp32", "le_1MiB"))), 3e9);  // 2e9 overwritten: same set
  EXPECT_EQ(s.at(Named(busbw, CaseLabels("fp16", "le_8MiB"))), 4e9);
  EXPECT_EQ(s.at(Named(busbw, CaseLabels("bf16", "le_8MiB"))), 5e9);
  EXPECT_EQ(s.at(Named(busbw, CaseLabels("bf16", "gt_8MiB"))), 6e9);
  EXPECT_EQ(s.count(Named(busbw, CaseLabels("fp32", "le_64KiB"))), 0);
  // The histogram has no dtype: bf16 and fp16 of one class share it.
  const std::string latency = "colltest_case_latency_seconds_count";
  const Labels le_8mib = {
      {"variant", "lamport"}, {"mode", "graph"}, {"world", "4"}, {"size_class", "le_8MiB"}};
  EXPECT_EQ(s.at(Named(latency, le_8mib)), 2);
}

TEST(MetricsFleetTest, CaseGaugesKeepTheLastCaseThatRan) {
  Metrics metrics;
  metrics.ObserveCase(Timed(v1::CASE_STATUS_OK, 8, 4096, v1::DTYPE_BF16, 100));
  metrics.ObserveCase(Timed(v1::CASE_STATUS_WRONG, 8, 4096, v1::DTYPE_BF16, 80));
  // A hang has no timing worth keeping: the WRONG case's figures stay.
  metrics.ObserveCase(Timed(v1::CASE_STATUS_HANG, 8, 4096, v1::DTYPE_BF16, 0));
  const auto s = Series(metrics.Render());
  const Labels labels = CaseLabels("bf16", "le_64KiB");
  EXPECT_DOUBLE_EQ(s.at(Named("colltest_case_busbw_bytes_per_second", labels)), 80e9);
  EXPECT_DOUBLE_EQ(s.at(Named("colltest_case_algbw_bytes_per_second", labels)), 80e9 / 1.5);
  EXPECT_DOUBLE_EQ(s.at(Named("colltest_case_median_latency_seconds", labels)), 80e-6);
}

TEST(MetricsFleetTest, ComparisonsCountEachCaseVerdictOfANewRunOnce) {
  Metrics metrics;
  const auto count = [&](const char* verdict) {
    return Value(metrics, absl::StrCat("colltest_compare_cases_total{verdict=\"", verdict, "\"}"));
  };
  for (const char* verdict : {"same", "regression", "improvement", "only_a", "only_b"}) {
    EXPECT_EQ(count(verdict), 0) << verdict;
  }
  v1::CompareResponse r;
  for (v1::CompareVerdict v :
       {v1::COMPARE_VERDICT_SAME, v1::COMPARE_VERDICT_SAME, v1::COMPARE_VERDICT_REGRESSION,
        v1::COMPARE_VERDICT_ONLY_B, v1::COMPARE_VERDICT_UNSPECIFIED}) {
    r.add_cases()->set_verdict(v);
  }
  const auto finished = [](const char* id, absl::Duration ago) {
    v1::RunResult run;
    run.set_run_id(id);
    run.set_finished_unix_ms(absl::ToUnixMillis(absl::Now() - ago));
    return run;
  };
  metrics.ObserveComparison(r, finished("r-new", absl::Seconds(5)));
  EXPECT_EQ(count("same"), 2);
  EXPECT_EQ(count("regression"), 1);
  EXPECT_EQ(count("improvement"), 0);
  EXPECT_EQ(count("only_a"), 0);
  EXPECT_EQ(count("only_b"), 1);
  EXPECT_EQ(count("unspecified"), -1);
  // Reading history counts nothing: the same candidate compared again (a trend reopened), and a
  // run that finished past the judging window (an old run's trend point).
  metrics.ObserveComparison(r, finished("r-new", absl::Seconds(5)));
  metrics.ObserveComparison(r, finished("r-old", absl::Hours(2)));
  EXPECT_EQ(count("regression"), 1);
  // The next new run is judged.
  metrics.ObserveComparison(r, finished("r-next", absl::Seconds(1)));
  EXPECT_EQ(count("same"), 4);
  EXPECT_EQ(count("regression"), 2);
}

}  // namespace
}  // namespace colltest::server
