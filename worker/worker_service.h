// The worker's gRPC face: forwards the internal Worker protocol to its backend, one call at a
// time (a rank runs one case at a time).
#pragma once

#include <memory>
#include <mutex>

#include "absl/synchronization/notification.h"
#include "colltest/v1/worker.grpc.pb.h"
#include "worker/backend.h"

namespace colltest::worker {

class WorkerService final : public colltest::worker::v1::Worker::Service {
 public:
  WorkerService(std::unique_ptr<Backend> backend, absl::Notification* shutdown)
      : backend_(std::move(backend)), shutdown_(shutdown) {}

  grpc::Status Init(grpc::ServerContext*, const v1::InitRequest* request,
                    v1::InitReply* reply) override;
  grpc::Status Connect(grpc::ServerContext*, const v1::ConnectRequest* request,
                       v1::ConnectReply* reply) override;
  grpc::Status RunCase(grpc::ServerContext*, const v1::CaseRequest* request,
                       colltest::v1::RankResult* reply) override;
  grpc::Status Reset(grpc::ServerContext*, const v1::ResetRequest*, v1::ResetReply*) override;
  grpc::Status Shutdown(grpc::ServerContext*, const v1::ShutdownRequest*,
                        v1::ShutdownReply*) override;

  Backend& backend() { return *backend_; }

 private:
  std::mutex mu_;
  std::unique_ptr<Backend> backend_;
  absl::Notification* shutdown_;
};

}  // namespace colltest::worker
