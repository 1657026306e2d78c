// Prometheus metrics of colltestd (docs/design.md section 9): cases run, hangs with their culprit,
// latencies, worker restarts, group health, the run queue and health checks, rendered as the
// Prometheus text format for the HTTP port (http/gateway.h). Names follow Prometheus' own
// conventions (base units, counters ending in _total) so that `promtool check metrics` accepts a
// scrape; docs/metrics.md lists them. prometheus-cpp stays behind an Impl so that users of this
// header do not need its headers. Thread-safe.
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

  // Once the backend is known (before the HTTP port serves): colltest_build_info{version,commit,
  // backend} 1 (from `build`), and colltest_hangs_total at 0 for every rank and device a hang can
  // name: rank 0..devices-1 times each device's index.
  void SetBackend(const std::string& backend, const std::vector<colltest::v1::Device>& devices,
                  const BuildLabels& build);

  // One finished case: colltest_cases_total{status,variant,mode} (+1), and for cases that ran
  // (status OK or WRONG) colltest_case_latency_seconds{variant,mode} histogram of
  // CaseResult.timing.median_us in seconds (buckets 2^k us, 1 us to ~131 ms) and
  // colltest_case_wall_seconds histogram of wall_ms in seconds.
  void ObserveCase(const colltest::v1::CaseResult& result);
  // A hang whose culprit is known: colltest_hangs_total{rank,device} (+1).
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
  // A finished Health RPC: colltest_health_checks_total{status} (+1),
  // colltest_health_status{status} 1 for this verdict and 0 for the others, and
  // colltest_health_last_check_timestamp_seconds set to now.
  void ObserveHealthCheck(colltest::v1::CaseStatus status);

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
