// CpuBackend::RunCase: warm-up, timed calls (eager or graph), stress loops and checks. Timing and
// launches go through one code path for every variant, so comparisons are fair.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "worker/backends/cpu/cpu_backend.h"
#include "worker/backends/cpu/elem.h"
#include "worker/case_config.h"
#include "worker/heartbeat.h"
#include "worker/numerics/diff.h"
#include "worker/rank_report.h"

namespace colltest::cpu {

using colltest::v1::CaseStatus;
using colltest::v1::Variant;
using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kSlotAlign = 4096;
// Graph mode captures this many calls (at most) and replays the graph.
constexpr uint32_t kGraphCalls = 16;

double MicrosSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

bool IsLamport(Variant v) {
  return v == colltest::v1::VARIANT_LAMPORT || v == colltest::v1::VARIANT_LAMPORT_TB;
}

// m of stress call `i`: changes between calls (DESIGN: the stale-staging scenario).
uint32_t StressRows(uint64_t seed, uint64_t i, uint32_t max_m, uint32_t salt) {
  return 1 + static_cast<uint32_t>(HashCoords(seed, i, salt, 0, 0) % max_m);
}

}  // namespace

struct CpuBackend::CaseState {
  const colltest::worker::v1::CaseRequest* req;
  CaseShape shape;  // shape.m is the case's largest m
  size_t elem = 2;
  size_t slot_stride = 0;  // bytes between input slots
  uint32_t slots = 1;
  std::vector<uint8_t> weight;
  std::vector<uint8_t> residual;  // slots x slot_stride, private
  std::vector<uint8_t> residual_out;
  std::vector<uint8_t> out;
  std::chrono::milliseconds timeout{5000};
  std::unique_ptr<DiffChecker> diff;
  int64_t calls = 0;
};

uint32_t CpuBackend::GridFor(const CaseState& cs, Variant variant, uint32_t m) const {
  // Every block of a kernel that waits for other blocks must be co-resident, and Signal slots are
  // indexed by block: clamp to both. The grid depends only on values equal on every rank.
  uint32_t limit = std::min(pool_->resident(), kMaxBlocks);
  uint32_t g = cs.req->knobs().grid_blocks() > 0 ? cs.req->knobs().grid_blocks() : limit;
  g = std::min(g, limit);
  if (variant == colltest::v1::VARIANT_ONE_STAGE) g = std::min(g, m);
  return std::max(g, 1u);
}

void CpuBackend::GenerateInputs(CaseState& cs, uint32_t slot, uint64_t call, uint32_t m) {
  const CaseShape& s = cs.shape;
  uint8_t* input = group_.self().input() + slot * cs.slot_stride;
  uint8_t* residual = cs.residual.data() + slot * cs.slot_stride;
  for (uint32_t row = 0; row < m; ++row) {
    worker::Beat();
    for (uint32_t col = 0; col < s.n; ++col) {
      const size_t i = static_cast<size_t>(row) * s.n + col;
      const uint32_t x =
          StoredBits(s.dtype, InputValue(s.pattern, s.dtype, s.seed, call, rank_, row, col));
      const uint32_t r =
          StoredBits(s.dtype, ResidualValue(s.pattern, s.dtype, s.seed, call, row, col));
      std::memcpy(input + i * cs.elem, &x, cs.elem);  // little-endian: low bytes hold T
      std::memcpy(residual + i * cs.elem, &r, cs.elem);
    }
  }
}

template <DType D>
void CpuBackend::LaunchTyped(CaseState& cs, Variant variant, const CallArgs& args, uint32_t grid) {
  const ProtocolBreaks* breaks = &case_breaks_;
  auto launch = [&](void (*body)(const BlockContext&, const CallArgs&)) {
    pool_->Launch(grid, [&](uint32_t block, uint32_t g, PostedStores& posted) {
      if (guard_.aborted()) return;
      BlockContext ctx{&group_, block, g, &guard_, &posted, breaks};
      body(ctx, args);
    });
  };
  switch (variant) {
    case colltest::v1::VARIANT_ONE_STAGE:
      launch(&OneStageBlock<D>);
      break;
    case colltest::v1::VARIANT_TWO_KERNEL:
      launch(&ReduceScatterBlock<D>);
      if (!guard_.aborted()) launch(&LoadNormBlock<D>);
      break;
    case colltest::v1::VARIANT_LAMPORT:
      launch(&LamportBlock<D>);
      break;
    case colltest::v1::VARIANT_LAMPORT_TB:
      launch(&LamportTbBlock<D>);
      break;
    default:
      break;
  }
}

