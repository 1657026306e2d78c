#include "server/runs/metrics.h"

#include <array>
#include <map>
#include <mutex>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/names.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;

// Label values are the lower-case short names a user types ("lamport_tb", "hang"), so a query
// reads like a command line.
std::string StatusLabel(v1::CaseStatus s) {
  return absl::AsciiStrToLower(common::CaseStatusName(s));
}
// MODE_UNSPECIFIED means eager in the API; one series for both keeps dashboards simple.
std::string ModeLabel(v1::Mode m) {
  return std::string(common::ModeName(m == v1::MODE_UNSPECIFIED ? v1::MODE_EAGER : m));
}

constexpr std::array<v1::CaseStatus, 5> kStatuses = {v1::CASE_STATUS_OK, v1::CASE_STATUS_WRONG,
                                                     v1::CASE_STATUS_HANG, v1::CASE_STATUS_ERROR,
                                                     v1::CASE_STATUS_UNSUPPORTED};
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

// Sets the gauge of `current` to 1 and the others to 0 (a state set as Prometheus models it); a
// `current` outside `states` leaves every gauge at 0.
template <typename State, size_t N>
void SetOneHot(const std::array<prometheus::Gauge*, N>& gauges, const std::array<State, N>& states,
               State current) {
  for (size_t i = 0; i < N; ++i) gauges[i]->Set(states[i] == current ? 1 : 0);
}

// A whole case (spawn-free: workers are warm) takes milliseconds to about a minute for stress runs.
prometheus::Histogram::BucketBoundaries WallBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 60};
}

}  // namespace

struct Metrics::Impl {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();

  prometheus::Family<prometheus::Counter>& cases =
      prometheus::BuildCounter()
          .Name("colltest_cases_total")
          .Help("Finished test cases by status, variant and mode.")
          .Register(*registry);
  prometheus::Family<prometheus::Histogram>& latency =
      prometheus::BuildHistogram()
          .Name("colltest_case_latency_seconds")
          .Help("Median per-call latency in seconds of cases that ran (OK or WRONG).")
          .Register(*registry);
  prometheus::Family<prometheus::Histogram>& wall =
      prometheus::BuildHistogram()
          .Name("colltest_case_wall_seconds")
          .Help("Wall time in seconds of cases that ran (OK or WRONG).")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& hangs =
      prometheus::BuildCounter()
          .Name("colltest_hangs_total")
          .Help("Hangs whose culprit is known, by the culprit's rank and device.")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& restarts = prometheus::BuildCounter()
                                                          .Name("colltest_worker_restarts_total")
                                                          .Help("Respawns of a worker group.")
                                                          .Register(*registry);
  prometheus::Family<prometheus::Counter>& history_write_errors =
      prometheus::BuildCounter()
          .Name("colltest_history_write_errors_total")
          .Help("Writes the run history's database refused (a full disk, an I/O error).")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& group_state =
      prometheus::BuildGauge()
          .Name("colltest_group_state")
          .Help("1 for the current state of a worker group, 0 for the others.")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& runs = prometheus::BuildGauge()
                                                    .Name("colltest_runs")
                                                    .Help("Runs queued and running.")
                                                    .Register(*registry);
  prometheus::Family<prometheus::Counter>& health_checks =
      prometheus::BuildCounter()
          .Name("colltest_health_checks_total")
          .Help("Finished Health RPCs by overall status.")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& connections =
      prometheus::BuildGauge()
          .Name("colltest_connections_open")
          .Help("Open plaintext client connections, counting those awaiting their preface.")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& refused =
      prometheus::BuildCounter()
          .Name("colltest_connections_refused_total")
          .Help("Connections the listener closed without serving them, or failed to accept.")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& health_status =
      prometheus::BuildGauge()
          .Name("colltest_health_status")
          .Help("1 for the overall status of the last finished Health RPC, 0 for the others.")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& health_last =
      prometheus::BuildGauge()
          .Name("colltest_health_last_check_timestamp_seconds")
          .Help("Unix time of the last finished Health RPC; 0 before the first.")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& start_time =
      prometheus::BuildGauge()
          .Name("colltest_start_time_seconds")
          .Help("Unix time at which colltestd started.")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& build_info =
      prometheus::BuildGauge()
          .Name("colltest_build_info")
          .Help("Always 1; the labels say which colltestd serves and on which backend.")
          .Register(*registry);

