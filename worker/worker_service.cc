#include "worker/worker_service.h"

#include <string>

#include "worker/fault_plan.h"

namespace colltest::worker {

grpc::Status ToGrpcStatus(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

grpc::Status WorkerService::Init(grpc::ServerContext*, const v1::InitRequest* request,
                                 v1::InitReply* reply) {
  std::lock_guard<std::mutex> lock(mu_);
  absl::StatusOr<v1::InitReply> r = backend_->Init(*request);
  if (!r.ok()) return ToGrpcStatus(r.status());
  *reply = std::move(*r);
  return grpc::Status::OK;
}

grpc::Status WorkerService::Connect(grpc::ServerContext*, const v1::ConnectRequest* request,
                                    v1::ConnectReply*) {
  std::lock_guard<std::mutex> lock(mu_);
  return ToGrpcStatus(backend_->Connect(*request));
}

namespace {

v1::CaseRequest WithFault(const v1::CaseRequest& request, const std::string& fault) {
  v1::CaseRequest faulted = request;
  faulted.set_fault(fault);
  return faulted;
}

}  // namespace

grpc::Status WorkerService::RunCase(grpc::ServerContext*, const v1::CaseRequest* request,
                                    colltest::v1::RankResult* reply) {
  std::lock_guard<std::mutex> lock(mu_);
  absl::StatusOr<colltest::v1::RankResult> r =
      StandingTestFault().empty() || !request->fault().empty()
          ? backend_->RunCase(*request)
          : backend_->RunCase(WithFault(*request, StandingTestFault()));
  if (!r.ok()) return ToGrpcStatus(r.status());
  *reply = std::move(*r);
  return grpc::Status::OK;
}

grpc::Status WorkerService::Reset(grpc::ServerContext*, const v1::ResetRequest*, v1::ResetReply*) {
  std::lock_guard<std::mutex> lock(mu_);
  return ToGrpcStatus(backend_->Reset());
}

grpc::Status WorkerService::Shutdown(grpc::ServerContext*, const v1::ShutdownRequest*,
                                     v1::ShutdownReply*) {
  // The server cannot be shut down from inside one of its handlers; main() does it.
  if (!shutdown_->HasBeenNotified()) shutdown_->Notify();
  return grpc::Status::OK;
}

}  // namespace colltest::worker