bool CpuBackend::LaunchCall(CaseState& cs, Variant variant, uint32_t m, uint32_t slot) {
  if (worker::CancelRequested()) {
    // Between two calls: the case ends here, and every loop below stops at a false return.
    guard_.RecordHang(0, -1, kCancelledPhase);
    return false;
  }
  if (fault_.kind == worker::FaultPlan::Kind::kDelayRank && fault_.Targets(rank_)) {
    std::this_thread::sleep_for(std::chrono::microseconds(fault_.delay_us));
  }
  if (fault_.kind == worker::FaultPlan::Kind::kCrashRank && fault_.Targets(rank_) &&
      cs.calls == 1) {
    std::abort();  // the injected crash: a worker that dies in the middle of a case
  }
  if (fault_.kind == worker::FaultPlan::Kind::kStallRank && fault_.Targets(rank_) &&
      cs.calls == 1) {
    raise(SIGSTOP);  // the injected stall: the whole process stops, as if wedged
  }
  if (fault_.kind == worker::FaultPlan::Kind::kPoisonStaging && fault_.Targets(rank_) &&
      variant == colltest::v1::VARIANT_LAMPORT) {
    // The injected stale staging: data where sentinels should be, as another kernel staging
    // through the region between two Lamport calls would leave it. Before this rank's start
    // barrier, so no peer's store of this call is overwritten.
    std::memset(case_breaks_.shared_staging ? group_.self().tmp() : group_.self().lamport(), 0x3f,
                static_cast<size_t>(m) * cs.shape.n * cs.elem);
  }
  guard_.Arm(Clock::now() + cs.timeout);
  CallArgs args;
  args.m = m;
  args.n = cs.shape.n;
  args.residual = cs.shape.residual;
  args.eps = cs.shape.eps;
  args.input_offset = slot * cs.slot_stride;
  args.residual_in = cs.residual.data() + slot * cs.slot_stride;
  args.weight = cs.weight.data();
  args.residual_out = cs.residual_out.data();
  args.out = cs.out.data();
  args.arm_repeat = std::max(1u, cs.req->knobs().arm_repeat());
  const uint32_t grid = GridFor(cs, variant, m);
  switch (cs.shape.dtype) {
    case DType::kBf16:
      LaunchTyped<DType::kBf16>(cs, variant, args, grid);
      break;
    case DType::kFp16:
      LaunchTyped<DType::kFp16>(cs, variant, args, grid);
      break;
    case DType::kFp32:
      LaunchTyped<DType::kFp32>(cs, variant, args, grid);
      break;
  }
  ++cs.calls;
  worker::Beat();
  if (case_breaks_.skip_end_sync) {
    // The injected hang: this rank left without its end barrier and stops here, so its peers wait
    // for it until their timeout and name it.
    guard_.RecordHang(0, -1, "fault: hang_end_sync");
    return false;
  }
  return !guard_.aborted();
}

void CpuBackend::Check(CaseState& cs, uint64_t call, uint32_t m) {
  CaseShape shape = cs.shape;
  shape.m = m;
  const ReferenceRows want = ComputeReference(shape, call);
  const size_t count = static_cast<size_t>(m) * shape.n;
  std::vector<float> got_res(count), got_out(count);
  for (size_t i = 0; i < count; ++i) {
    uint32_t r = 0, o = 0;
    std::memcpy(&r, cs.residual_out.data() + i * cs.elem, cs.elem);
    std::memcpy(&o, cs.out.data() + i * cs.elem, cs.elem);
    switch (shape.dtype) {
      case DType::kBf16:
        got_res[i] = Bf16ToFloat(r);
        got_out[i] = Bf16ToFloat(o);
        break;
      case DType::kFp16:
        got_res[i] = Fp16ToFloat(r);
        got_out[i] = Fp16ToFloat(o);
        break;
      case DType::kFp32:
        got_res[i] = BitsToFloat(r);
        got_out[i] = BitsToFloat(o);
        break;
    }
  }
  cs.diff->CompareRows(static_cast<int64_t>(call), m, shape.n, got_res.data(), got_out.data(),
                       want.residual_out.data(), want.out.data());
}