  prometheus::Gauge& connections_open = connections.Add({});
  prometheus::Gauge& runs_queued = runs.Add({{"state", "queued"}});
  prometheus::Gauge& runs_running = runs.Add({{"state", "running"}});
  prometheus::Counter& restarts_total = restarts.Add({});
  prometheus::Counter& history_write_errors_total = history_write_errors.Add({});
  prometheus::Histogram& wall_seconds = wall.Add({}, WallBuckets());
  prometheus::Gauge& health_last_check = health_last.Add({});
  prometheus::Gauge& started = start_time.Add({});

  // Guards the three gauges of a group so that concurrent updates of one group leave exactly one
  // of them at 1.
  mutable std::mutex mu;
  std::map<std::string, std::array<prometheus::Gauge*, kGroupStates.size()>> groups;
  // Guards the health gauges so that concurrent verdicts leave exactly one of them at 1.
  std::mutex health_mu;
  std::array<prometheus::Gauge*, kStatuses.size()> health_gauges{};

  // Series whose label values are fixed by the API, each at 0 (or its initial value).
  void AddKnownSeries();
};

void Metrics::Impl::AddKnownSeries() {
  started.SetToCurrentTime();
  for (ListenerEvents::Refusal r : kRefusals) refused.Add({{"reason", RefusalLabel(r)}});
  for (size_t i = 0; i < kStatuses.size(); ++i) {
    const std::string status = StatusLabel(kStatuses[i]);
    health_checks.Add({{"status", status}});
    health_gauges[i] = &health_status.Add({{"status", status}});
  }
  for (v1::Variant v : kVariants) {
    for (v1::Mode m : kModes) {
      const std::string variant(common::VariantName(v));
      const std::string mode = ModeLabel(m);
      latency.Add({{"variant", variant}, {"mode", mode}}, LatencyBuckets());
      for (v1::CaseStatus s : kStatuses) {
        cases.Add({{"status", StatusLabel(s)}, {"variant", variant}, {"mode", mode}});
      }
    }
  }
}

Metrics::Metrics() : impl_(std::make_unique<Impl>()) {
  // prometheus-cpp leaves a family without series out of a scrape, so every series whose label
  // values are known up front is created now: rate(), increase() and alerts then see a 0 before
  // the first event instead of no series at all. Hangs follow in SetBackend, once the devices are
  // known; group states appear when a group first spawns, as device sets are chosen per run.
  impl_->AddKnownSeries();
}

Metrics::~Metrics() = default;

void Metrics::SetBackend(const std::string& backend, const std::vector<v1::Device>& devices,
                         const BuildLabels& build) {
  impl_->build_info
      .Add({{"version", build.version}, {"commit", build.commit}, {"backend", backend}})
      .Set(1);
  // A hang names the culprit's rank in its group and that rank's device; a group has at most as
  // many ranks as there are devices, and any device may hold any rank.
  for (size_t rank = 0; rank < devices.size(); ++rank) {
    for (const v1::Device& device : devices) {
      impl_->hangs.Add({{"rank", absl::StrCat(rank)}, {"device", absl::StrCat(device.index())}});
    }
  }
}

void Metrics::ObserveCase(const v1::CaseResult& result) {
  const std::string variant = common::KernelName(result);
  const std::string mode = ModeLabel(result.mode());
  impl_->cases.Add({{"status", StatusLabel(result.status())}, {"variant", variant}, {"mode", mode}})
      .Increment();
  // Hung, failed or unsupported cases have no meaningful timing; they would drag the histograms
  // toward 0 (or the timeout).
  if (result.status() != v1::CASE_STATUS_OK && result.status() != v1::CASE_STATUS_WRONG) return;
  impl_->latency.Add({{"variant", variant}, {"mode", mode}}, LatencyBuckets())
      .Observe(result.timing().median_us() / 1e6);
  impl_->wall_seconds.Observe(result.wall_ms() / 1000.0);
}

void Metrics::ObserveHang(uint32_t culprit_rank, uint32_t culprit_device) {
  impl_->hangs.Add({{"rank", absl::StrCat(culprit_rank)}, {"device", absl::StrCat(culprit_device)}})
      .Increment();
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

void Metrics::ObserveHealthCheck(v1::CaseStatus status) {
  impl_->health_checks.Add({{"status", StatusLabel(status)}}).Increment();
  std::lock_guard<std::mutex> lock(impl_->health_mu);
  // A status outside kStatuses (CASE_STATUS_UNSPECIFIED) leaves every gauge at 0.
  SetOneHot(impl_->health_gauges, kStatuses, status);
  impl_->health_last_check.SetToCurrentTime();
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
