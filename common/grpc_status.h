// The edge between absl::Status, used inside every program, and grpc::Status, which gRPC handlers
// return and stubs hand back. Both follow google.rpc.Code, so a code carries over one to one and
// absl::StatusCodeToString prints gRPC's name for it; the message is kept verbatim.
#pragma once

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace colltest::common {

// What a handler returns for `status`.
grpc::Status ToGrpcStatus(const absl::Status& status);
// What a call's answer `status` is inside the program.
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace colltest::common
