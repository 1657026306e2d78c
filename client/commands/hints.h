// What to tell a user whose command could not use the server at --server. gRPC's own text ("failed
// to connect to all addresses; last error: ...") says what failed but not what to do, and not
// which flag chose the address; the usual causes (colltestd not started, the wrong port, TLS or
// token settings that do not match the server's) each have one fix, which the hint names.
//
// Only statuses that say the server could not be used are explained. A server's own answer
// (INVALID_ARGUMENT naming a field, NOT_FOUND, BUSY) is already the explanation and is left as
// it is.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace colltest::client {

struct ExplainedFailure {
  // The status, its message prefixed with "server ADDR: " when the failure is the connection's,
  // so that the one error line says which address was tried.
  absl::Status status;
  // One line of advice without the "hint: " prefix; empty when there is none.
  std::string hint;
};

// `server` is the address the client asked for (--server or COLLTEST_SERVER).
ExplainedFailure ExplainFailure(const absl::Status& status, absl::string_view server);

// Marks a DEADLINE_EXCEEDED that passed before any connection to the server was made, which gRPC
// reports with the same text as a server that took too long to answer. Explained like an
// unreachable server.
absl::Status MarkNotConnected(absl::Status status);
bool IsNotConnected(const absl::Status& status);

}  // namespace colltest::client
