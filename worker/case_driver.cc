#include "worker/case_driver.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/defaults.h"
#include "common/names.h"
#include "common/status_macros.h"
#include "worker/case_config.h"
#include "worker/numerics/input_hash.h"
#include "worker/rank_report.h"

namespace colltest::worker {

using colltest::v1::Variant;

namespace {

constexpr size_t kSlotAlign = 4096;
constexpr uint32_t kStressSalt = 0x5eed0000u;

// Calls of other variants with other m and other data interleaved into Lamport stress, which would
// poison a staging region they shared: at stress call i with i % every == at, inputs of call
// key + i (eager) or of the other variant's own slot (graph).
struct OtherCall {
  Variant variant;
  uint32_t every;
  uint32_t at;
  uint32_t salt;
  uint64_t key;
};
constexpr OtherCall kOtherCalls[] = {
    {colltest::v1::VARIANT_TWO_KERNEL, 3, 2, 0x5eed0001u, uint64_t{1} << 40},
    {colltest::v1::VARIANT_ONE_STAGE, 5, 4, 0x5eed0002u, uint64_t{2} << 40},
};
constexpr uint32_t kOtherCount = static_cast<uint32_t>(std::size(kOtherCalls));

bool IsLamport(Variant v) {
  return v == colltest::v1::VARIANT_LAMPORT || v == colltest::v1::VARIANT_LAMPORT_TB ||
         v == colltest::v1::VARIANT_LAMPORT_TWO_SHOT;
}

// m of stress call `i`: changes between calls (the stale-staging scenario of
// docs/design.md section 4).
uint32_t StressRows(uint64_t seed, uint64_t i, uint32_t max_m, uint32_t salt) {
  return 1 + static_cast<uint32_t>(HashCoords(seed, i, salt, 0, 0) % max_m);
}

// One case's loops over a runtime. It owns the capture state, so that it can refuse to arm while
// a capture is open, and counts replayed calls (a runtime counts a captured call once).
class Driver {
 public:
  Driver(const CasePlan& plan, CaseRuntime& rt) : p_(plan), req_(*plan.req), rt_(rt) {}

  // True when the case hung.
  absl::StatusOr<bool> Run();
  int64_t calls() const { return rt_.calls() - captured_ + replayed_; }
  std::vector<double>& samples() { return samples_; }

 private:
  absl::StatusOr<bool> Arm();
  absl::Status Capture(uint32_t k, const std::function<absl::Status(uint32_t)>& record);
  absl::Status Replay();
  absl::Status CheckNow(uint64_t call, uint32_t m);
  absl::Status LaunchOthers(uint32_t i, uint32_t slot);
  absl::StatusOr<bool> Eager();
  absl::StatusOr<bool> Stress();
  absl::StatusOr<bool> Graph();
  absl::StatusOr<bool> GraphStress();
  absl::StatusOr<bool> ReplayStress(uint32_t k);

