// The name that per-caller fairness and rate limits count a caller under: its identity
// (auth.h Caller::name) as is, except that a peer address (authentication off) loses its port, so
// that a client that reconnects, or opens one connection per call as `colltest` does, stays the
// same caller: "peer:ipv4:127.0.0.1:41234" counts as "peer:ipv4:127.0.0.1".
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace colltest::server {

std::string CallerKey(absl::string_view caller_name);

}  // namespace colltest::server
