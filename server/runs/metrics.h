// Prometheus metrics of colltestd (docs/design.md section 9): cases run, hangs with their culprit,
// latencies and bandwidths, worker restarts, group health, the run queue, health checks per GPU
// and link, and comparisons, rendered as the Prometheus text format for the HTTP port
// (http/gateway.h). Names follow Prometheus' own conventions (base units, counters ending in
// _total) so that `promtool check metrics` accepts a scrape, but for its note on DCGM-exporter's
// camelCase `modelName`: per-GPU series carry DCGM-exporter's labels so that they join its
// telemetry; docs/metrics.md lists them. prometheus-cpp stays behind
// an Impl so that users of this header do not need its headers. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "colltest/v1/colltest.pb.h"
#include "server/net/listener_events.h"

namespace colltest::server {

// What colltest_build_info labels the binary with (colltestd passes server/build_info.h's).
struct BuildLabels {
  std::string version;
  std::string commit;
};

class Metrics final : public ListenerEvents {
 public:
  Metrics();  // registry with every family created up front (so a scrape shows them at zero)
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // Once the backend is known (before the HTTP port serves), from the MachineIdentity colltestd
  // serves: colltest_build_info{version,commit,backend} 1 (from `build`),
  // colltest_node_info{Hostname,machine_key,backend,driver_version} 1, colltest_device_info 1 per
  // GPU in DCGM-exporter's labels (server/runs/device_labels.h), and at 0: colltest_hangs_total
  // for rank 0..devices-1 times each GPU, and the per-GPU and per-link health series.
  void SetBackend(const colltest::v1::MachineIdentity& machine, const BuildLabels& build);

  // One finished case: colltest_cases_total{status,variant,mode} (+1), and for cases that ran
  // (status OK or WRONG) colltest_case_latency_seconds{variant,mode,world,size_class} histogram
  // of CaseResult.timing.median_us in seconds (buckets 2^k us, 1 us to ~131 ms),
  // colltest_case_wall_seconds histogram of wall_ms in seconds, and the gauges
  // colltest_case_{busbw,algbw}_bytes_per_second and colltest_case_median_latency_seconds
  // {variant,mode,world,dtype,size_class} set to this case's figures.
  void ObserveCase(const colltest::v1::CaseResult& result);
  // A hang whose culprit is known: colltest_hangs_total{rank,gpu,UUID,pci_bus_id,modelName,
  // Hostname} (+1), labelled with the GPU that holds device index `culprit_device`.
  void ObserveHang(uint32_t culprit_rank, uint32_t culprit_device);
  // colltest_worker_restarts_total (+1 per group respawn).
  void ObserveRestart();
  // colltest_history_write_errors_total (+1 per write the history database refused: a case, a
  // run's state; server/runs/run_history.h).
  void ObserveHistoryWriteError();
  // colltest_group_state{group="0,1,2,3",state="serving|degraded|recovering"}: 1 for the current
  // state, 0 for the other two (all three series exist once a group is set).
  void SetGroupState(const std::vector<uint32_t>& devices, colltest::v1::GroupState state);
  // colltest_runs{state="queued|running"} gauges.
  void SetRuns(size_t queued, size_t running);
  // A Health RPC's answer. One from the cache or a BUSY one observes nothing new and is ignored.
  // Otherwise: colltest_health_checks_total{status} (+1), colltest_health_status{status} 1 for
  // this verdict and 0 for the others, colltest_health_last_check_timestamp_seconds set to now,
  // colltest_health_self_test{result}, and for each GPU and link the check covered its one-hot
  // colltest_device_health / colltest_link_health, their times, and the long level's bandwidths
  // (server/runs/metrics_health.h).
  // A check with a planted fault (HealthRequest.fault) tests colltest, not the machine, and is
  // ignored too: its HANG would fire the machine's alerts until the next real check.
  void ObserveHealth(const colltest::v1::HealthResponse& response, bool planted_fault = false);
  // An answered Compare RPC of `candidate` (run_b): colltest_compare_cases_total{verdict} (+1 per
  // case comparison), for the first comparison of each candidate made within kJudgeWindow of it
  // finishing: the judgement of a new run (`colltest run --compare-baseline`). Comparing it
  // again, or comparing an old run (the dashboard's trend compares up to 30 runs each time it is
  // opened), is a reading of history and counts nothing, so that ColltestRegression fires on a
  // new regression, not on someone looking at an old one.
  void ObserveComparison(const colltest::v1::CompareResponse& response,
                         const colltest::v1::RunResult& candidate);
  static constexpr int64_t kJudgeWindowMs = 60 * 60 * 1000;

  // colltest_connections_open gauge: the listener's open client connections.
  void SetConnectionsOpen(size_t open) override;
  // colltest_connections_refused_total{reason="cap|handshake_timeout|bad_preface|accept_error|
  // peer_limit|first_call_timeout|evicted"}.
  void ObserveRefused(Refusal reason, uint64_t count) override;

  // The text of a scrape (GET /metrics, served by http/gateway.h).
  std::string Render() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace colltest::server
