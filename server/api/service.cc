#include "server/api/service.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/grpc_status.h"
#include "server/api/stream_observer.h"
#include "server/runs/query_validation.h"

namespace colltest::server {

using common::ToGrpcStatus;

namespace v1 = ::colltest::v1;

namespace {

ServerLimits LimitsFor(const ServiceOptions& options) {
  ServerLimits limits;
  limits.backend = options.backend;
  for (const v1::Device& d : options.devices) limits.devices.push_back(d.index());
  std::sort(limits.devices.begin(), limits.devices.end());
  limits.max_case_bytes = options.max_case_bytes;
  limits.allow_fault_injection = options.allow_fault_injection;
  limits.max_active_runs_per_owner = options.max_active_runs_per_owner;
  for (const v1::Device& d : options.devices) limits.placement.Place(d.index(), d.physical_index());
  limits.time_sliced_round_trip_us = options.time_sliced_round_trip_us;
  for (const v1::KernelPlugin& p : options.kernel_plugins) {
    if (p.loaded()) limits.kernel_plugins.push_back(p);
  }
  return limits;
}

// The call's deadline; InfiniteFuture when the client set none (gRPC says time_point::max()).
absl::Time CallDeadline(const grpc::ServerContext& context) {
  const auto deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(deadline);
}

std::unique_ptr<store::RunStore> OpenMemoryStore() {
  absl::StatusOr<std::unique_ptr<store::RunStore>> opened = store::RunStore::Open(":memory:");
  // An in-memory database fails to open only when the process is out of memory.
  if (!opened.ok()) std::abort();
  return *std::move(opened);
}

}  // namespace

std::vector<v1::Variant> VariantsFor(const colltest::worker::v1::Capabilities& capabilities) {
  std::vector<v1::Variant> variants;
  for (int v : capabilities.variants()) variants.push_back(static_cast<v1::Variant>(v));
  return variants;
}

CollectiveTestService::CollectiveTestService(ServiceOptions options, WorkerPool* pool)
    : options_(std::move(options)),
      auth_(options_.auth),
      own_store_(options_.history_store != nullptr ? nullptr : OpenMemoryStore()),
      history_(options_.history_store != nullptr ? options_.history_store : own_store_.get(),
               options_.machine, options_.time_sliced_round_trip_us > 0, options_.metrics),
      arbiter_(options_.queue_poll),
      executor_(LimitsFor(options_), pool, &history_, &arbiter_, options_.metrics, options_.tune,
                options_.users_probe),
      pool_(pool),
      health_(&executor_, options_.capabilities, options_.machine, options_.expected_busbw),
      health_gate_(
          [this](const v1::HealthRequest& request, RunObserver& observer,
                 const std::string& owner) { return health_.Check(request, observer, owner); },
          [this](const std::vector<uint32_t>& devices) { return executor_.Holders(devices); },
          HealthGate::Options{options_.machine, executor_.limits().devices,
                              options_.health_rate_per_caller}),
      send_watchdog_(options_.stream_send_timeout) {}

grpc::Status CollectiveTestService::ListDevices(grpc::ServerContext* context,
                                                const v1::ListDevicesRequest* request,
                                                v1::ListDevicesResponse* response) {
  if (auto caller = auth_.Require(*context, Role::kViewer, "ListDevices"); !caller.ok()) {
    return ToGrpcStatus(caller.status());
  }
  response->set_backend(options_.backend);
  for (const v1::Device& d : options_.devices) {
    v1::Device* out = response->add_devices();
    *out = d;
    if (out->backend().empty()) out->set_backend(options_.backend);
  }
  for (v1::Variant v : VariantsFor(options_.capabilities)) response->add_variants(v);
  response->set_max_world_size(static_cast<uint32_t>(options_.devices.size()));
  response->set_version(options_.version);
  for (v1::GroupHealth& g : executor_.GroupsWithLastHangs()) *response->add_groups() = std::move(g);
  *response->mutable_machine() = options_.machine;
  for (const v1::KernelPlugin& p : options_.kernel_plugins) *response->add_kernel_plugins() = p;
  return grpc::Status::OK;
}

grpc::Status CollectiveTestService::Health(grpc::ServerContext* context,
                                           const v1::HealthRequest* request,
                                           v1::HealthResponse* response) {
  auto caller = auth_.Require(*context, RoleToRun(request->fault()),
                              request->fault().empty() ? "Health" : "Health with a fault");
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  UnaryObserver observer(context);
  absl::StatusOr<v1::HealthResponse> health =
      health_gate_.Check(*request, observer, CallDeadline(*context), caller->name);
  if (!health.ok()) return ToGrpcStatus(health.status());
  // Metrics ignores cached and BUSY answers and planted faults: only a check that ran, as the
  // machine is, observes the machine.
  if (options_.metrics != nullptr) {
    options_.metrics->ObserveHealth(*health, !request->fault().empty());
  }
  *response = *std::move(health);
  return grpc::Status::OK;
}

grpc::Status CollectiveTestService::Run(grpc::ServerContext* context, const v1::RunRequest* request,
                                        v1::RunResult* response) {
  auto caller = auth_.Require(*context, RoleToRun(request->spec().fault()),
                              request->spec().fault().empty() ? "Run" : "Run with a fault");
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  UnaryObserver observer(context);
  absl::StatusOr<v1::RunResult> run = executor_.Execute(request->spec(), observer, caller->name);
  if (!run.ok()) return ToGrpcStatus(run.status());
  *response = *std::move(run);
  return grpc::Status::OK;
}

grpc::Status CollectiveTestService::Sweep(grpc::ServerContext* context,
                                          const v1::RunRequest* request,
                                          grpc::ServerWriter<v1::SweepEvent>* writer) {
  auto caller = auth_.Require(*context, RoleToRun(request->spec().fault()),
                              request->spec().fault().empty() ? "Sweep" : "Sweep with a fault");
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  StreamObserver observer(context, writer, &send_watchdog_);
  absl::StatusOr<v1::RunResult> run = executor_.Execute(request->spec(), observer, caller->name);
  if (!run.ok()) return ToGrpcStatus(run.status());
  v1::SweepEvent summary;
  summary.set_run_id(run->run_id());
  *summary.mutable_summary() = *std::move(run);
  observer.Write(summary);
  return grpc::Status::OK;
}

grpc::Status CollectiveTestService::GetRun(grpc::ServerContext* context,
                                           const v1::GetRunRequest* request,
                                           v1::RunResult* response) {
  if (auto caller = auth_.Require(*context, Role::kViewer, "GetRun"); !caller.ok()) {
    return ToGrpcStatus(caller.status());
  }
  if (absl::Status s = ValidateRunId(request->run_id()); !s.ok()) return ToGrpcStatus(s);
  absl::StatusOr<v1::RunResult> run = history_.Get(request->run_id());
  if (!run.ok()) return ToGrpcStatus(run.status());
  *response = *std::move(run);
  return grpc::Status::OK;
}

grpc::Status CollectiveTestService::ListRuns(grpc::ServerContext* context,
                                             const v1::ListRunsRequest* request,
                                             v1::ListRunsResponse* response) {
  if (auto caller = auth_.Require(*context, Role::kViewer, "ListRuns"); !caller.ok()) {
    return ToGrpcStatus(caller.status());
  }
  if (absl::Status s = ValidateListRuns(*request); !s.ok()) return ToGrpcStatus(s);
  absl::StatusOr<v1::ListRunsResponse> runs = history_.List(*request);
  if (!runs.ok()) return ToGrpcStatus(runs.status());
  *response = *std::move(runs);
  return grpc::Status::OK;
}

grpc::Status CollectiveTestService::Cancel(grpc::ServerContext* context,
                                           const v1::CancelRequest* request,
                                           v1::CancelResponse* response) {
  auto caller = auth_.Require(*context, Role::kRunner, "Cancel");
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  if (absl::Status s = ValidateRunId(request->run_id()); !s.ok()) return ToGrpcStatus(s);
  absl::StatusOr<std::string> owner = history_.Owner(request->run_id());
  if (!owner.ok()) return ToGrpcStatus(owner.status());
  if (absl::Status s = CheckMayCancel(*caller, request->run_id(), *owner); !s.ok()) {
    return ToGrpcStatus(s);
  }
  absl::StatusOr<v1::RunState> state = executor_.Cancel(request->run_id());
  if (!state.ok()) return ToGrpcStatus(state.status());
  response->set_state(*state);
  return grpc::Status::OK;
}

}  // namespace colltest::server