absl::StatusOr<colltest::v1::RankResult> CpuBackend::RunCase(
    const colltest::worker::v1::CaseRequest& req) {
  if (!connected_) return absl::FailedPreconditionError("RunCase before Connect");
  colltest::v1::RankResult result = worker::NewRankResult(rank_, options_.device);
  const Variant variant = req.variant();
  const char* name = worker::VariantName(variant);
  auto unsupported = [&](const std::string& why) { return worker::Unsupported(result, why); };
  if (variant == colltest::v1::VARIANT_NCCL) {
    return unsupported("nccl: NCCL/RCCL exist only on GPU backends");
  }
  if (variant == colltest::v1::VARIANT_AUTO) {
    return unsupported(
        "auto: dispatches between GPU kernels by a measured crossover table; none on the cpu "
        "backend");
  }
  if (variant == colltest::v1::VARIANT_UNSPECIFIED) {
    return absl::InvalidArgumentError("variant: unspecified");
  }

  CaseState cs;
  cs.req = &req;
  absl::StatusOr<CaseShape> shape = worker::ShapeOf(req, world_, req.m());
  if (!shape.ok()) return shape.status();
  cs.shape = *shape;
  cs.elem = ElemBytes(cs.shape.dtype);
  absl::StatusOr<size_t> case_bytes = worker::CaseBytes(req, cs.shape, layout_.capacity);
  if (!case_bytes.ok()) return case_bytes.status();
  const size_t bytes = *case_bytes;
  if (variant == colltest::v1::VARIANT_LAMPORT_TB && bytes > layout_.tb_capacity) {
    return unsupported(absl::StrCat("lamport_tb: ", bytes,
                                    " bytes per rank exceed its triple-buffer capacity of ",
                                    layout_.tb_capacity, " bytes"));
  }
  cs.timeout = std::chrono::milliseconds(req.timeout_ms() > 0 ? req.timeout_ms() : 5000);
  cs.slot_stride = (bytes + kSlotAlign - 1) / kSlotAlign * kSlotAlign;
  // Rotate inputs that fit several times, so that a cache is not measured instead of the link.
  cs.slots = static_cast<uint32_t>(
      std::clamp<size_t>(layout_.capacity / cs.slot_stride, 1, kMaxInputSlots));
  cs.weight.resize(static_cast<size_t>(req.n()) * cs.elem);
  for (uint32_t col = 0; col < req.n(); ++col) {
    const uint32_t w = StoredBits(
        cs.shape.dtype, WeightValue(cs.shape.pattern, cs.shape.dtype, cs.shape.seed, col));
    std::memcpy(cs.weight.data() + col * cs.elem, &w, cs.elem);
  }
  cs.residual.resize(cs.slots * cs.slot_stride);
  cs.residual_out.resize(bytes);
  cs.out.resize(bytes);
  cs.diff = std::make_unique<DiffChecker>(
      cs.shape.dtype, ProfileFor(worker::ToTolerance(req.tolerance()), cs.shape.dtype));

  absl::StatusOr<worker::FaultPlan> fault = worker::ParseFault(req.fault(), world_);
  if (!fault.ok()) {
    // A result, not an RPC error: a bad fault spec must not cost the group its workers.
    result.set_status(colltest::v1::CASE_STATUS_ERROR);
    result.set_message(std::string(fault.status().message()));
    return result;
  }
  fault_ = *fault;
  case_breaks_ = options_.breaks;
  using Fault = worker::FaultPlan::Kind;
  if (fault_.Targets(rank_)) {
    if (fault_.kind == Fault::kSkipRearm) case_breaks_.skip_rearm = true;
    if (fault_.kind == Fault::kSkipCanonicalize) case_breaks_.skip_canonicalize = true;
    if (fault_.kind == Fault::kHangEndSync) case_breaks_.skip_end_sync = true;
    if (fault_.kind == Fault::kMissingRank) {
      // The injected absence: this rank does nothing; its peers must time out naming it.
      result.set_status(colltest::v1::CASE_STATUS_HANG);
      result.set_phase("fault: missing_rank");
      result.set_message(absl::StrCat("fault injected: rank ", rank_, " did not run the case"));
      return result;
    }
  }

  std::vector<double> samples;
  bool hung = false;
  auto hang_result = [&]() {
    const HangRecord h = guard_.record();
    result.set_status(colltest::v1::CASE_STATUS_HANG);
    result.set_suspect_peer(h.awaited_peer);
    result.set_phase(h.phase);
    result.set_message(h.awaited_peer < 0
                           ? absl::StrCat("rank ", rank_, ": ", h.phase)
                           : absl::StrCat("rank ", rank_, " waited for rank ", h.awaited_peer,
                                          " in ", h.phase, " (block ", h.block, ") past the ",
                                          cs.timeout.count(), " ms timeout"));
  };

  // Arming happens here, before any call and outside any graph.
  guard_.Arm(Clock::now() + cs.timeout);
  hung = !EnsureArmed(variant, cs.shape.dtype, bytes);
  if (hung) {
    // hang_result() below
  } else if (req.stress_calls() > 0) {
    // Stress: m changes every call and every call is checked; Lamport variants get a two_kernel
    // call with other data in between, which would poison a staging region they shared.
    for (uint32_t i = 0; i < req.stress_calls() && !hung; ++i) {
      const uint32_t slot = i % cs.slots;
      if (IsLamport(variant) && i % 3 == 2) {
        const uint32_t other_m = StressRows(cs.shape.seed, i, req.m(), 0x5eed0001u);
        GenerateInputs(cs, slot, (uint64_t{1} << 40) + i, other_m);
        if (!LaunchCall(cs, colltest::v1::VARIANT_TWO_KERNEL, other_m, slot)) {
          hung = true;
          break;
        }
      }
      const uint32_t m = StressRows(cs.shape.seed, i, req.m(), 0x5eed0000u);
      GenerateInputs(cs, slot, i, m);
      const auto t0 = Clock::now();
      if (!LaunchCall(cs, variant, m, slot)) {
        hung = true;
        break;
      }
      samples.push_back(MicrosSince(t0));
      Check(cs, i, m);
      if (cs.diff->Summary().mismatches > 0) break;  // the first failing call is what matters
    }
  } else if (req.mode() == colltest::v1::MODE_GRAPH) {
    // Graph: capture K calls with fixed arguments, replay them; device-resident state (the
    // lamport_tb counter) is all that changes between replays.
    const uint32_t iters = std::max(1u, req.iters());
    const uint32_t k = std::min(iters, kGraphCalls);
    const uint32_t used_slots = std::min(k, cs.slots);
    for (uint32_t s = 0; s < used_slots; ++s) GenerateInputs(cs, s, s, req.m());
    for (uint32_t w = 0; w < req.warmup() && !hung; ++w)
      hung = !LaunchCall(cs, variant, req.m(), w % used_slots);
    std::vector<std::function<bool()>> graph;
    for (uint32_t c = 0; c < k; ++c) {
      graph.push_back([this, &cs, variant, m = req.m(), slot = c % used_slots] {
        return LaunchCall(cs, variant, m, slot);
      });
    }
    const uint32_t replays = (iters + k - 1) / k;
    for (uint32_t r = 0; r < replays && !hung; ++r) {
      const auto t0 = Clock::now();
      for (auto& call : graph) {
        if (!call()) {
          hung = true;
          break;
        }
      }
      if (!hung) samples.push_back(MicrosSince(t0) / k);
    }
    if (!hung) Check(cs, (k - 1) % used_slots, req.m());
  } else {
    const uint32_t total = req.warmup() + std::max(1u, req.iters());
    for (uint32_t c = 0; c < total && !hung; ++c) {
      const uint32_t slot = c % cs.slots;
      GenerateInputs(cs, slot, c, req.m());
      const auto t0 = Clock::now();
      if (!LaunchCall(cs, variant, req.m(), slot)) {
        hung = true;
        break;
      }
      if (c >= req.warmup()) samples.push_back(MicrosSince(t0));
      if (c + 1 == total) Check(cs, c, req.m());
    }
  }
  // A host synchronisation point: whatever is still in flight lands now.
  pending_.Drain();

  worker::ReportCase(name, cs.calls, GridFor(cs, variant, req.m()), std::move(samples),
                     cs.diff->Summary(), hung, &result);
  if (hung) hang_result();
  return result;
}

}  // namespace colltest::cpu
