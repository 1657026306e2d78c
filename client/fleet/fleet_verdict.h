// What a fleet check says about one node, from its health answer or from why there was none, and
// what the fleet's rows add up to (counts, the summary line, the exit code). Kept apart from the
// calls (fleet.h) so that every verdict rule is testable without a network.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "colltest/v1/colltest.pb.h"

namespace colltest::client {

enum class NodeVerdict {
  kOk,
  kWarn,   // healthy, but a rank or pair is slow (not a failure)
  kWrong,  // a collective gave a wrong result
  kHang,   // a collective did not complete
  kError,  // the check failed (an ERROR case, or the node refused or could not finish the request)
  kBusy,   // the devices were in use: nothing was checked
  // No answer: refused, timed out before connecting, or answered garbage (not a colltestd).
  kUnreachable,
  kUnauthenticated,  // the node wants a token this client did not send (or another one)
};

// "OK", "WARN", ..., "UNAUTHENTICATED", as scripts grep for them.
absl::string_view NodeVerdictName(NodeVerdict verdict);

// A device to blame, as HealthResponse.machine names it.
struct CulpritDevice {
  uint32_t index = 0;
  std::string uuid;  // "" when the answer's machine does not list the device
};

// One row of the fleet report.
struct NodeReport {
  std::string node;  // FleetTarget.name
  NodeVerdict verdict = NodeVerdict::kError;
  std::vector<CulpritDevice> culprit;
  std::string hostname;  // from the answer, "" without one
  absl::Duration duration;
  int attempts = 0;
  std::string message;
};

// The exit code (exit_code.h) of the verdict an answer carries, also when it is BUSY and the
// verdict is an earlier one: ExitCodeForHealth answers 5 for any BUSY answer, which says nothing
// of that verdict.
int CarriedVerdictCode(const v1::HealthResponse& health);

// The devices to blame in a health answer: the one that hung targets waited for, else the one
// device common to every failing pair, else a single failing rank, else the devices of a failing
// pair; for a healthy answer, the slow target's. Empty when no device stands out (every rank WRONG
// alike, say).
std::vector<CulpritDevice> FindCulprit(const v1::HealthResponse& health);

// "device 1 (GPU-8d1f...)", "devices 0 (GPU-a...), 1 (GPU-b...)" (the UUID left out where
// unknown), or "" for no culprit.
std::string CulpritText(const std::vector<CulpritDevice>& culprit);

// How old the answer's verdict is at `now`, e.g. "45s"; "" when the answer carries no time.
std::string VerdictAge(const v1::HealthResponse& health, absl::Time now);

// Fills verdict, culprit, hostname and message from an answer. A BUSY answer is BUSY whether or
// not it carries an earlier verdict (which the message then quotes, with its age): it was not a
// new check. An answer without a verdict that is not BUSY is garbage (UNREACHABLE).
void ApplyHealthAnswer(const v1::HealthResponse& health, absl::Time now, NodeReport* report);

// Fills verdict and message from a failed call and returns whether another attempt may help:
// only when the node was not reached (UNAVAILABLE, or DEADLINE_EXCEEDED with `connected` false).
// A reached node that ran out of `deadline` is ERROR: asking again would only wait as long again.
// UNIMPLEMENTED (not a colltestd) is UNREACHABLE without a retry; a BUSY refusal
// (IsBusyRefusal) is BUSY.
bool ApplyCallFailure(const absl::Status& status, bool connected, absl::Duration deadline,
                      NodeReport* report);

// Every node's row, in the order of the target list, and how long the whole check took.
struct FleetReport {
  std::vector<NodeReport> nodes;
  absl::Duration wall;
};

struct FleetCounts {
  int nodes = 0;
  int ok = 0;
  int warn = 0;
  int wrong = 0;
  int hang = 0;
  int error = 0;
  int busy = 0;
  int unreachable = 0;
  int unauthenticated = 0;
};
FleetCounts CountVerdicts(const std::vector<NodeReport>& nodes);

// The worst over the nodes: WRONG 1, HANG 2, ERROR or UNAUTHENTICATED 3; otherwise BUSY 5;
// otherwise UNREACHABLE 6; otherwise (OK and WARN only) 0. See exit_code.h.
int FleetExitCode(const std::vector<NodeReport>& nodes);

// "fleet: 5 nodes in 3.2s: 2 OK, 1 WRONG, 1 UNAUTHENTICATED, 1 UNREACHABLE (10.0.0.9:50051)":
// zero counts left out, the unreachable nodes named (the first 20, then how many more).
std::string FleetSummaryLine(const std::vector<NodeReport>& nodes, absl::Duration wall);

}  // namespace colltest::client
