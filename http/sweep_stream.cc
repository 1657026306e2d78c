#include "http/sweep_stream.h"

#include <cstddef>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "http/forwarding.h"
#include "http/json_codec.h"
#include "http/reply.h"
#include "http/request_body.h"
#include "http/run_json.h"
#include "http/run_reply.h"
#include "http/status_map.h"
#include "http/stream_heartbeat.h"

namespace colltest::http {
namespace {

namespace v1 = ::colltest::v1;

// Writes one event as one line. The last event's summary is the whole run: written case by case
// (run_json.h), like GET /api/v1/runs/ID, and its memory given back afterwards.
bool WriteEvent(NdjsonStream& stream, v1::SweepEvent& event) {
  if (!event.has_summary()) return stream.WriteLine(ToJson(event));
  size_t sent_bytes = 0;
  const bool sent = stream.WriteLineInPieces([&](JsonSink sink) {
    return WriteSummaryEventJson(std::move(event), [&](absl::string_view piece) {
      sent_bytes += piece.size();
      return sink(piece);
    });
  });
  TrimHeapAfter(sent_bytes);
  return sent;
}

// Writes the events after the first until the stream ends or the client goes away; then the
// stream's error line, if any. No deadline: a sweep runs as long as its cases take. Between
// events the heartbeat finds out whether the client is still there.
void StreamEvents(NdjsonStream& stream, grpc::ClientContext& context,
                  grpc::ClientReader<v1::SweepEvent>& reader, v1::SweepEvent& event) {
  bool client_reading = false;
  {
    const StreamHeartbeat heartbeat(stream, context);
    client_reading = WriteEvent(stream, event);
    while (client_reading && reader.Read(&event)) client_reading = WriteEvent(stream, event);
    // A failed beat cancelled the call, which ended the reads.
    client_reading = client_reading && !heartbeat.client_gone();
  }
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
