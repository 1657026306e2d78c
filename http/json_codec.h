// Messages to and from JSON per the proto3 JSON mapping, as the HTTP API writes them
// (docs/http-api.md): proto field names (`run_id`), every scalar printed even at its default so
// that a client sees each field, enums by name, 64-bit integers as strings.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace colltest::http {

// Parses a request body into `message`. An empty body is the empty message ({}). Unknown fields
// are an error (a misspelt field must not be silently dropped); the error is INVALID_ARGUMENT
// "body: not a colltest.v1.RunRequest: <the parser's reason, naming the field>".
absl::Status ParseJsonBody(absl::string_view body, google::protobuf::Message* message);

// `message` as one line of compact JSON (no newline inside or at the end).
std::string ToJson(const google::protobuf::Message& message);

}  // namespace colltest::http
