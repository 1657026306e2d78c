// One case driver for every backend (docs/design.md section 6): the validation prefix, the faults
// that end a case before it starts, arming, warm-up, the eager, graph and stress loops with their
// Lamport interleaving, timing, and the hang message live here once. A backend implements
// CaseRuntime, the few operations whose meaning differs between a GPU stream and the cpu backend's
// threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "colltest/v1/colltest.pb.h"
#include "colltest/v1/worker.pb.h"
#include "common/defaults.h"
#include "common/fault_spec.h"
#include "worker/numerics/diff.h"
#include "worker/numerics/fp8.h"
#include "worker/numerics/quant_checker.h"
#include "worker/numerics/quant_plan.h"
#include "worker/numerics/reference.h"

namespace colltest::worker {

using colltest::kGraphCalls;  // common/defaults.h
// The calls one graph captures for `iters` timed calls: the fewest replays of at most kGraphCalls
// calls, shared evenly, so the replays run about `iters` calls (20 -> 2 x 10, not 2 x 16).
uint32_t GraphCallsPerReplay(uint32_t iters);
// Graph stress captures this many calls (at most), each checked into its own accumulator.
inline constexpr uint32_t kGraphStressCalls = 64;

// A case that passed the validation prefix: everything both backends derive from the request.
struct CasePlan {
  const colltest::worker::v1::CaseRequest* req = nullptr;
  colltest::v1::Variant variant = colltest::v1::VARIANT_UNSPECIFIED;
  CaseShape shape;  // shape.m is the case's largest m
  QuantPlan quant;  // the epilogue after the norm, its scales and its check
  size_t elem = 2;
  size_t bytes = 0;  // one rank's input at the largest m
  uint64_t timeout_ms = 0;
  size_t slot_stride = 0;  // bytes between input slots
  uint32_t slots = 1;      // input slots rotated over, so a cache is not measured instead of a link
  common::FaultSpec fault;  // parsed from req->fault (common/fault_spec.h)
  uint32_t rank = 0;
  uint32_t world = 0;
};

// What a backend's buffers hold, and its own refusals, asked at fixed points of the prefix.
class CaseRules {
 public:
  virtual ~CaseRules() = default;
  virtual size_t capacity() const = 0;     // bytes of one rank's input region
  virtual size_t tb_capacity() const = 0;  // the largest input lamport_tb supports
  virtual uint32_t max_slots() const = 0;
  // The FP8 format a request that leaves it UNSPECIFIED gets: the device's.
  virtual Fp8Format native_fp8_format() const { return Fp8Format::kE4m3fn; }
  // Before the shape is read (variant is never UNSPECIFIED): an UNSUPPORTED reason, or "".
  virtual absl::StatusOr<std::string> RefuseVariant(
      const colltest::worker::v1::CaseRequest& req) const = 0;
  // After the common shape and capacity checks: an UNSUPPORTED reason, or "".
  virtual absl::StatusOr<std::string> RefuseShape(const CasePlan& plan) const = 0;
};

// Either a plan to run, or (plan empty) the result that ends the case before it starts.
struct PlannedCase {
  std::optional<CasePlan> plan;
  colltest::v1::RankResult result;
};
absl::StatusOr<PlannedCase> PlanCase(const colltest::worker::v1::CaseRequest& req, uint32_t rank,
                                     uint32_t world, uint32_t device, const CaseRules& rules);

// Times what a runtime runs between Start and Stop (the host clock, or events on a stream).
class CaseTimer {
 public:
  virtual ~CaseTimer() = default;
  virtual absl::Status Start() = 0;
  virtual absl::Status Stop() = 0;
  // Microseconds of every Start/Stop pair, each divided by `divide`; read after a Drain.
  virtual std::vector<double> Samples(double divide) const = 0;
};

// Who waited for whom when a rank gave up.
struct HangFacts {
  int32_t peer = -1;  // the awaited rank; -1: the rank stopped by itself (a fault, a cancel)
  std::string phase;
  int32_t block = -1;
  std::optional<uint64_t> pack;  // the pack waited for, where the backend knows it
};

// "rank R waited for rank P in PHASE (block B, pack K) past the T ms timeout", or "rank R: PHASE"
// when the rank stopped by itself.
std::string HangMessage(uint32_t rank, const HangFacts& h, uint64_t timeout_ms);

// The operations of one case on one backend. Calls are enqueued (GPU) or run (cpu); while a
// capture is open, Launch and Check are recorded instead and run on every Replay.
class CaseRuntime {
 public:
  virtual ~CaseRuntime() = default;
  // Arms the Lamport staging the case needs and meets the peers; true when that barrier hung.
  // The driver never calls it inside a capture (docs/design.md section 4: arming is
  // never captured).
  virtual absl::StatusOr<bool> Arm() = 0;
  // Inputs of call index `call` with `m` rows into input slot `slot`.
  virtual absl::Status Generate(uint32_t slot, uint64_t call, uint32_t m) = 0;
  // One call of `variant`, the case's injected faults included.
  virtual absl::Status Launch(colltest::v1::Variant variant, uint32_t m, uint32_t slot) = 0;
  // Waits for everything enqueued; true when this rank recorded a hang.
  virtual absl::StatusOr<bool> Drain() = 0;
  // Waits for everything enqueued, without a verdict; `what` names the step in errors.
  virtual absl::Status Settle(const char* what) = 0;
  virtual std::unique_ptr<CaseTimer> NewTimer() = 0;

