#include "server/service.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/grpc_status.h"

namespace colltest::server {

namespace v1 = ::colltest::v1;

namespace {

ServerLimits LimitsFor(const ServiceOptions& options) {
  ServerLimits limits;
  limits.backend = options.backend;
  for (const v1::Device& d : options.devices) limits.devices.push_back(d.index());
  std::sort(limits.devices.begin(), limits.devices.end());
  limits.max_case_bytes = options.max_case_bytes;
  limits.allow_fault_injection = options.allow_fault_injection;
  return limits;
}

absl::Status CheckRunId(const std::string& run_id) {
  if (run_id.empty()) return absl::InvalidArgumentError("run_id: empty");
  return absl::OkStatus();
}

class UnaryObserver final : public RunObserver {
 public:
  explicit UnaryObserver(grpc::ServerContext* context) : context_(context) {}
  bool ClientGone() override { return context_->IsCancelled(); }

 private:
  grpc::ServerContext* context_;
};

// Streams progress and results; a failed write means the client is gone, which cancels the run.
class StreamObserver final : public RunObserver {
 public:
  StreamObserver(grpc::ServerContext* context, grpc::ServerWriter<v1::SweepEvent>* writer)
      : context_(context), writer_(writer) {}

  bool ClientGone() override { return write_failed_ || context_->IsCancelled(); }

  void OnQueued(const std::string& run_id, uint32_t runs_ahead, uint32_t total) override {
    Progress(run_id, v1::RUN_STATE_QUEUED, 0, total, runs_ahead);
  }
  void OnStarted(const std::string& run_id, uint32_t total) override {
    Progress(run_id, v1::RUN_STATE_RUNNING, 0, total, 0);
  }
  void OnCase(const std::string& run_id, const v1::CaseResult& result, uint32_t done,
              uint32_t total) override {
    v1::SweepEvent event;
    event.set_run_id(run_id);
    *event.mutable_result() = result;
    Write(event);
    Progress(run_id, v1::RUN_STATE_RUNNING, done, total, 0);
  }

  bool Write(const v1::SweepEvent& event) {
    if (!write_failed_ && !writer_->Write(event)) write_failed_ = true;
    return !write_failed_;
  }

 private:
  void Progress(const std::string& run_id, v1::RunState state, uint32_t done, uint32_t total,
                uint32_t runs_ahead) {
    v1::SweepEvent event;
    event.set_run_id(run_id);
    v1::SweepProgress* p = event.mutable_progress();
    p->set_state(state);
    p->set_done(done);
    p->set_total(total);
    p->set_queue_position(runs_ahead);
    Write(event);
  }

  grpc::ServerContext* context_;
  grpc::ServerWriter<v1::SweepEvent>* writer_;
  bool write_failed_ = false;
};

}  // namespace

std::vector<v1::Variant> VariantsFor(const std::string& backend) {
  std::vector<v1::Variant> variants = {v1::VARIANT_ONE_STAGE, v1::VARIANT_TWO_KERNEL,
                                       v1::VARIANT_LAMPORT, v1::VARIANT_LAMPORT_TB};
  if (backend != "cpu") {
    variants.push_back(v1::VARIANT_NCCL);
    variants.push_back(v1::VARIANT_AUTO);
  }
  return variants;
}

CollectiveTestService::CollectiveTestService(ServiceOptions options, WorkerPool* pool)
    : options_(std::move(options)),
      auth_(options_.token),
      history_(options_.history_capacity),
      arbiter_(options_.queue_poll),
      executor_(LimitsFor(options_), pool, &history_, &arbiter_, options_.metrics, options_.tune),
      pool_(pool),
      health_(&executor_, pool, options_.backend, options_.variants) {}

grpc::Status CollectiveTestService::ListDevices(grpc::ServerContext* context,
                                                const v1::ListDevicesRequest* request,
                                                v1::ListDevicesResponse* response) {
  if (absl::Status s = auth_.Check(*context); !s.ok()) return ToGrpcStatus(s);
  response->set_backend(options_.backend);
  for (const v1::Device& d : options_.devices) {
    v1::Device* out = response->add_devices();
    *out = d;
    if (out->backend().empty()) out->set_backend(options_.backend);
  }
  for (v1::Variant v : options_.variants) response->add_variants(v);
  response->set_max_world_size(static_cast<uint32_t>(options_.devices.size()));
  response->set_version(options_.version);
  for (v1::GroupHealth& g : pool_->GroupStates()) *response->add_groups() = std::move(g);
  return grpc::Status::OK;
}

grpc::Status CollectiveTestService::Health(grpc::ServerContext* context,
                                           const v1::HealthRequest* request,
                                           v1::HealthResponse* response) {
  if (absl::Status s = auth_.Check(*context); !s.ok()) return ToGrpcStatus(s);
  UnaryObserver observer(context);
  absl::StatusOr<v1::HealthResponse> health = health_.Check(*request, observer);
  if (!health.ok()) return ToGrpcStatus(health.status());
  if (options_.metrics != nullptr) options_.metrics->ObserveHealthCheck(health->status());
  *response = *std::move(health);
  return grpc::Status::OK;
}

grpc::Status CollectiveTestService::Run(grpc::ServerContext* context, const v1::RunRequest* request,
                                        v1::RunResult* response) {
  if (absl::Status s = auth_.Check(*context); !s.ok()) return ToGrpcStatus(s);
  UnaryObserver observer(context);
  absl::StatusOr<v1::RunResult> run = executor_.Execute(request->spec(), observer);
  if (!run.ok()) return ToGrpcStatus(run.status());
  *response = *std::move(run);
  return grpc::Status::OK;
}

grpc::Status CollectiveTestService::Sweep(grpc::ServerContext* context,
                                          const v1::RunRequest* request,
                                          grpc::ServerWriter<v1::SweepEvent>* writer) {
  if (absl::Status s = auth_.Check(*context); !s.ok()) return ToGrpcStatus(s);
  StreamObserver observer(context, writer);
  absl::StatusOr<v1::RunResult> run = executor_.Execute(request->spec(), observer);
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
  if (absl::Status s = auth_.Check(*context); !s.ok()) return ToGrpcStatus(s);
  if (absl::Status s = CheckRunId(request->run_id()); !s.ok()) return ToGrpcStatus(s);
  absl::StatusOr<v1::RunResult> run = history_.Get(request->run_id());
  if (!run.ok()) return ToGrpcStatus(run.status());
  *response = *std::move(run);
  return grpc::Status::OK;
}

grpc::Status CollectiveTestService::ListRuns(grpc::ServerContext* context,
                                             const v1::ListRunsRequest* request,
                                             v1::ListRunsResponse* response) {
  if (absl::Status s = auth_.Check(*context); !s.ok()) return ToGrpcStatus(s);
  for (v1::RunSummary& s : history_.List(request->limit())) *response->add_runs() = std::move(s);
  return grpc::Status::OK;
}

grpc::Status CollectiveTestService::Cancel(grpc::ServerContext* context,
                                           const v1::CancelRequest* request,
                                           v1::CancelResponse* response) {
  if (absl::Status s = auth_.Check(*context); !s.ok()) return ToGrpcStatus(s);
  if (absl::Status s = CheckRunId(request->run_id()); !s.ok()) return ToGrpcStatus(s);
  absl::StatusOr<v1::RunState> state = executor_.Cancel(request->run_id());
  if (!state.ok()) return ToGrpcStatus(state.status());
  response->set_state(*state);
  return grpc::Status::OK;
}

}  // namespace colltest::server
