// POST /api/v1/runs: a Sweep streamed as newline-delimited JSON (docs/http-api.md). The run lasts
// as long as the client reads, like a gRPC Sweep: when the client goes away, the call is
// cancelled and so is the run, noticed within about half a second even between events
// (stream_heartbeat.h).
#pragma once

#include "http/handler_context.h"
#include "http/routes.h"

struct mg_connection;

namespace colltest::http {

// Serves the sweep of `match`. A call refused before its first event is an ordinary error reply;
// after that the reply is 200 and an error ends the stream with {"error": {...}}. Returns the
// HTTP status sent.
int ServeSweep(mg_connection* conn, const RouteMatch& match, const HandlerContext& handlers);

}  // namespace colltest::http
