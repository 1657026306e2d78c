#include "fake_service.h"

#include <chrono>
#include <thread>

#include "grpcpp/server_builder.h"

namespace colltest::http::testing {

void FakeService::Record(const grpc::ServerContext& context,
                         const google::protobuf::Message& request) {
  absl::MutexLock lock(&mu_);
  metadata_.clear();
  for (const auto& [key, value] : context.client_metadata()) {
    metadata_.emplace(std::string(key.data(), key.size()), std::string(value.data(), value.size()));
  }
  last_request_ = request.SerializeAsString();
}

std::multimap<std::string, std::string> FakeService::last_metadata() const {
  absl::MutexLock lock(&mu_);
  return metadata_;
}

v1::ListDevicesResponse FakeService::Devices() {
  v1::ListDevicesResponse response;
  response.set_backend("cpu");
  response.set_max_world_size(8);
  response.add_variants(v1::VARIANT_LAMPORT);
  v1::Device* device = response.add_devices();
  device->set_index(0);
  device->set_name("cpu rank 0");
  device->set_memory_bytes(uint64_t{1} << 40);
  device->set_uuid("cpu-host-0");
  response.mutable_machine()->set_key("m-1");
  response.mutable_machine()->set_hostname("host");
  return response;
}

grpc::Status FakeService::ListDevices(grpc::ServerContext* context,
                                      const v1::ListDevicesRequest* request,
                                      v1::ListDevicesResponse* response) {
  Record(*context, *request);
  *response = Devices();
  return grpc::Status::OK;
}

grpc::Status FakeService::ListRuns(grpc::ServerContext* context, const v1::ListRunsRequest* request,
                                   v1::ListRunsResponse* response) {
  Record(*context, *request);
  v1::RunSummary* run = response->add_runs();
  run->set_run_id("r-1");
  run->set_state(v1::RUN_STATE_DONE);
  run->set_created_unix_ms(1764547200000);
  response->set_next_page_token("next");
  return grpc::Status::OK;
}

grpc::Status FakeService::GetRun(grpc::ServerContext* context, const v1::GetRunRequest* request,
                                 v1::RunResult* response) {
  Record(*context, *request);
  const std::string& id = request->run_id();
  if (id == "missing") return grpc::Status(grpc::StatusCode::NOT_FOUND, "run missing: no such run");
  if (id == "bad") return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, kBadRunMessage);
  if (id == "denied") {
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "GetRun needs role viewer");
  }
  if (id == "busy") return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "too many runs");
  if (id == "down") return grpc::Status(grpc::StatusCode::UNAVAILABLE, "shutting down");
  if (id == "slow") {
    // Until the caller's deadline (or cancel) ends the call.
    while (!context->IsCancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
  }
  if (id == "with-cases") {
    *response = RunWithCases(id);
    return grpc::Status::OK;
  }
  response->set_run_id(id);
  response->set_state(v1::RUN_STATE_DONE);
  response->set_owner("peer:ipv4:127.0.0.1:1");
  return grpc::Status::OK;
}

v1::RunResult FakeService::RunWithCases(const std::string& run_id) {
  v1::RunResult run;
  run.set_run_id(run_id);
  run.set_state(v1::RUN_STATE_DONE);
  run.mutable_spec()->set_world_size(2);
  run.set_backend("cpu");
  run.set_created_unix_ms(1764547200000);
  for (int i = 0; i < 3; ++i) {
    v1::CaseResult* one = run.add_cases();
    one->set_m(1 << i);
    one->set_status(v1::CASE_STATUS_OK);
    one->set_message(R"(a "quoted" message)");
    one->add_ranks()->set_rank(i);
  }
  return run;
}

grpc::Status FakeService::Sweep(grpc::ServerContext* context, const v1::RunRequest* request,
                                grpc::ServerWriter<v1::SweepEvent>* writer) {
  Record(*context, *request);
  const std::string& label = request->spec().label();
  if (label == "refuse") {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, kRefusedSweepMessage);
  }
  v1::SweepEvent event;
  event.set_run_id("r-7");
  if (label == "slow") {
    // One progress event every 20 ms for up to 10 s, unless the call is cancelled.
    for (int i = 0; i < 500 && !context->IsCancelled(); ++i) {
      event.mutable_progress()->set_done(i);
      writer->Write(event);
      sweep_streaming = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    sweep_cancelled = context->IsCancelled();
    return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
  }
  if (label == "quiet") {
    // One event, then nothing for up to 10 s (a long case), unless the call is cancelled.
    event.mutable_progress()->set_total(1);
    writer->Write(event);
    sweep_streaming = true;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!context->IsCancelled() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    sweep_cancelled = context->IsCancelled();
    return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
  }
  event.mutable_progress()->set_total(1);
  writer->Write(event);
  if (label == "fail-late") return grpc::Status(grpc::StatusCode::ABORTED, "worker died");
  event.mutable_result()->set_m(64);
  event.mutable_result()->set_status(v1::CASE_STATUS_OK);
  writer->Write(event);
  event.mutable_summary()->set_run_id("r-7");
  event.mutable_summary()->set_state(v1::RUN_STATE_DONE);
  writer->Write(event);
  return grpc::Status::OK;
}

grpc::Status FakeService::Cancel(grpc::ServerContext* context, const v1::CancelRequest* request,
                                 v1::CancelResponse* response) {
  Record(*context, *request);
  response->set_state(v1::RUN_STATE_RUNNING);
  return grpc::Status::OK;
}

grpc::Status FakeService::Health(grpc::ServerContext* context, const v1::HealthRequest* request,
                                 v1::HealthResponse* response) {
  Record(*context, *request);
  if (request->devices_size() == 1 && request->devices(0) == 99) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!context->IsCancelled() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    health_cancelled = context->IsCancelled();
    return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
  }
  response->set_status(v1::CASE_STATUS_OK);
  response->set_message("all ranks and pairs OK");
  return grpc::Status::OK;
}

grpc::Status FakeService::SetBaseline(grpc::ServerContext* context,
                                      const v1::SetBaselineRequest* request,
                                      v1::Baseline* response) {
  Record(*context, *request);
  response->set_run_id(request->run_id());
  response->set_name(request->name().empty() ? "default" : request->name());
  return grpc::Status::OK;
}

grpc::Status FakeService::ListBaselines(grpc::ServerContext* context,
                                        const v1::ListBaselinesRequest* request,
                                        v1::ListBaselinesResponse* response) {
  Record(*context, *request);
  response->add_baselines()->set_machine_key(request->machine_key());
  return grpc::Status::OK;
}

grpc::Status FakeService::Compare(grpc::ServerContext* context, const v1::CompareRequest* request,
                                  v1::CompareResponse* response) {
  Record(*context, *request);
  response->set_run_a(request->run_a());
  response->set_run_b(request->run_b());
  response->set_threshold(request->threshold());
  return grpc::Status::OK;
}

InProcessService::InProcessService() {
  grpc::ServerBuilder builder;
  builder.RegisterService(&service);
  server = builder.BuildAndStart();
  channel = server->InProcessChannel(grpc::ChannelArguments());
}

InProcessService::~InProcessService() { server->Shutdown(); }

}  // namespace colltest::http::testing
