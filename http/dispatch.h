// The entry point of every request on the port: the route, then its handler.
#pragma once

#include "http/handler_context.h"

struct mg_connection;

namespace colltest::http {

// Answers the request on `conn`. Returns the HTTP status sent (CivetWeb's begin_request result).
int HandleRequest(mg_connection* conn, const HandlerContext& handlers);

}  // namespace colltest::http
