#include "server/runs/metrics.h"

#include <array>
#include <iterator>
#include <map>
#include <mutex>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/names.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"
#include "server/runs/device_labels.h"
#include "server/runs/metrics_common.h"
#include "server/runs/metrics_health.h"
#include "server/runs/size_class.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;
using metrics_common::Counters;
using metrics_common::Gauges;
using metrics_common::kStatuses;
using metrics_common::SetOneHot;
using metrics_common::StatusLabel;

// MODE_UNSPECIFIED means eager in the API; one series for both keeps dashboards simple.
std::string ModeLabel(v1::Mode m) {
  return std::string(common::ModeName(m == v1::MODE_UNSPECIFIED ? v1::MODE_EAGER : m));
}

constexpr std::array<v1::Variant, 7> kVariants = {
    v1::VARIANT_ONE_STAGE,  v1::VARIANT_TWO_KERNEL,       v1::VARIANT_LAMPORT,
    v1::VARIANT_LAMPORT_TB, v1::VARIANT_LAMPORT_TWO_SHOT, v1::VARIANT_NCCL,
    v1::VARIANT_AUTO};
constexpr std::array<v1::Mode, 2> kModes = {v1::MODE_EAGER, v1::MODE_GRAPH};

constexpr std::array<v1::GroupState, 3> kGroupStates = {
    v1::GROUP_STATE_SERVING, v1::GROUP_STATE_DEGRADED, v1::GROUP_STATE_RECOVERING};

std::string GroupStateLabel(v1::GroupState s) {
  switch (s) {
    case v1::GROUP_STATE_SERVING:
      return "serving";
    case v1::GROUP_STATE_DEGRADED:
      return "degraded";
    case v1::GROUP_STATE_RECOVERING:
      return "recovering";
    default:
      return "unspecified";
  }
}

constexpr std::array<ListenerEvents::Refusal, 7> kRefusals = {
    ListenerEvents::Refusal::kCap,        ListenerEvents::Refusal::kHandshakeTimeout,
    ListenerEvents::Refusal::kBadPreface, ListenerEvents::Refusal::kAcceptError,
    ListenerEvents::Refusal::kPeerLimit,  ListenerEvents::Refusal::kFirstCallTimeout,
    ListenerEvents::Refusal::kEvicted};

const char* RefusalLabel(ListenerEvents::Refusal reason) {
  switch (reason) {
    case ListenerEvents::Refusal::kCap:
      return "cap";
    case ListenerEvents::Refusal::kHandshakeTimeout:
      return "handshake_timeout";
    case ListenerEvents::Refusal::kBadPreface:
      return "bad_preface";
    case ListenerEvents::Refusal::kAcceptError:
      return "accept_error";
    case ListenerEvents::Refusal::kPeerLimit:
      return "peer_limit";
    case ListenerEvents::Refusal::kFirstCallTimeout:
      return "first_call_timeout";
    case ListenerEvents::Refusal::kEvicted:
      return "evicted";
  }
  return "unknown";
}

// Per-call kernel latencies sit between a few us (small shapes, one-shot kernels) and tens of ms
// (large shapes on CPU ranks): powers of two from 1 us to 131 ms, in seconds.
// Built once: ObserveCase passes them for every timed case (prometheus-cpp ignores them once the
// series exists, but would still get a fresh copy each time).
const prometheus::Histogram::BucketBoundaries& LatencyBuckets() {
  static const prometheus::Histogram::BucketBoundaries kBuckets = [] {
    prometheus::Histogram::BucketBoundaries b;
    for (double us = 1; us <= 131072; us *= 2) b.push_back(us / 1e6);
    return b;
  }();
  return kBuckets;
}

// A whole case (spawn-free: workers are warm) takes milliseconds to about a minute for stress runs.
prometheus::Histogram::BucketBoundaries WallBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 60};
}

constexpr std::array<v1::CompareVerdict, 5> kVerdicts = {
    v1::COMPARE_VERDICT_SAME, v1::COMPARE_VERDICT_REGRESSION, v1::COMPARE_VERDICT_IMPROVEMENT,
    v1::COMPARE_VERDICT_ONLY_A, v1::COMPARE_VERDICT_ONLY_B};