  const CasePlan& p_;
  const colltest::worker::v1::CaseRequest& req_;
  CaseRuntime& rt_;
  std::vector<double> samples_;
  bool capturing_ = false;
  int64_t captured_ = 0;    // calls the runtime counted while capturing
  int64_t per_replay_ = 0;  // calls one replay of the open graph runs
  int64_t replayed_ = 0;
};

absl::StatusOr<bool> Driver::Arm() {
  // docs/design.md section 4: arming is never captured; a replay would re-arm under the
  // peers' stores.
  if (capturing_) return absl::InternalError("arming inside a capture");
  return rt_.Arm();
}

// Records `record(c)` for c in [0, k). The runtime's count of the calls it saw is kept apart:
// fewer than k when an injected fault stopped this rank inside the capture.
absl::Status Driver::Capture(uint32_t k, const std::function<absl::Status(uint32_t)>& record) {
  const int64_t before = rt_.calls();
  COLLTEST_RETURN_IF_ERROR(rt_.BeginCapture());
  capturing_ = true;
  absl::Status captured = absl::OkStatus();
  for (uint32_t c = 0; c < k && captured.ok(); ++c) captured = record(c);
  const absl::Status ended = rt_.EndCapture(captured.ok());
  capturing_ = false;
  per_replay_ = rt_.calls() - before;
  captured_ += per_replay_;
  if (!captured.ok()) return captured;
  return ended;
}

absl::Status Driver::Replay() {
  COLLTEST_RETURN_IF_ERROR(rt_.Replay());
  replayed_ += per_replay_;
  return absl::OkStatus();
}

absl::Status Driver::CheckNow(uint64_t call, uint32_t m) {
  COLLTEST_RETURN_IF_ERROR(rt_.ClearChecks(1));
  COLLTEST_RETURN_IF_ERROR(rt_.Check(call, m, 0));
  COLLTEST_RETURN_IF_ERROR(rt_.ReadChecks(1).status());
  return rt_.FoldCheck(0, static_cast<int64_t>(call), true, "");
}

absl::StatusOr<bool> Driver::Run() {
  // Arming happens here, before any call and outside any capture.
  COLLTEST_ASSIGN_OR_RETURN(const bool hung, Arm());
  if (hung) return true;
  const bool graph = req_.mode() == colltest::v1::MODE_GRAPH;
  if (req_.stress_calls() > 0) return graph ? GraphStress() : Stress();
  return graph ? Graph() : Eager();
}

absl::StatusOr<bool> Driver::Eager() {
  const uint32_t total = req_.warmup() + std::max(1u, req_.iters());
  std::unique_ptr<CaseTimer> timer = rt_.NewTimer();
  for (uint32_t c = 0; c < total; ++c) {
    const uint32_t slot = c % p_.slots;
    COLLTEST_RETURN_IF_ERROR(rt_.Generate(slot, c, req_.m()));
    const bool timed = c >= req_.warmup();
    if (timed) COLLTEST_RETURN_IF_ERROR(timer->Start());
    COLLTEST_RETURN_IF_ERROR(rt_.Launch(p_.variant, req_.m(), slot));
    if (timed) COLLTEST_RETURN_IF_ERROR(timer->Stop());
  }
  COLLTEST_ASSIGN_OR_RETURN(const bool hung, rt_.Drain());
  if (hung) return true;
  samples_ = timer->Samples(1);
  COLLTEST_RETURN_IF_ERROR(CheckNow(total - 1, req_.m()));
  return false;
}

absl::Status Driver::LaunchOthers(uint32_t i, uint32_t slot) {
  for (const OtherCall& o : kOtherCalls) {
    if (!IsLamport(p_.variant) || i % o.every != o.at) continue;
    const uint32_t other_m = StressRows(p_.shape.seed, i, req_.m(), o.salt);
    COLLTEST_RETURN_IF_ERROR(rt_.Generate(slot, o.key + i, other_m));
    COLLTEST_RETURN_IF_ERROR(rt_.Launch(o.variant, other_m, slot));
  }
  return absl::OkStatus();
}

// Stress: m changes every call and every call is checked, the first failing call ends the loop;
// Lamport variants get calls of other variants in between (kOtherCalls).
absl::StatusOr<bool> Driver::Stress() {
  for (uint32_t i = 0; i < req_.stress_calls(); ++i) {
    const uint32_t slot = i % p_.slots;
    COLLTEST_RETURN_IF_ERROR(LaunchOthers(i, slot));
    const uint32_t m = StressRows(p_.shape.seed, i, req_.m(), kStressSalt);
    COLLTEST_RETURN_IF_ERROR(rt_.Generate(slot, i, m));
    std::unique_ptr<CaseTimer> timer = rt_.NewTimer();
    COLLTEST_RETURN_IF_ERROR(timer->Start());
    COLLTEST_RETURN_IF_ERROR(rt_.Launch(p_.variant, m, slot));
    COLLTEST_RETURN_IF_ERROR(timer->Stop());
    COLLTEST_ASSIGN_OR_RETURN(const bool hung, rt_.Drain());
    if (hung) return true;
    for (double us : timer->Samples(1)) samples_.push_back(us);
    COLLTEST_RETURN_IF_ERROR(CheckNow(i, m));
    // The first failing call is what matters.
    if (rt_.diff().mismatches > 0 || !rt_.quant().passed) break;
  }
  return false;
}

// Graph: capture K calls with fixed arguments and replay them; device-resident state (the
// lamport_tb counter) is all that changes between replays.
absl::StatusOr<bool> Driver::Graph() {
  const uint32_t iters = std::max(1u, req_.iters());
  const uint32_t k = GraphCallsPerReplay(iters);
  const uint32_t used_slots = std::min(k, p_.slots);
  const uint32_t m = req_.m();
  for (uint32_t s = 0; s < used_slots; ++s) COLLTEST_RETURN_IF_ERROR(rt_.Generate(s, s, m));
  for (uint32_t w = 0; w < req_.warmup(); ++w) {
    COLLTEST_RETURN_IF_ERROR(rt_.Launch(p_.variant, m, w % used_slots));
  }
  COLLTEST_ASSIGN_OR_RETURN(const bool warm_hung, rt_.Drain());
  if (warm_hung) return true;
  COLLTEST_RETURN_IF_ERROR(
      Capture(k, [&](uint32_t c) { return rt_.Launch(p_.variant, m, c % used_slots); }));
  // One untimed replay where the first launch of a graph uploads it.
  absl::Status run = rt_.FirstReplayWarms() ? Replay() : absl::OkStatus();
  const uint32_t replays = (iters + k - 1) / k;
  std::unique_ptr<CaseTimer> timer = rt_.NewTimer();
  for (uint32_t r = 0; r < replays && run.ok(); ++r) {
    run = timer->Start();
    if (run.ok()) run = Replay();
    if (run.ok()) run = timer->Stop();
  }
  const absl::StatusOr<bool> hung = rt_.Drain();
  COLLTEST_RETURN_IF_ERROR(run);
  if (!hung.ok()) return hung.status();
  if (*hung) return true;
  samples_ = timer->Samples(k);
  COLLTEST_RETURN_IF_ERROR(CheckNow((k - 1) % used_slots, m));
  return false;
}

// Graph stress: capture K calls whose m changes every call (StressRows, as eager), each followed
// by its check into its own accumulator (so every call of every replay is checked), with the
// Lamport interleaving captured too; replay until stress_calls calls of the variant have run.
// Inputs are generated before capture with the case's m rows (values do not depend on m, so they
// serve every smaller m), one key per slot: the variant's calls rotate over their slots, the other
// variants get slots of their own when there are enough, else they reuse the rotating ones.
absl::StatusOr<bool> Driver::GraphStress() {
  const uint32_t k = std::min(req_.stress_calls(), kGraphStressCalls);
  const bool interleave = IsLamport(p_.variant);
  const bool own_other_slots = interleave && p_.slots > kOtherCount;
  const uint32_t main_slots = own_other_slots ? p_.slots - kOtherCount : p_.slots;
  auto slot_key = [&](uint32_t slot) -> uint64_t {
    return slot < main_slots ? slot : (uint64_t{1} << 40) + slot;
  };
  const uint32_t used_slots = own_other_slots ? p_.slots : std::min(k, p_.slots);
  for (uint32_t s = 0; s < used_slots; ++s) {
    COLLTEST_RETURN_IF_ERROR(rt_.Generate(s, slot_key(s), req_.m()));
  }
  COLLTEST_RETURN_IF_ERROR(rt_.ClearChecks(k));
  COLLTEST_RETURN_IF_ERROR(rt_.Settle("prepare graph stress"));
  COLLTEST_RETURN_IF_ERROR(Capture(k, [&](uint32_t c) -> absl::Status {
    const uint32_t slot = c % main_slots;
    for (uint32_t o = 0; o < kOtherCount && interleave; ++o) {
      const OtherCall& other = kOtherCalls[o];
      if (c % other.every != other.at) continue;
      const uint32_t other_m = StressRows(p_.shape.seed, c, req_.m(), other.salt);
      COLLTEST_RETURN_IF_ERROR(
          rt_.Launch(other.variant, other_m, own_other_slots ? main_slots + o : slot));
    }
    const uint32_t m = StressRows(p_.shape.seed, c, req_.m(), kStressSalt);
    COLLTEST_RETURN_IF_ERROR(rt_.Launch(p_.variant, m, slot));
    return rt_.Check(slot_key(slot), m, c);
  }));
  return ReplayStress(k);
}

// Replays the captured stress graph, reading the accumulators after each replay, then folds them:
// the failing call first (its first-bad message wins), then every other one. Later captured calls
// overwrote the outputs unless the failing call was the last.
absl::StatusOr<bool> Driver::ReplayStress(uint32_t k) {
  int64_t bad_call = -1;  // the first failing call: replay * k + captured index
  uint32_t bad_index = 0;
  bool hung = false;
  for (uint64_t r = 0, done = 0; done < req_.stress_calls(); ++r, done += k) {
    COLLTEST_RETURN_IF_ERROR(Replay());
    COLLTEST_ASSIGN_OR_RETURN(hung, rt_.Drain());
    if (hung) break;
    // Cumulative over replays; a replay is checked before the next one runs.
    COLLTEST_ASSIGN_OR_RETURN(const std::vector<uint64_t> mismatches, rt_.ReadChecks(k));
    for (uint32_t c = 0; c < k; ++c) {
      if (mismatches[c] > 0) {
        bad_call = static_cast<int64_t>(r * k + c);
        bad_index = c;
        break;
      }
    }
    if (bad_call >= 0) break;  // the first failing replay is what matters
  }
  for (uint32_t i = 0; i < k; ++i) {
    const uint32_t c = bad_call >= 0 ? (bad_index + i) % k : i;
    const int64_t call = bad_call >= 0 ? bad_call - bad_index + c : c;
    COLLTEST_RETURN_IF_ERROR(
        rt_.FoldCheck(c, call, c == k - 1,
                      absl::StrCat(", graph replay ", call / k, " of ", k, " captured calls")));
  }
  return hung;
}

}  // namespace

std::string HangMessage(uint32_t rank, const HangFacts& h, uint64_t timeout_ms) {
  if (h.peer < 0) return absl::StrCat("rank ", rank, ": ", h.phase);
  const std::string pack = h.pack.has_value() ? absl::StrCat(", pack ", *h.pack) : "";
  return absl::StrCat("rank ", rank, " waited for rank ", h.peer, " in ", h.phase, " (block ",
                      h.block, pack, ") past the ", timeout_ms, " ms timeout");
}

absl::StatusOr<PlannedCase> PlanCase(const colltest::worker::v1::CaseRequest& req, uint32_t rank,
                                     uint32_t world, uint32_t device, const CaseRules& rules) {
  PlannedCase out;
  out.result = NewRankResult(rank, device);
  auto refused = [&](const std::string& why) {
    out.result = Unsupported(std::move(out.result), why);
    return std::move(out);
  };
  if (req.variant() == colltest::v1::VARIANT_UNSPECIFIED) {
    return absl::InvalidArgumentError("variant: unspecified");
  }
  COLLTEST_ASSIGN_OR_RETURN(const std::string variant_refusal, rules.RefuseVariant(req));
  if (!variant_refusal.empty()) return refused(variant_refusal);
  CasePlan plan;
  plan.req = &req;
  plan.variant = req.variant();
  plan.rank = rank;
  plan.world = world;
  COLLTEST_ASSIGN_OR_RETURN(plan.shape, ShapeOf(req, world, req.m()));
  COLLTEST_ASSIGN_OR_RETURN(plan.quant, QuantPlanOf(req, rules.native_fp8_format()));
  plan.elem = ElemBytes(plan.shape.dtype);
  COLLTEST_ASSIGN_OR_RETURN(plan.bytes, CaseBytes(req, plan.shape, rules.capacity()));
  if ((plan.variant == colltest::v1::VARIANT_LAMPORT_TB ||
       plan.variant == colltest::v1::VARIANT_LAMPORT_TWO_SHOT) &&
      plan.bytes > rules.tb_capacity()) {
    return refused(absl::StrCat(common::VariantName(plan.variant), ": ", plan.bytes,
                                " bytes per rank exceed its triple-buffer capacity of ",
                                rules.tb_capacity(), " bytes"));
  }
  plan.timeout_ms = req.timeout_ms() > 0 ? req.timeout_ms() : kDefaultCaseTimeoutMs;
  plan.slot_stride = (plan.bytes + kSlotAlign - 1) / kSlotAlign * kSlotAlign;
  plan.slots = static_cast<uint32_t>(
      std::clamp<size_t>(rules.capacity() / plan.slot_stride, 1, std::max(1u, rules.max_slots())));
  COLLTEST_ASSIGN_OR_RETURN(const std::string shape_refusal, rules.RefuseShape(plan));
  if (!shape_refusal.empty()) return refused(shape_refusal);
  absl::StatusOr<common::FaultSpec> fault = common::ParseFaultSpec("fault", req.fault(), world);
  if (!fault.ok()) {
    // A result, not an RPC error: a bad fault spec must not cost the group its workers.
    out.result.set_status(colltest::v1::CASE_STATUS_ERROR);
    out.result.set_message(std::string(fault.status().message()));
    return out;
  }
  plan.fault = *fault;
  plan.quant.breaks = QuantBreaksOf(plan.fault.kind);
  // A kernel plugin has no bounded waits of colltest's to skip: its missing rank meets its peers
  // and then launches nothing (the backend's runtime), so that the peers' kernels wait for it.
  if (plan.fault.kind == common::FaultKind::kMissingRank && plan.fault.Targets(rank) &&
      plan.variant != colltest::v1::VARIANT_PLUGIN) {
    // The injected absence: this rank does nothing, not even the host barrier after arming; its
    // peers must time out there naming it.
    out.result.set_status(colltest::v1::CASE_STATUS_HANG);
    out.result.set_phase("fault: missing_rank");
    out.result.set_message(absl::StrCat("fault injected: rank ", rank, " did not run the case"));
    return out;
  }
  out.plan = std::move(plan);
  return out;
}

absl::StatusOr<colltest::v1::RankResult> DriveCase(const CasePlan& plan, CaseRuntime& rt,
                                                   colltest::v1::RankResult result) {
  Driver driver(plan, rt);
  COLLTEST_ASSIGN_OR_RETURN(const bool hung, driver.Run());
  // A host synchronisation point: whatever is still in flight lands now.
  COLLTEST_RETURN_IF_ERROR(rt.Settle("finish case"));
  const std::string variant = CaseVariantLabel(*plan.req);
  ReportCase(variant, driver.calls(), rt.Grid(plan.variant, plan.req->m()),
             std::move(driver.samples()), rt.diff(), hung, &result);
  ReportQuant(variant, plan.quant, rt.quant(), hung, &result);
  if (rt.kernel_end().has_value() && !hung) {
    result.set_status(rt.kernel_end()->status);
    result.set_message(rt.kernel_end()->message);
    result.set_phase(rt.kernel_end()->phase);
    result.clear_timing();
    result.clear_diff();
    result.clear_quant();
  }
  if (hung) {
    const HangFacts h = rt.Hang();
    result.set_status(colltest::v1::CASE_STATUS_HANG);
    result.set_suspect_peer(h.peer);
    result.set_phase(h.phase);
    result.set_message(HangMessage(plan.rank, h, plan.timeout_ms));
  }
  return result;
}

absl::StatusOr<colltest::v1::RankResult> RunCase(const colltest::worker::v1::CaseRequest& req,
                                                 uint32_t rank, uint32_t world, uint32_t device,
                                                 const CaseRules& rules,
                                                 const StartRuntime& start) {
  COLLTEST_ASSIGN_OR_RETURN(PlannedCase planned, PlanCase(req, rank, world, device, rules));
  if (!planned.plan.has_value()) return planned.result;
  COLLTEST_ASSIGN_OR_RETURN(std::unique_ptr<CaseRuntime> runtime, start(*planned.plan));
  return DriveCase(*planned.plan, *runtime, std::move(planned.result));
}

uint32_t GraphCallsPerReplay(uint32_t iters) {
  const uint32_t wanted = std::max(1u, iters);
  const uint32_t replays = (wanted + kGraphCalls - 1) / kGraphCalls;
  return (wanted + replays - 1) / replays;
}

}  // namespace colltest::worker
