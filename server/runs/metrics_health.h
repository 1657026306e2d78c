// The health families of colltestd's metrics (docs/metrics.md): the verdict of the last health
// check, and per GPU and per link (in DCGM-exporter's labels, server/runs/device_labels.h) the
// verdict of the last check that covered it, with the long level's bus bandwidth of each link and
// the hang-detection self test. Internal to colltest_server_runs: Metrics owns one and serialises
// every call to it, so that concurrent checks leave each one-hot family with a single 1.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <utility>

#include "colltest/v1/colltest.pb.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"
#include "server/runs/device_labels.h"
#include "server/runs/metrics_common.h"

namespace colltest::server {

// A device's or link's verdict as the health families label it, from best to worst. Follows
// StatusSeverity (server/workers/verdict.h: OK < UNSUPPORTED < WRONG < HANG < ERROR), so that
// the worst over a GPU's targets agrees with the check's own overall verdict; warn sits just
// above unsupported: the health check counts UNSUPPORTED as healthy (a property of the kernel,
// not of the GPU), while a slow or below-expected target says something about the hardware, but
// less than any failure does.
enum class TargetHealth { kOk, kUnsupported, kWarn, kWrong, kHang, kError };
inline constexpr size_t kTargetHealthCount = 6;

// The verdict on one HealthTarget: its status, an OK one that is `slow` or `below_expected`
// being a warn; a status the API does not define counts as error, as StatusSeverity has it.
TargetHealth TargetHealthOf(const colltest::v1::HealthTarget& target);

class HealthGauges {
 public:
  // Registers every health family; the series without per-GPU labels start at 0.
  explicit HealthGauges(prometheus::Registry& registry);

  // Adds the series of every GPU and link of `labels` at 0, and keeps `labels` to map the
  // devices of later checks to their GPUs.
  void SetMachine(const DeviceLabels& labels);
  // One check that ran, finished at Unix time `now`: colltest_health_checks_total (+1), the
  // one-hot families of the overall verdict and the self test, and per GPU and link it covered
  // the one-hot verdict, the time and (links, level long) the bus bandwidths.
  void Observe(const colltest::v1::HealthResponse& response, double now);

 private:
  using OneHot = std::array<prometheus::Gauge*, kTargetHealthCount>;
  struct DeviceSeries {
    OneHot status{};
    prometheus::Gauge* last = nullptr;
  };
  struct LinkSeries {
    OneHot status{};
    prometheus::Gauge* last = nullptr;
    LabelSet labels;  // for the bandwidth gauges, added on the first figure
  };
  using LinkKey = std::pair<uint32_t, uint32_t>;  // (gpu, peer_gpu), gpu <= peer_gpu

  DeviceSeries& DeviceSeriesOf(const GpuLabels& gpu);
  LinkSeries& LinkSeriesOf(const GpuLabels& a, const GpuLabels& b);
  void ObserveOverall(const colltest::v1::HealthResponse& response, double now);
  void ObserveDevices(const colltest::v1::HealthResponse& response, double now);
  void ObserveLinks(const colltest::v1::HealthResponse& response, double now);

  prometheus::Family<prometheus::Counter>& checks_;
  prometheus::Family<prometheus::Gauge>& status_;
  prometheus::Family<prometheus::Gauge>& last_check_;
  prometheus::Family<prometheus::Gauge>& self_test_;
  prometheus::Family<prometheus::Gauge>& device_health_;
  prometheus::Family<prometheus::Gauge>& device_last_;
  prometheus::Family<prometheus::Gauge>& link_health_;
  prometheus::Family<prometheus::Gauge>& link_last_;
  prometheus::Family<prometheus::Gauge>& link_busbw_;
  prometheus::Family<prometheus::Gauge>& link_expected_;

  std::array<prometheus::Gauge*, metrics_common::kStatuses.size()> overall_{};
  std::array<prometheus::Gauge*, 3> self_test_results_{};  // passed, failed, not_run
  bool self_test_ran_ = false;  // a check has run a self test: not_run no longer replaces it
  prometheus::Gauge* last_check_time_ = nullptr;
  DeviceLabels labels_;
  std::map<uint32_t, DeviceSeries> devices_;  // by gpu
  std::map<LinkKey, LinkSeries> links_;
};

}  // namespace colltest::server
