#include "server/grpc_status.h"

#include <string>

namespace colltest::server {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  // Both follow google.rpc.Code, so the numeric values carry over one to one.
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

}  // namespace colltest::server
