// The fleet check: one HealthRequest sent to every node of a list, at most --parallel at a time,
// each over its own channel with a deadline per attempt, so that a node that refuses, hangs or
// answers garbage costs one slot for a bounded time and never holds up the others' rows.
#pragma once

#include <functional>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/commands/output_options.h"
#include "client/commands/rpc.h"
#include "client/fleet/fleet_targets.h"
#include "client/fleet/fleet_verdict.h"
#include "colltest/v1/colltest.pb.h"

namespace colltest::client {

// One call to one node.
struct NodeAttempt {
  absl::StatusOr<v1::HealthResponse> answer;
  // The channel was connected when the call ended: a DEADLINE_EXCEEDED then means the node was
  // reached and did not finish, not that it could not be reached.
  bool connected = false;
};

// Asks `target` once, giving up after `deadline`. The production call is MakeGrpcNodeCall's;
// tests substitute their own.
using NodeCall = std::function<NodeAttempt(const FleetTarget& target, absl::Duration deadline)>;

// Calls over gRPC with the connection flags (--token-file, --tls-*) of the invocation, the same
// for every node: a fresh channel per attempt, so that a retry makes a new connection instead of
// waiting out the previous one's reconnect backoff. Reads the token and the TLS files once, here,
// so that an unreadable file is one error rather than a row of them. For a node named by a DNS
// name, TLS checks the certificate against that name unless --tls-server-name says otherwise.
absl::StatusOr<NodeCall> MakeGrpcNodeCall(const ConnectionOptions& connection,
                                          const v1::HealthRequest& request);

// The pause before attempt `attempt` + 1 of an unreachable node: 250 ms, doubling, at most 4 s.
absl::Duration RetryBackoff(int attempt);

// Asks every target of `options`, at most `options.parallel` at once, and returns one row per
// target in the list's order. An unreachable node is asked up to 1 + `options.retries` times;
// a node's time is bounded by (1 + retries) x node_timeout plus the pauses.
FleetReport RunFleetCheck(const FleetOptions& options, const NodeCall& call);

// `colltest health --targets/--targets-file`: the report in the chosen format on stdout (or
// --out), the summary line on stderr when the format is not the table (which ends with it), and
// the exit code of FleetExitCode.
int FleetHealthCommand(const ConnectionOptions& connection, const v1::HealthRequest& request,
                       const FleetOptions& options, const OutputOptions& output, Streams streams);

}  // namespace colltest::client
