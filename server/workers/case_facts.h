// What the controller saw while a group ran one case: each rank's own report, or how its call
// failed (the watchdog's facts), and what the group did afterwards. Facts only:
// server/workers/verdict.h turns them into statuses, culprits and messages.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "colltest/v1/colltest.pb.h"

namespace colltest::server {

// What a failed call says about the worker that did not answer it.
enum class CallFailure {
  kDied,        // the process is gone, and not because the controller killed it
  kKilledByUs,  // the controller killed it (its group was being torn down)
  kLate,        // alive, but the deadline passed
  kStalled,     // alive, but its heartbeat stood still for longer than the case allows
  kAbandoned,   // alive and working, but every peer had timed out waiting for it
  kError,       // alive, and it answered with an error
};

// One rank of one case.
struct RankFacts {
  uint32_t device = 0;
  // The rank's own report, when it answered its RunCase call.
  std::optional<colltest::v1::RankResult> answer;
  // Otherwise: how the call failed, and what is known of the process.
  CallFailure failure = CallFailure::kError;
  int pid = 0;
  std::string exit;            // kDied: "killed by signal 6", "exited with status 1"
  int error_code = 0;          // kError: the failed call's status (an absl::StatusCode)
  std::string error_message;   // kError
  absl::Duration stalled_for;  // kStalled: how long its heartbeat stood still
  // The peer its page said it waited for when the group was stopped (common/worker_page.h); -1
  // when it waited for nobody or the group was not stopped.
  int32_t awaited_at_stop = -1;
  // The kernel plugin entry point it was inside when the case ended (common/worker_page.h
  // PluginEntry; 0: none), and the call of a launch.
  uint32_t plugin_entry = 0;
  uint64_t plugin_call = 0;
};

// One case on one group.
struct CaseFacts {
  std::vector<RankFacts> ranks;  // rank order
  absl::Duration deadline;       // the host deadline the calls ran under
  // Set when the progress rule stopped the case (case_deadline.h): how long every rank that had
  // not answered had completed no work. Those ranks are kLate.
  absl::Duration no_progress_for;
  std::string plugin;  // "plugin:<name>" when the case ran a kernel plugin
  // The first rank found dead, late or stuck (whose failure got the group killed).
  std::optional<size_t> first_failed;
  bool cancelled = false;      // stopped by the cancel check: the reports are not a verdict
  bool cancel_killed = false;  // cancelled, and the ranks did not stop within the grace
  // What the group did afterwards: killed (some rank did not answer, or a reset failed), or
  // reset (every rank answered, some reported a failure, or the case was cancelled).
  bool killed = false;
  bool reset = false;
};

}  // namespace colltest::server
