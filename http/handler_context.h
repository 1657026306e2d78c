// What the gateway's request handlers share: the options, the stub of the in-process channel, and
// the registry of calls in flight (cancelled when the gateway stops), the limit on reads of whole
// runs, the cap on requests reading a body, the body deadlines' watchdog and the rules for
// browsers.
#pragma once

#include "colltest/v1/colltest.grpc.pb.h"
#include "http/call_registry.h"
#include "http/concurrency_limit.h"
#include "http/gateway_options.h"
#include "http/origin_check.h"
#include "http/read_deadline.h"
#include "http/request_admission.h"

namespace colltest::http {

struct HandlerContext {
  const GatewayOptions* options = nullptr;
  colltest::v1::CollectiveTest::Stub* stub = nullptr;
  CallRegistry* calls = nullptr;
  ConcurrencyLimit* run_reads = nullptr;  // GET /api/v1/runs/{run_id} served at once
  BodyAdmission* admission = nullptr;     // requests reading a body at once
  ReadDeadlines* deadlines = nullptr;     // of bodies
  const BrowserPolicy* browser = nullptr;
};

}  // namespace colltest::http