// The labels a case's timing is filed under: the shape is bucketed (server/runs/size_class.h),
// since m and n as labels would make a series per shape.
prometheus::Labels CaseLabels(const v1::CaseResult& result, bool with_dtype) {
  prometheus::Labels labels = {{"variant", common::KernelName(result)},
                               {"mode", ModeLabel(result.mode())},
                               {"world", absl::StrCat(result.world_size())},
                               {"size_class", std::string(SizeClassOf(result))}};
  if (with_dtype) labels["dtype"] = std::string(common::DTypeName(result.dtype()));
  return labels;
}

}  // namespace

struct Metrics::Impl {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  prometheus::Registry& r = *registry;

  prometheus::Family<prometheus::Counter>& cases =
      Counters(r, "colltest_cases_total", "Finished test cases by status, variant and mode.");
  prometheus::Family<prometheus::Histogram>& latency =
      prometheus::BuildHistogram()
          .Name("colltest_case_latency_seconds")
          .Help("Median per-call latency in seconds of cases that ran (OK or WRONG).")
          .Register(r);
  prometheus::Family<prometheus::Histogram>& wall =
      prometheus::BuildHistogram()
          .Name("colltest_case_wall_seconds")
          .Help("Wall time in seconds of cases that ran (OK or WRONG).")
          .Register(r);
  prometheus::Family<prometheus::Gauge>& busbw =
      Gauges(r, "colltest_case_busbw_bytes_per_second",
             "Bus bandwidth of the last case that ran (OK or WRONG) of a label set.");
  prometheus::Family<prometheus::Gauge>& algbw =
      Gauges(r, "colltest_case_algbw_bytes_per_second",
             "Algorithm bandwidth of the last case that ran (OK or WRONG) of a label set.");
  prometheus::Family<prometheus::Gauge>& median =
      Gauges(r, "colltest_case_median_latency_seconds",
             "Median per-call latency of the last case that ran (OK or WRONG) of a label set.");
  prometheus::Family<prometheus::Counter>& hangs =
      Counters(r, "colltest_hangs_total", "Hangs whose culprit is known, by its rank and GPU.");
  prometheus::Family<prometheus::Counter>& restarts =
      Counters(r, "colltest_worker_restarts_total", "Respawns of a worker group.");
  prometheus::Family<prometheus::Counter>& history_write_errors =
      Counters(r, "colltest_history_write_errors_total",
               "Writes the run history's database refused (a full disk, an I/O error).");
  prometheus::Family<prometheus::Gauge>& group_state = Gauges(
      r, "colltest_group_state", "1 for the current state of a worker group, 0 for the others.");
  prometheus::Family<prometheus::Gauge>& runs =
      Gauges(r, "colltest_runs", "Runs queued and running.");
  prometheus::Family<prometheus::Gauge>& connections =
      Gauges(r, "colltest_connections_open",
             "Open plaintext client connections, counting those awaiting their preface.");
  prometheus::Family<prometheus::Counter>& refused =
      Counters(r, "colltest_connections_refused_total",
               "Connections the listener closed without serving them, or failed to accept.");
  prometheus::Family<prometheus::Counter>& compared = Counters(
      r, "colltest_compare_cases_total", "Case comparisons of answered Compare RPCs, by verdict.");
  prometheus::Family<prometheus::Gauge>& start_time =
      Gauges(r, "colltest_start_time_seconds", "Unix time at which colltestd started.");
  prometheus::Family<prometheus::Gauge>& build_info =
      Gauges(r, "colltest_build_info",
             "Always 1; the labels say which colltestd serves and on which backend.");
  prometheus::Family<prometheus::Gauge>& node_info =
      Gauges(r, "colltest_node_info", "Always 1; the labels name the node colltestd tests.");
  prometheus::Family<prometheus::Gauge>& device_info =
      Gauges(r, "colltest_device_info", "Always 1, one per GPU, in DCGM-exporter's labels.");

  prometheus::Gauge& connections_open = connections.Add({});
  prometheus::Gauge& runs_queued = runs.Add({{"state", "queued"}});
  prometheus::Gauge& runs_running = runs.Add({{"state", "running"}});
  prometheus::Counter& restarts_total = restarts.Add({});
  prometheus::Counter& history_write_errors_total = history_write_errors.Add({});
  prometheus::Histogram& wall_seconds = wall.Add({}, WallBuckets());
  prometheus::Gauge& started = start_time.Add({});
  std::array<prometheus::Counter*, kVerdicts.size()> verdicts{};

