// The edge between absl::Status, used everywhere inside colltestd, and grpc::Status, which only
// the handlers return.
#pragma once

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace colltest::server {

grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace colltest::server
