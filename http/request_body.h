// The request message of an API call from its HTTP request: the JSON body (read with a size
// limit, so that one client cannot make the gateway buffer an unbounded upload, and under a
// deadline and a cap on readers at once, so that slow bodies cannot hold the port's threads),
// then the query parameters, then the path's segments ({run_id}).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "google/protobuf/message.h"
#include "http/handler_context.h"

struct mg_connection;

namespace colltest::http {

// How a body is read.
struct BodyRules {
  uint64_t max_bytes = kMaxBodyBytes;
  absl::Duration timeout = absl::Seconds(10);  // for the whole body, from the end of the headers
  absl::Duration silence = absl::Seconds(5);   // CivetWeb's wait for each next byte
  BodyAdmission* admission = nullptr;          // null: no cap on readers at once
  ReadDeadlines* deadlines = nullptr;          // null: `timeout` is checked only between reads
};

// The rules of the gateway's options.
BodyRules BodyRulesOf(const HandlerContext& handlers);

// The whole body (Content-Length or chunked). Errors, after which the connection is closed (the
// rest of the body is left unread):
// - over `max_bytes` (declared or read): RESOURCE_EXHAUSTED "request body exceeds N bytes", 413;
// - a body while `admission` is full: 429 or 503 at once (request_admission.h);
// - not whole within `timeout`, or nothing for `silence`: DEADLINE_EXCEEDED answered 408, naming
//   the limit;
// - a body cut short: INVALID_ARGUMENT.
absl::StatusOr<std::string> ReadBody(mg_connection* conn, const BodyRules& rules);

// Fills `message` from the request on `conn`: a POST's body (ReadBody under the gateway's rules;
// empty: {}), the query parameters and `path_params`, later ones overriding earlier ones. GET
// bodies are not read.
absl::Status BuildRequestMessage(
    mg_connection* conn, const HandlerContext& handlers,
    const std::vector<std::pair<std::string, std::string>>& path_params,
    google::protobuf::Message* message);

}  // namespace colltest::http