  // Guards the three gauges of a group so that concurrent updates of one group leave exactly one
  // of them at 1.
  mutable std::mutex mu;
  std::map<std::string, std::array<prometheus::Gauge*, kGroupStates.size()>> groups;
  // Guards the machine's label sets: set once by SetBackend, read by every hang.
  std::mutex machine_mu;
  DeviceLabels machine;
  // Serialises the health families so that concurrent verdicts leave exactly one of each at 1.
  std::mutex health_mu;
  HealthGauges health{r};
  // Serialises the three last-case gauges of a label set, so that they describe one case when
  // two groups finish cases of the same label set at once.
  std::mutex case_mu;
  // Candidate runs whose first comparison was counted, with the Unix ms they finished; pruned
  // past the judging window, so it holds at most the runs finished in the last hour.
  std::mutex compare_mu;
  std::map<std::string, int64_t> judged;

  // Series whose label values are fixed by the API, each at 0 (or its initial value).
  void AddKnownSeries();
  // Per GPU: colltest_device_info, and colltest_hangs_total for every rank.
  void AddDeviceSeries(const DeviceLabels& labels);
};

void Metrics::Impl::AddKnownSeries() {
  started.SetToCurrentTime();
  for (ListenerEvents::Refusal reason : kRefusals) refused.Add({{"reason", RefusalLabel(reason)}});
  for (size_t i = 0; i < kVerdicts.size(); ++i) {
    verdicts[i] = &compared.Add(
        {{"verdict", absl::AsciiStrToLower(common::CompareVerdictName(kVerdicts[i]))}});
  }
  // The per-case latency histograms and gauges are left to the first case of each label set:
  // every variant, mode, world and size class up front would be thousands of series on an 8-GPU
  // node (docs/metrics.md, "Cardinality"), most of them never observed.
  for (v1::Variant v : kVariants) {
    for (v1::Mode m : kModes) {
      for (v1::CaseStatus s : kStatuses) {
        cases.Add({{"status", StatusLabel(s)},
                   {"variant", std::string(common::VariantName(v))},
                   {"mode", ModeLabel(m)}});
      }
    }
  }
}

void Metrics::Impl::AddDeviceSeries(const DeviceLabels& labels) {
  for (const GpuLabels& gpu : labels.Gpus()) {
    prometheus::Labels series = labels.Device(gpu);
    device_info.Add(series).Set(1);
    // A hang names the culprit's rank in its group and the device that held it; a group has at
    // most as many ranks as there are devices, and any GPU may hold any rank.
    for (size_t rank = 0; rank < labels.devices(); ++rank) {
      series["rank"] = absl::StrCat(rank);
      hangs.Add(series);
    }
  }
}

Metrics::Metrics() : impl_(std::make_unique<Impl>()) {
  // prometheus-cpp leaves a family without series out of a scrape, so every series whose label
  // values are known up front is created now: rate(), increase() and alerts then see a 0 before
  // the first event instead of no series at all. Hangs and per-GPU series follow in SetBackend,
  // once the devices are known; group states appear when a group first spawns, as device sets
  // are chosen per run.
  impl_->AddKnownSeries();
}

Metrics::~Metrics() = default;

void Metrics::SetBackend(const v1::MachineIdentity& machine, const BuildLabels& build) {
  impl_->build_info
      .Add({{"version", build.version}, {"commit", build.commit}, {"backend", machine.backend()}})
      .Set(1);
  impl_->node_info
      .Add({{"Hostname", machine.hostname()},
            {"machine_key", machine.key()},
            {"backend", machine.backend()},
            {"driver_version", machine.driver_version()}})
      .Set(1);
  const DeviceLabels labels(machine);
  impl_->AddDeviceSeries(labels);
  {
    std::lock_guard<std::mutex> lock(impl_->machine_mu);
    impl_->machine = labels;
  }
  std::lock_guard<std::mutex> lock(impl_->health_mu);
  impl_->health.SetMachine(labels);
}

