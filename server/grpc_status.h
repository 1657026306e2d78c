// colltestd's handlers return absl::Status as grpc::Status through the conversion every room
// shares (common/grpc_status.h); this header keeps the handlers' unqualified name for it.
#pragma once

#include "common/grpc_status.h"

namespace colltest::server {

using common::ToGrpcStatus;

}  // namespace colltest::server
