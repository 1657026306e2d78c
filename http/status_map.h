// Status codes as the HTTP API shows them (docs/http-api.md): the HTTP status of each gRPC code,
// the code's name, and the JSON error body {"code": "NAME", "message": "..."}.
//
// absl::StatusCode and grpc::StatusCode number the codes alike, so one table serves the service's
// statuses and the gateway's own. A gateway error whose HTTP status is not the table's (413 for a
// large body) carries it with WithHttpStatus.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace colltest::http {

// The HTTP status of a code per the table of docs/http-api.md; 500 for the codes it does not list.
int HttpStatusFor(absl::StatusCode code);
// "INVALID_ARGUMENT", ...; "UNKNOWN" for a number that is no code.
absl::string_view CodeName(absl::StatusCode code);

// `status` answered with `http_status` instead of the table's.
absl::Status WithHttpStatus(absl::Status status, int http_status);
// The HTTP status `status` is answered with: WithHttpStatus's, else the table's.
int HttpStatusOf(const absl::Status& status);

// {"code":"NAME","message":"..."} of an error (a compact JSON object, no newline).
std::string ErrorJson(const absl::Status& status);

}  // namespace colltest::http
