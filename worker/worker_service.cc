#include "worker/worker_service.h"

#include "common/grpc_status.h"

namespace colltest::worker {

using common::ToGrpcStatus;

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

grpc::Status WorkerService::RunCase(grpc::ServerContext*, const v1::CaseRequest* request,
                                    colltest::v1::RankResult* reply) {
  std::lock_guard<std::mutex> lock(mu_);
  absl::StatusOr<colltest::v1::RankResult> r = backend_->RunCase(*request);
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