void Metrics::ObserveCase(const v1::CaseResult& result) {
  impl_->cases
      .Add({{"status", StatusLabel(result.status())},
            {"variant", common::KernelName(result)},
            {"mode", ModeLabel(result.mode())}})
      .Increment();
  // Hung, failed or unsupported cases have no meaningful timing; they would drag the histograms
  // toward 0 (or the timeout) and overwrite the last real figures.
  if (result.status() != v1::CASE_STATUS_OK && result.status() != v1::CASE_STATUS_WRONG) return;
  impl_->latency.Add(CaseLabels(result, /*with_dtype=*/false), LatencyBuckets())
      .Observe(result.timing().median_us() / 1e6);
  impl_->wall_seconds.Observe(result.wall_ms() / 1000.0);
  const prometheus::Labels labels = CaseLabels(result, /*with_dtype=*/true);
  std::lock_guard<std::mutex> lock(impl_->case_mu);
  impl_->busbw.Add(labels).Set(result.busbw_gbps() * 1e9);
  impl_->algbw.Add(labels).Set(result.algbw_gbps() * 1e9);
  impl_->median.Add(labels).Set(result.timing().median_us() / 1e6);
}

void Metrics::ObserveHang(uint32_t culprit_rank, uint32_t culprit_device) {
  prometheus::Labels labels;
  {
    std::lock_guard<std::mutex> lock(impl_->machine_mu);
    labels = impl_->machine.Device(impl_->machine.GpuOf(culprit_device));
  }
  labels["rank"] = absl::StrCat(culprit_rank);
  impl_->hangs.Add(labels).Increment();
}

void Metrics::ObserveRestart() { impl_->restarts_total.Increment(); }

void Metrics::ObserveHistoryWriteError() { impl_->history_write_errors_total.Increment(); }

void Metrics::SetGroupState(const std::vector<uint32_t>& devices, v1::GroupState state) {
  const std::string group = absl::StrJoin(devices, ",");
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->groups.find(group);
  if (it == impl_->groups.end()) {
    std::array<prometheus::Gauge*, kGroupStates.size()> gauges;
    for (size_t i = 0; i < kGroupStates.size(); ++i) {
      gauges[i] =
          &impl_->group_state.Add({{"group", group}, {"state", GroupStateLabel(kGroupStates[i])}});
    }
    it = impl_->groups.emplace(group, gauges).first;
  }
  // GROUP_STATE_UNSPECIFIED matches none of the three and leaves them all at 0.
  SetOneHot(it->second, kGroupStates, state);
}

void Metrics::SetRuns(size_t queued, size_t running) {
  impl_->runs_queued.Set(static_cast<double>(queued));
  impl_->runs_running.Set(static_cast<double>(running));
}

void Metrics::ObserveHealth(const v1::HealthResponse& response, bool planted_fault) {
  // A cached or BUSY answer repeats an earlier verdict: only a check that ran is an observation.
  if (response.cached() || response.busy() || planted_fault) return;
  const double now = absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch());
  std::lock_guard<std::mutex> lock(impl_->health_mu);
  impl_->health.Observe(response, now);
}

void Metrics::ObserveComparison(const v1::CompareResponse& response,
                                const v1::RunResult& candidate) {
  const int64_t now_ms = absl::ToUnixMillis(absl::Now());
  {
    std::lock_guard<std::mutex> lock(impl_->compare_mu);
    std::map<std::string, int64_t>& judged = impl_->judged;
    for (auto it = judged.begin(); it != judged.end();) {
      it = now_ms - it->second > kJudgeWindowMs ? judged.erase(it) : std::next(it);
    }
    if (now_ms - candidate.finished_unix_ms() > kJudgeWindowMs) return;
    if (!judged.emplace(candidate.run_id(), candidate.finished_unix_ms()).second) return;
  }
  for (const v1::CaseComparison& c : response.cases()) {
    // COMPARE_VERDICT_UNSPECIFIED (never sent) matches none and is not counted.
    for (size_t i = 0; i < kVerdicts.size(); ++i) {
      if (c.verdict() == kVerdicts[i]) impl_->verdicts[i]->Increment();
    }
  }
}

void Metrics::SetConnectionsOpen(size_t open) {
  impl_->connections_open.Set(static_cast<double>(open));
}

void Metrics::ObserveRefused(Refusal reason, uint64_t count) {
  impl_->refused.Add({{"reason", RefusalLabel(reason)}}).Increment(static_cast<double>(count));
}

std::string Metrics::Render() const {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, impl_->registry->Collect());
  return out.str();
}

}  // namespace colltest::server
