#include "server/runs/metrics_health.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;
using metrics_common::Counters;
using metrics_common::Gauges;
using metrics_common::kStatuses;
using metrics_common::SetOneHot;
using metrics_common::StatusLabel;

constexpr std::array<TargetHealth, kTargetHealthCount> kTargetHealths = {
    TargetHealth::kOk,    TargetHealth::kUnsupported, TargetHealth::kWarn,
    TargetHealth::kWrong, TargetHealth::kHang,        TargetHealth::kError};

const char* TargetHealthLabel(TargetHealth h) {
  switch (h) {
    case TargetHealth::kOk:
      return "ok";
    case TargetHealth::kUnsupported:
      return "unsupported";
    case TargetHealth::kWarn:
      return "warn";
    case TargetHealth::kWrong:
      return "wrong";
    case TargetHealth::kHang:
      return "hang";
    case TargetHealth::kError:
      return "error";
  }
  return "error";
}

enum class SelfTestResult { kPassed, kFailed, kNotRun };
constexpr std::array<SelfTestResult, 3> kSelfTestResults = {
    SelfTestResult::kPassed, SelfTestResult::kFailed, SelfTestResult::kNotRun};
constexpr std::array<const char*, 3> kSelfTestLabels = {"passed", "failed", "not_run"};

SelfTestResult SelfTestResultOf(const v1::HealthSelfTest& self_test) {
  if (!self_test.ran()) return SelfTestResult::kNotRun;
  return self_test.passed() ? SelfTestResult::kPassed : SelfTestResult::kFailed;
}

// One series per status of a one-hot family, each labelled `labels` plus its status.
std::array<prometheus::Gauge*, kTargetHealthCount> AddOneHot(
    prometheus::Family<prometheus::Gauge>& family, LabelSet labels) {
  std::array<prometheus::Gauge*, kTargetHealthCount> gauges{};
  for (size_t i = 0; i < kTargetHealths.size(); ++i) {
    labels["status"] = TargetHealthLabel(kTargetHealths[i]);
    gauges[i] = &family.Add(labels);
  }
  return gauges;
}

}  // namespace

TargetHealth TargetHealthOf(const v1::HealthTarget& target) {
  switch (target.status()) {
    case v1::CASE_STATUS_OK:
      return target.slow() || target.below_expected() ? TargetHealth::kWarn : TargetHealth::kOk;
    case v1::CASE_STATUS_UNSUPPORTED:
      return TargetHealth::kUnsupported;
    case v1::CASE_STATUS_WRONG:
      return TargetHealth::kWrong;
    case v1::CASE_STATUS_HANG:
      return TargetHealth::kHang;
    default:
      return TargetHealth::kError;
  }
}

HealthGauges::HealthGauges(prometheus::Registry& registry)
    : checks_(Counters(registry, "colltest_health_checks_total",
                       "Finished Health RPCs by overall status.")),
      status_(
          Gauges(registry, "colltest_health_status",
                 "1 for the overall status of the last finished Health RPC, 0 for the others.")),
      last_check_(Gauges(registry, "colltest_health_last_check_timestamp_seconds",
                         "Unix time of the last finished Health RPC; 0 before the first.")),
      self_test_(Gauges(registry, "colltest_health_self_test",
                        "1 for the hang self test's result in the last health check, 0 for the "
                        "others; all 0 before the first check.")),
      device_health_(Gauges(registry, "colltest_device_health",
                            "1 for a GPU's verdict in the last health check that covered it, 0 "
                            "for the others; all 0 before the first.")),
      device_last_(Gauges(registry, "colltest_device_health_last_check_timestamp_seconds",
                          "Unix time of the last health check that covered a GPU; 0 before.")),
      link_health_(Gauges(registry, "colltest_link_health",
                          "1 for a GPU pair's verdict in the last health check that covered it, 0 "
                          "for the others; all 0 before the first.")),
      link_last_(Gauges(registry, "colltest_link_health_last_check_timestamp_seconds",
                        "Unix time of the last health check that covered a GPU pair; 0 before.")),
      link_busbw_(Gauges(registry, "colltest_link_busbw_bytes_per_second",
                         "Best bus bandwidth of a GPU pair in the last long health check.")),
      link_expected_(Gauges(registry, "colltest_link_expected_busbw_bytes_per_second",
                            "Bus bandwidth expected of a GPU pair by the long health check.")) {
  for (size_t i = 0; i < kStatuses.size(); ++i) {
    checks_.Add({{"status", StatusLabel(kStatuses[i])}});
    overall_[i] = &status_.Add({{"status", StatusLabel(kStatuses[i])}});
  }
  for (size_t i = 0; i < kSelfTestResults.size(); ++i) {
    self_test_results_[i] = &self_test_.Add({{"result", kSelfTestLabels[i]}});
  }
  last_check_time_ = &last_check_.Add({});
}