  virtual absl::Status BeginCapture() = 0;
  // Closes the capture; `keep`: make it replayable (false after a failed record: discarded).
  virtual absl::Status EndCapture(bool keep) = 0;
  virtual absl::Status Replay() = 0;
  // True when a graph's first replay costs more than the others (a GPU uploads the graph then),
  // so the driver runs it untimed. The cpu backend replays a record: its first replay is one
  // more round of calls and nothing else.
  virtual bool FirstReplayWarms() const { return true; }

  // Diff accumulators: zeroes [0, count); checks the outputs (and the quantised outputs of a
  // quantising epilogue) against call index `call` at `m` rows into accumulator `index`
  // (cumulative); reads [0, count) (after a Drain) and returns the mismatches of each, quantised
  // codes and scales included; folds accumulator `index` (as last read) into the case's diff and
  // quant tally as call `call`. `values`: the outputs still hold that call's values; `note` ends
  // its first-bad text.
  virtual absl::Status ClearChecks(uint32_t count) = 0;
  virtual absl::Status Check(uint64_t call, uint32_t m, uint32_t index) = 0;
  virtual absl::StatusOr<std::vector<uint64_t>> ReadChecks(uint32_t count) = 0;
  virtual absl::Status FoldCheck(uint32_t index, int64_t call, bool values,
                                 const std::string& note) = 0;
  virtual uint32_t Grid(colltest::v1::Variant variant, uint32_t m) const = 0;
  // Read only after a Drain returned true.
  virtual HangFacts Hang() const = 0;

  // The case's tally, kept here so that every backend counts alike: the diff and the quantised
  // outputs' check FoldCheck folded so far, and the calls launched (captured calls counted once,
  // when captured).
  const DiffSummary& diff() const { return diff_; }
  const QuantCheckSummary& quant() const { return quant_; }
  int64_t calls() const { return calls_; }

  // A case ended by the kernel's own answer rather than by its outputs: a kernel plugin that
  // refused a call (UNSUPPORTED) or failed (ERROR), with the message it wrote, or the rank that a
  // missing_rank fault kept from launching it (HANG). Wins over the diff: the outputs of a call
  // that did not run are not a wrong result.
  struct KernelEnd {
    colltest::v1::CaseStatus status = colltest::v1::CASE_STATUS_ERROR;
    std::string message;
    std::string phase;
  };
  const std::optional<KernelEnd>& kernel_end() const { return kernel_end_; }

 protected:
  DiffSummary diff_;
  QuantCheckSummary quant_;  // stays empty without a quantising epilogue
  int64_t calls_ = 0;
  std::optional<KernelEnd> kernel_end_;  // the first one; nothing more is launched after it
};

// Runs a planned case on `rt` and fills `result` (OK, WRONG or HANG). Errors are runtime failures.
absl::StatusOr<colltest::v1::RankResult> DriveCase(const CasePlan& plan, CaseRuntime& rt,
                                                   colltest::v1::RankResult result);

// Makes the runtime of one planned case (buffers bound, per-case state prepared).
using StartRuntime =
    std::function<absl::StatusOr<std::unique_ptr<CaseRuntime>>(const CasePlan& plan)>;

// A backend's RunCase: PlanCase, then DriveCase on the runtime `start` makes for the plan.
absl::StatusOr<colltest::v1::RankResult> RunCase(const colltest::worker::v1::CaseRequest& req,
                                                 uint32_t rank, uint32_t world, uint32_t device,
                                                 const CaseRules& rules, const StartRuntime& start);

}  // namespace colltest::worker
