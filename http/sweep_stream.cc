#include "http/sweep_stream.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "http/forwarding.h"
#include "http/json_codec.h"
#include "http/reply.h"
#include "http/request_body.h"
#include "http/status_map.h"

namespace colltest::http {
namespace {

namespace v1 = ::colltest::v1;

// Writes the events after the first until the stream ends or the client goes away; then the
// stream's error line, if any. No deadline: a sweep runs as long as its cases take.
void StreamEvents(NdjsonStream& stream, grpc::ClientContext& context,
                  grpc::ClientReader<v1::SweepEvent>& reader, v1::SweepEvent& event) {
  bool client_reading = stream.WriteLine(ToJson(event));
  while (client_reading && reader.Read(&event)) client_reading = stream.WriteLine(ToJson(event));
  if (!client_reading) {
    // Nobody reads the results: cancel the call, and with it the run. The events still queued
    // are drained so that Finish returns.
    context.TryCancel();
    while (reader.Read(&event)) {
    }
    reader.Finish();
    return;
  }
  const grpc::Status status = reader.Finish();
  if (!status.ok()) {
    stream.WriteLine(absl::StrCat("{\"error\":", ErrorJson(common::FromGrpcStatus(status)), "}"));
  }
  stream.End();
}

}  // namespace

int ServeSweep(mg_connection* conn, const RouteMatch& match, const HandlerContext& handlers) {
  v1::RunRequest request;
  if (absl::Status built = BuildRequestMessage(conn, match.path_params, &request); !built.ok()) {
    return SendError(conn, built);
  }
  grpc::ClientContext context;
  if (absl::Status forwarded =
          Forward(CallerOf(conn), handlers.options->forwarding_secret, &context);
      !forwarded.ok()) {
    return SendError(conn, forwarded);
  }
  const CallRegistry::Scope in_flight(handlers.calls, &context);
  std::unique_ptr<grpc::ClientReader<v1::SweepEvent>> reader =
      handlers.stub->Sweep(&context, request);
  v1::SweepEvent event;
  // The status line waits for the first event: a refused request (bad spec, quota, role) is then
  // an ordinary error reply with its own HTTP status.
  if (!reader->Read(&event)) {
    const grpc::Status status = reader->Finish();
    if (!status.ok()) return SendError(conn, common::FromGrpcStatus(status));
    NdjsonStream empty(conn);
    empty.Start();
    empty.End();
    return 200;
  }
  NdjsonStream stream(conn);
  stream.Start();
  StreamEvents(stream, context, *reader, event);
  return 200;
}

}  // namespace colltest::http
