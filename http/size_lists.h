// POST /api/v1/sizes:parse: the list fields of a SweepSpec read in the CLI's grammar
// (common::ParseList: "1,8,64", "8..128:x4", "1:64:x4"), so that the dashboard sends the user's
// text as typed and every client reads a list alike; the gateway has no grammar of its own.
// The body maps proto field names to their text, {"m": "1:64:x4", "n": "1024"}; the reply maps
// the same names to the lists, {"m": [1, 4, 16, 64], "n": [1024]}. Nothing is called, run or
// stored: the server's own checks of the values (m <= 65536, ...) still come with the run.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "http/handler_context.h"

struct mg_connection;

namespace colltest::http {

// The reply's JSON for the request body `body` (empty: {}), or INVALID_ARGUMENT whose message
// starts with the field's name: a name that is no repeated uint32 field of SweepSpec, a value
// that is not a string, or text the grammar refuses (its message, which names the limit: "m: more
// than 4096 values (range '1:100000:+1'), the limit is 4096"). Fields are read in name order; the
// first refused one is the error.
absl::StatusOr<std::string> ExpandSizeLists(absl::string_view body);

// Serves the endpoint: the body read under the gateway's rules (request_body.h), then the reply
// or the error. Returns the HTTP status sent.
int ServeParseSizes(mg_connection* conn, const HandlerContext& handlers);

}  // namespace colltest::http
