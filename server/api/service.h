// colltest.v1.CollectiveTest on the synchronous gRPC API. A run executes in the handler's own
// thread (waiting in the device queue included), which keeps a run's life tied to its call: when
// the client goes away, the run is cancelled.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "colltest/v1/colltest.grpc.pb.h"
#include "colltest/v1/worker.pb.h"
#include "common/defaults.h"
#include "server/devices/device_users.h"
#include "server/health/health_check.h"
#include "server/health/health_gate.h"
#include "server/net/auth.h"
#include "server/net/send_watchdog.h"
#include "server/runs/run_executor.h"
#include "server/runs/run_history.h"
#include "server/runs/run_queue.h"
#include "server/workers/worker_pool.h"
#include "store/run_store.h"

namespace colltest::server {

struct ServiceOptions {
  std::string backend = "cpu";                // resolved: "cpu", "cuda" or "hip", as users see it
  std::vector<colltest::v1::Device> devices;  // what this server may use
  // What the backend announced (its probe, the same as its workers' Init reply): what it runs.
  colltest::worker::v1::Capabilities capabilities;
  // The kernel plugins colltestd was given, loaded or refused (ListDevices lists them).
  std::vector<colltest::v1::KernelPlugin> kernel_plugins;
  uint64_t max_case_bytes = kDefaultMaxCaseBytes;
  bool allow_fault_injection = false;
  AuthConfig auth;  // no principals and no mutual TLS: no authentication
  std::string version;
  absl::Duration queue_poll = absl::Milliseconds(50);
  // The history database (not owned); null: the service keeps its own in memory (tests).
  store::RunStore* history_store = nullptr;
  colltest::v1::MachineIdentity machine;    // recorded with every run
  ExpectedBandwidth expected_busbw;         // the long health level's figures (tune dir)
  uint32_t max_active_runs_per_owner = 16;  // queued or running runs of one caller; 0: no limit
  uint32_t max_baselines_per_owner = 32;    // baselines one caller may own; 0: no limit
  Metrics* metrics = nullptr;               // not owned; null: no metrics
  const TuneTables* tune = nullptr;         // not owned; null: `auto` is UNSUPPORTED
  // Health checks one caller may start per minute (health_rate_limit.h); 0: no limit.
  uint32_t health_rate_per_caller = kDefaultHealthRatePerCaller;
  // A Sweep whose client reads nothing for this long is cancelled (a blocked send holds devices).
  absl::Duration stream_send_timeout = absl::Seconds(30);
  // Not owned; null: runs do not look for other processes on their devices (the cpu backend,
  // whose devices nobody else can use). Set: such runs are refused BUSY unless forced.
  DeviceUsersProbe* users_probe = nullptr;
  // Above 0: ranks sharing a GPU are time-sliced, with this kernel round trip (ServerLimits).
  double time_sliced_round_trip_us = 0;
};

// The variants a backend runs, as its capabilities announce them (ListDevices lists them): the
// four protocol variants everywhere, plus the NCCL/RCCL anchor and the dispatcher on GPUs.
std::vector<colltest::v1::Variant> VariantsFor(
    const colltest::worker::v1::Capabilities& capabilities);

class CollectiveTestService final : public colltest::v1::CollectiveTest::Service {
 public:
  // `pool` is not owned and must outlive the service.
  CollectiveTestService(ServiceOptions options, WorkerPool* pool);

  grpc::Status ListDevices(grpc::ServerContext* context,
                           const colltest::v1::ListDevicesRequest* request,
                           colltest::v1::ListDevicesResponse* response) override;
  grpc::Status Run(grpc::ServerContext* context, const colltest::v1::RunRequest* request,
                   colltest::v1::RunResult* response) override;
  grpc::Status Sweep(grpc::ServerContext* context, const colltest::v1::RunRequest* request,
                     grpc::ServerWriter<colltest::v1::SweepEvent>* writer) override;
  grpc::Status GetRun(grpc::ServerContext* context, const colltest::v1::GetRunRequest* request,
                      colltest::v1::RunResult* response) override;
  grpc::Status ListRuns(grpc::ServerContext* context, const colltest::v1::ListRunsRequest* request,
                        colltest::v1::ListRunsResponse* response) override;
  grpc::Status Cancel(grpc::ServerContext* context, const colltest::v1::CancelRequest* request,
                      colltest::v1::CancelResponse* response) override;
  grpc::Status Health(grpc::ServerContext* context, const colltest::v1::HealthRequest* request,
                      colltest::v1::HealthResponse* response) override;
  grpc::Status SetBaseline(grpc::ServerContext* context,
                           const colltest::v1::SetBaselineRequest* request,
                           colltest::v1::Baseline* response) override;
  grpc::Status ListBaselines(grpc::ServerContext* context,
                             const colltest::v1::ListBaselinesRequest* request,
                             colltest::v1::ListBaselinesResponse* response) override;
  grpc::Status Compare(grpc::ServerContext* context, const colltest::v1::CompareRequest* request,
                       colltest::v1::CompareResponse* response) override;

  // Call before grpc::Server::Shutdown so that queued and long runs return promptly.
  void BeginShutdown() { executor_.BeginShutdown(); }

 private:
  // A finished run, or FAILED_PRECONDITION naming `field`.
  absl::StatusOr<colltest::v1::RunResult> FinishedRun(const std::string& run_id,
                                                      absl::string_view field) const;

  const ServiceOptions options_;
  const Authorizer auth_;
  std::unique_ptr<store::RunStore> own_store_;  // when options_.history_store is null
  RunHistory history_;
  DeviceArbiter arbiter_;
  RunExecutor executor_;
  WorkerPool* const pool_;
  HealthChecker health_;
  HealthGate health_gate_;  // in front of health_
  SendWatchdog send_watchdog_;
};

}  // namespace colltest::server
