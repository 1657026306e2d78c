// What the gateway's request handlers share: the options, the stub of the in-process channel, and
// the registry of calls in flight (cancelled when the gateway stops).
#pragma once

#include "colltest/v1/colltest.grpc.pb.h"
#include "http/call_registry.h"
#include "http/gateway.h"

namespace colltest::http {

struct HandlerContext {
  const GatewayOptions* options = nullptr;
  colltest::v1::CollectiveTest::Stub* stub = nullptr;
  CallRegistry* calls = nullptr;
};

}  // namespace colltest::http