void HealthGauges::SetMachine(const DeviceLabels& labels) {
  labels_ = labels;
  // Every GPU and link from the start, so that an alert on a verdict or a stale time sees a
  // series before the first check, and a GPU no check ever covered shows as never checked.
  for (const GpuLabels& gpu : labels_.Gpus()) DeviceSeriesOf(gpu);
  for (const auto& [a, b] : labels_.Links()) LinkSeriesOf(a, b);
}

HealthGauges::DeviceSeries& HealthGauges::DeviceSeriesOf(const GpuLabels& gpu) {
  auto it = devices_.find(gpu.gpu);
  if (it != devices_.end()) return it->second;
  const LabelSet labels = labels_.Device(gpu);
  DeviceSeries series{AddOneHot(device_health_, labels), &device_last_.Add(labels)};
  return devices_.emplace(gpu.gpu, series).first->second;
}

HealthGauges::LinkSeries& HealthGauges::LinkSeriesOf(const GpuLabels& a, const GpuLabels& b) {
  const LinkKey key = std::minmax(a.gpu, b.gpu);
  auto it = links_.find(key);
  if (it != links_.end()) return it->second;
  const LabelSet labels = labels_.Link(a, b);
  LinkSeries series{AddOneHot(link_health_, labels), &link_last_.Add(labels), labels};
  return links_.emplace(key, std::move(series)).first->second;
}

void HealthGauges::Observe(const v1::HealthResponse& response, double now) {
  ObserveOverall(response, now);
  ObserveDevices(response, now);
  ObserveLinks(response, now);
}

void HealthGauges::ObserveOverall(const v1::HealthResponse& response, double now) {
  checks_.Add({{"status", StatusLabel(response.status())}}).Increment();
  // A status outside kStatuses (CASE_STATUS_UNSPECIFIED) leaves every gauge at 0.
  SetOneHot(overall_, kStatuses, response.status());
  last_check_time_->Set(now);
  // The last self test that ran stands until the next one runs: node-problem-detector's quick
  // checks (every few minutes, no self test) would otherwise turn a failure back into not_run
  // before an alert's `for` or a scrape saw it. not_run only until a self test has run.
  const SelfTestResult self_test = SelfTestResultOf(response.self_test());
  if (self_test == SelfTestResult::kNotRun && self_test_ran_) return;
  self_test_ran_ = self_test != SelfTestResult::kNotRun;
  SetOneHot(self_test_results_, kSelfTestResults, self_test);
}

void HealthGauges::ObserveDevices(const v1::HealthResponse& response, double now) {
  // With --ranks-per-gpu several targets (slots) share a GPU: the GPU is as bad as its worst.
  std::map<uint32_t, std::pair<GpuLabels, TargetHealth>> worst;
  for (const v1::HealthTarget& target : response.ranks()) {
    const TargetHealth health = TargetHealthOf(target);
    for (uint32_t device : target.devices()) {
      const GpuLabels gpu = labels_.GpuOf(device);
      auto it = worst.try_emplace(gpu.gpu, gpu, health).first;
      it->second.second = std::max(it->second.second, health);
    }
  }
  for (const auto& [index, verdict] : worst) {
    DeviceSeries& series = DeviceSeriesOf(verdict.first);
    SetOneHot(series.status, kTargetHealths, verdict.second);
    series.last->Set(now);
  }
}

void HealthGauges::ObserveLinks(const v1::HealthResponse& response, double now) {
  struct Verdict {
    LinkSeries* series;
    TargetHealth health;
    double busbw_gbps;
    double expected_gbps;
  };
  std::map<LinkKey, Verdict> worst;
  for (const v1::HealthTarget& target : response.pairs()) {
    if (target.devices_size() != 2) continue;  // a pair names two devices; nothing else is a link
    const GpuLabels a = labels_.GpuOf(target.devices(0));
    const GpuLabels b = labels_.GpuOf(target.devices(1));
    LinkSeries* series = &LinkSeriesOf(a, b);
    Verdict& v =
        worst.try_emplace(std::minmax(a.gpu, b.gpu), Verdict{series, TargetHealth::kOk, 0, 0})
            .first->second;
    v.health = std::max(v.health, TargetHealthOf(target));
    // Slot pairs of one GPU pair measure the same link: the best figure is the link's.
    v.busbw_gbps = std::max(v.busbw_gbps, target.busbw_gbps());
    v.expected_gbps = std::max(v.expected_gbps, target.expected_busbw_gbps());
  }
  for (auto& [key, v] : worst) {
    SetOneHot(v.series->status, kTargetHealths, v.health);
    v.series->last->Set(now);
    // Below level long a pair has no figure: the gauges keep the last long check's.
    if (v.busbw_gbps > 0) link_busbw_.Add(v.series->labels).Set(v.busbw_gbps * 1e9);
    if (v.expected_gbps > 0) link_expected_.Add(v.series->labels).Set(v.expected_gbps * 1e9);
  }
}

}  // namespace colltest::server
