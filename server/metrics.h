// Prometheus metrics of colltestd (DESIGN.md section 9): cases run, hangs with their culprit,
// latencies, worker restarts, group health, the run queue and health checks, rendered as the
// Prometheus text format for the HTTP port (http/gateway.h). prometheus-cpp stays behind an Impl so that users of this header do not need its
// headers. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "colltest/v1/colltest.pb.h"
#include "server/listener_events.h"

namespace colltest::server {

class Metrics final : public ListenerEvents {
 public:
  Metrics();  // registry with every family created up front (so a scrape shows them at zero)
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // One finished case: colltest_cases_total{status,variant,mode} (+1), and for cases that ran
  // (status OK or WRONG) colltest_case_latency_us{variant,mode} histogram of
  // CaseResult.timing.median_us (exponential buckets from 1 us to ~100 ms) and
  // colltest_case_wall_seconds histogram of wall_ms/1000.
  void ObserveCase(const colltest::v1::CaseResult& result);
  // A hang whose culprit is known: colltest_hangs_total{rank,device} (+1).
  void ObserveHang(uint32_t culprit_rank, uint32_t culprit_device);
  // colltest_worker_restarts_total (+1 per group respawn).
  void ObserveRestart();
  // colltest_group_state{group="0,1,2,3",state="serving|degraded|recovering"}: 1 for the current
  // state, 0 for the other two (all three series exist once a group is set).
  void SetGroupState(const std::vector<uint32_t>& devices, colltest::v1::GroupState state);
  // colltest_runs{state="queued|running"} gauges.
  void SetRuns(size_t queued, size_t running);
  // colltest_health_checks_total{status} (+1) for a finished Health RPC.
  void ObserveHealthCheck(colltest::v1::CaseStatus status);

  // colltest_connections_open gauge: the listener's open client connections.
  void SetConnectionsOpen(size_t open) override;
  // colltest_connections_refused_total{reason="cap|handshake_timeout|bad_preface|accept_error"}.
  void ObserveRefused(Refusal reason, uint64_t count) override;

  // The text of a scrape (GET /metrics, served by http/gateway.h).
  std::string Render() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace colltest::server
