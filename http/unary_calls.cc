#include "http/unary_calls.h"

#include <chrono>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/grpc_status.h"
#include "http/concurrency_limit.h"
#include "http/forwarding.h"
#include "http/hangup_watch.h"
#include "http/json_codec.h"
#include "http/reply.h"
#include "http/request_body.h"
#include "http/run_reply.h"
#include "http/status_map.h"

namespace colltest::http {
namespace {

namespace v1 = ::colltest::v1;
using Stub = v1::CollectiveTest::Stub;

template <typename Request, typename Response>
using Method = grpc::Status (Stub::*)(grpc::ClientContext*, const Request&, Response*);

// Health may run a case on every device and pair for minutes; the others answer from memory.
enum class Deadline { kApi, kNone };

// Writes a call's reply; returns the HTTP status sent.
template <typename Response>
using ReplyWriter = int (*)(mg_connection*, Response);

// The reply as one JSON document, built whole: every reply but a run's is small.
template <typename Response>
int SendWholeReply(mg_connection* conn, Response response) {
  return SendJson(conn, 200, ToJson(response));
}

// One call of `method`: the request from the HTTP request, the caller forwarded, the reply.
template <typename Request, typename Response>
int Call(mg_connection* conn, const RouteMatch& match, const HandlerContext& handlers,
         Method<Request, Response> method, Deadline deadline,
         ReplyWriter<Response> send_reply = &SendWholeReply<Response>) {
  Request request;
  if (absl::Status built = BuildRequestMessage(conn, handlers, match.path_params, &request);
      !built.ok()) {
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
  grpc::Status status;
  {
    // A call without a deadline may wait for minutes: a client that hangs up meanwhile cancels it.
    std::optional<HangupWatch> hangup;
    if (deadline == Deadline::kNone) hangup.emplace(conn, context);
    status = (handlers.stub->*method)(&context, request, &response);
  }
  if (!status.ok()) return SendError(conn, common::FromGrpcStatus(status));
  return send_reply(conn, std::move(response));
}

// GetRun, one of at most options.max_run_reads at once (run_reply.h).
int CallGetRun(mg_connection* conn, const RouteMatch& match, const HandlerContext& handlers) {
  const absl::Duration wait = absl::Milliseconds(handlers.options->run_read_wait_ms);
  const std::optional<ConcurrencyLimit::Permit> permit = handlers.run_reads->Acquire(wait);
  if (!permit.has_value()) {
    return SendError(conn, RunReadsBusyError(handlers.run_reads->limit(), wait),
                     {{"Retry-After", kRunReadsRetryAfterSeconds}});
  }
  return Call(conn, match, handlers, &Stub::GetRun, Deadline::kApi, &SendRunReply);
}

}  // namespace

int ServeUnary(mg_connection* conn, const RouteMatch& match, const HandlerContext& handlers) {
  switch (match.endpoint) {
    case Endpoint::kListDevices:
      return Call(conn, match, handlers, &Stub::ListDevices, Deadline::kApi);
    case Endpoint::kListRuns:
      return Call(conn, match, handlers, &Stub::ListRuns, Deadline::kApi);
    case Endpoint::kGetRun:
      return CallGetRun(conn, match, handlers);
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
