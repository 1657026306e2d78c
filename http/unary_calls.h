// The API's unary endpoints: one HTTP request becomes one call of the in-process service, its
// reply (or its status) one JSON reply.
#pragma once

#include "http/handler_context.h"
#include "http/routes.h"

struct mg_connection;

namespace colltest::http {

// Serves `match` (a found API endpoint other than kSweep). Returns the HTTP status sent.
int ServeUnary(mg_connection* conn, const RouteMatch& match, const HandlerContext& handlers);

}  // namespace colltest::http
