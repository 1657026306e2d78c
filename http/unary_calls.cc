#include "http/unary_calls.h"

#include <chrono>

#include "absl/status/status.h"
#include "common/grpc_status.h"
#include "http/forwarding.h"
#include "http/json_codec.h"
#include "http/reply.h"
#include "http/request_body.h"
#include "http/status_map.h"

namespace colltest::http {
namespace {

namespace v1 = ::colltest::v1;
using Stub = v1::CollectiveTest::Stub;

template <typename Request, typename Response>
using Method = grpc::Status (Stub::*)(grpc::ClientContext*, const Request&, Response*);

// Health may run a case on every device and pair for minutes; the others answer from memory.
enum class Deadline { kApi, kNone };

// One call of `method`: the request from the HTTP request, the caller forwarded, the reply.
template <typename Request, typename Response>
int Call(mg_connection* conn, const RouteMatch& match, const HandlerContext& handlers,
         Method<Request, Response> method, Deadline deadline) {
  Request request;
  if (absl::Status built = BuildRequestMessage(conn, match.path_params, &request); !built.ok()) {
    return SendError(conn, built);
  }
  grpc::ClientContext context;
  if (absl::Status forwarded =
          Forward(CallerOf(conn), handlers.options->forwarding_secret, &context);
      !forwarded.ok()) {
    return SendError(conn, forwarded);
  }
  if (deadline == Deadline::kApi) {
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::milliseconds(handlers.options->api_deadline_ms));
  }
  const CallRegistry::Scope in_flight(handlers.calls, &context);
  Response response;
  const grpc::Status status = (handlers.stub->*method)(&context, request, &response);
  if (!status.ok()) return SendError(conn, common::FromGrpcStatus(status));
  return SendJson(conn, 200, ToJson(response));
}

}  // namespace

int ServeUnary(mg_connection* conn, const RouteMatch& match, const HandlerContext& handlers) {
  switch (match.endpoint) {
    case Endpoint::kListDevices:
      return Call(conn, match, handlers, &Stub::ListDevices, Deadline::kApi);
    case Endpoint::kListRuns:
      return Call(conn, match, handlers, &Stub::ListRuns, Deadline::kApi);
    case Endpoint::kGetRun:
      return Call(conn, match, handlers, &Stub::GetRun, Deadline::kApi);
    case Endpoint::kCancel:
      return Call(conn, match, handlers, &Stub::Cancel, Deadline::kApi);
    case Endpoint::kHealth:
      return Call(conn, match, handlers, &Stub::Health, Deadline::kNone);
    case Endpoint::kListBaselines:
      return Call(conn, match, handlers, &Stub::ListBaselines, Deadline::kApi);
    case Endpoint::kSetBaseline:
      return Call(conn, match, handlers, &Stub::SetBaseline, Deadline::kApi);
    case Endpoint::kCompare:
      return Call(conn, match, handlers, &Stub::Compare, Deadline::kApi);
    default:
      return SendError(conn, absl::InternalError("not a unary endpoint"));
  }
}

}  // namespace colltest::http
