// The request message of an API call from its HTTP request: the JSON body (read with a size
// limit, so that one client cannot make the gateway buffer an unbounded upload), then the query
// parameters, then the path's segments ({run_id}).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/message.h"

struct mg_connection;

namespace colltest::http {

// The whole body (Content-Length or chunked). Over `limit` bytes (declared or read):
// RESOURCE_EXHAUSTED "request body exceeds N bytes" answered with 413; the rest is left unread
// and the connection closes after the reply. A body cut short is INVALID_ARGUMENT.
absl::StatusOr<std::string> ReadBody(mg_connection* conn, uint64_t limit);

// Fills `message` from the request on `conn`: a POST's body (at most kMaxBodyBytes; empty: {}),
// the query parameters and `path_params`, later ones overriding earlier ones. GET bodies are not
// read.
absl::Status BuildRequestMessage(
    mg_connection* conn, const std::vector<std::pair<std::string, std::string>>& path_params,
    google::protobuf::Message* message);

}  // namespace colltest::http
