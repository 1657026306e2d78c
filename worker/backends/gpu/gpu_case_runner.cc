// GpuBackend::RunCase: warm-up, timed calls (eager with per-call events, or graph: capture K
// calls, replay), stress loops and on-device checks. One launch path for every variant, so
// comparisons are fair. Mirrors worker/backends/cpu/case_runner.cc.
#include <signal.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "worker/backends/gpu/gpu_backend.h"
#include "worker/backends/gpu/stream_wait.h"
#include "worker/case_config.h"
#include "worker/fault_plan.h"
#include "worker/numerics/diff.h"
#include "worker/numerics/input_hash.h"
#include "worker/rank_report.h"
#include "worker/timing_stats.h"

namespace colltest::gpu {

using colltest::v1::Variant;

namespace {

constexpr size_t kSlotAlign = 4096;
constexpr size_t kWeightBytes = 256 << 10;
// Graph mode captures this many calls (at most) and replays the graph.
constexpr uint32_t kGraphCalls = 16;
// Graph stress captures this many calls (at most), each with its own diff accumulator.
constexpr uint32_t kGraphStressCalls = 64;
// The private buffers hold one 4096-byte-aligned block of accumulators (gpu_backend.cc).
static_assert(kGraphStressCalls * sizeof(DiffAccum) <= 4096);
constexpr uint32_t kStressSalt = 0x5eed0000u;

// Calls of other variants with other m and other data interleaved into Lamport stress: at stress
// call i with i % every == at, inputs of call key + i (eager).
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

bool IsLamport(Variant v) {
  return v == colltest::v1::VARIANT_LAMPORT || v == colltest::v1::VARIANT_LAMPORT_TB;
}

uint32_t StressRows(uint64_t seed, uint64_t i, uint32_t max_m, uint32_t salt) {
  return 1 + static_cast<uint32_t>(HashCoords(seed, i, salt, 0, 0) % max_m);
}

const char* PhaseName(int32_t phase) {
  switch (static_cast<Phase>(phase)) {
    case Phase::kOneStageStart:
      return "one_stage start_sync";
    case Phase::kOneStageEnd:
      return "one_stage end_sync";
    case Phase::kTwoKernelStart:
      return "two_kernel start_sync";
    case Phase::kTwoKernelEnd:
      return "two_kernel end_sync";
    case Phase::kLamportStart:
      return "lamport start_sync";
    case Phase::kLamportPhaseB:
      return "lamport phase B";
    case Phase::kLamportTbConsume:
      return "lamport_tb consume";
    case Phase::kHostBarrier:
      return "host barrier";
    case Phase::kFaultHangEndSync:
      return "fault: hang_end_sync";
    default:
      return "unknown";
  }
}

float ElemToFloat(DType t, uint32_t bits) {
  switch (t) {
    case DType::kBf16:
      return Bf16ToFloat(static_cast<uint16_t>(bits));
    case DType::kFp16:
      return Fp16ToFloat(static_cast<uint16_t>(bits));
    default:
      return BitsToFloat(bits);
  }
}

void AppendFloat(std::string& s, float f) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, f);
  s.append(buf, r.ptr);
}

// The injected crash (crash_rank), run by the runtime in stream order: in graph mode it is a host
// node of the captured calls.
void CrashWorker(void*) { std::abort(); }
void StallWorker(void*) { raise(SIGSTOP); }

// Captures what `record(c)` enqueues on `stream` for c in [0, k) and instantiates it. The calls
// counted while capturing were not run: `calls` is restored, and *per_replay says how many one
// replay runs (fewer than k when an injected fault stopped this rank inside the capture).
absl::Status CaptureGraph(Stream stream, uint32_t k, int64_t& calls,
                          const std::function<absl::Status(uint32_t)>& record, GraphExec* exec,
                          int64_t* per_replay) {
  const int64_t calls_before = calls;
  if (absl::Status s = GpuOk(BeginCapture(stream), "begin capture"); !s.ok()) return s;
  absl::Status captured = absl::OkStatus();
  for (uint32_t c = 0; c < k && captured.ok(); ++c) captured = record(c);
  Graph graph = nullptr;
  const absl::Status ended = GpuOk(EndCapture(stream, &graph), "end capture");
  *per_replay = calls - calls_before;
  calls = calls_before;
  if (!captured.ok()) return captured;
  if (!ended.ok()) return ended;
  const absl::Status instantiated = GpuOk(GraphInstantiate(exec, graph), "instantiate graph");
  GraphDestroy(graph);
  return instantiated;
}

// Events of timed calls, read after the stream drained.
class EventPairs {
 public:
  ~EventPairs() {
    for (Event e : events_) EventDestroy(e);
  }
  absl::Status Record(Stream s, bool start) {
    Event e;
    if (auto st = GpuOk(EventCreate(&e), "create event"); !st.ok()) return st;
    events_.push_back(e);
    (void)start;
    return GpuOk(EventRecord(e, s), "record event");
  }
  std::vector<double> Samples(double divide) const {
    std::vector<double> out;
    for (size_t i = 0; i + 1 < events_.size(); i += 2) {
      float ms = 0;
      if (EventElapsedMs(&ms, events_[i], events_[i + 1]) == kSuccess) {
        out.push_back(ms * 1000.0 / divide);
      }
    }
    return out;
  }

 private:
  std::vector<Event> events_;
};

// Zeroes `count` accumulators, first_bad_key = ~0 (none).
absl::Status ClearAccums(DiffAccum* accum, uint32_t count, Stream stream) {
  if (auto s = GpuOk(MemsetAsync(accum, 0, count * sizeof(DiffAccum), stream), "clear diff");
      !s.ok()) {
    return s;
  }
  for (uint32_t i = 0; i < count; ++i) {
    if (auto s = GpuOk(MemsetAsync(&accum[i].first_bad_key, 0xff, sizeof(uint64_t), stream),
                       "clear diff");
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace

struct GpuBackend::CaseState {
  const colltest::worker::v1::CaseRequest* req;
  CaseShape shape;
  size_t elem = 2;
  size_t slot_stride = 0;
  uint32_t slots = 1;
  uint32_t threads = 512;
  uint8_t* residual = nullptr;
  uint8_t* residual_out = nullptr;
  uint8_t* out = nullptr;
  float* want_residual_out = nullptr;
  float* want_out = nullptr;
  uint8_t* weight = nullptr;
  DiffAccum* accum = nullptr;
  uint64_t timeout_ns = 0;
  uint32_t world = 0;
  worker::FaultPlan fault;
  // hang_end_sync fired on this rank: it launches no further call, as the cpu backend's rank
  // stops after the call that skipped its end barrier.
  bool stopped = false;
  ToleranceProfile profile;
  DiffSummary diff;
  int64_t calls = 0;
};

uint32_t GpuBackend::GridFor(const CaseState& cs, Variant variant, uint32_t m) const {
  // Every block of a spinning kernel must be co-resident and Signal slots are indexed by block:
  // clamp to both. The grid depends only on values equal on every rank (m, n, dtype, world, the
  // threads knob, the multiprocessor count and the occupancy of one binary on one device model).
  // Measured on 2 x H200 (bench/results/2026-11-30_h200x2_cuda_grid_policy): one_stage, lamport
  // and lamport_tb gain from every co-resident block up to 2 per SM at 512 threads (one row per
  // block in their norm phase); two_kernel's reduce-scatter is best near half the SMs (m = 256:
  // 24.1 us at 64 blocks, 28.4 us at 224), its end barrier costing more than the width buys.
  const uint32_t limit = SpinLimit(cs.threads);
  const size_t packs = static_cast<size_t>(m) * cs.shape.n / PackElems(cs.shape.dtype);
  const uint32_t part_blocks =
      static_cast<uint32_t>((packs / world_ + cs.threads - 1) / cs.threads);
  uint32_t g;
  switch (variant) {
    case colltest::v1::VARIANT_ONE_STAGE:
      g = m;
      break;
    case colltest::v1::VARIANT_TWO_KERNEL:
      g = std::min(part_blocks, static_cast<uint32_t>(std::max(2, multiprocessors_) / 2));
      break;
    case colltest::v1::VARIANT_LAMPORT_TB:
      g = std::max<uint32_t>(m, static_cast<uint32_t>((packs + cs.threads - 1) / cs.threads));
      break;
    default:
      g = std::max(m, part_blocks);
      break;
  }
  if (cs.req->knobs().grid_blocks() > 0) g = cs.req->knobs().grid_blocks();
  if (variant == colltest::v1::VARIANT_ONE_STAGE) g = std::min(g, m);
  return std::max(1u, std::min(g, limit));
}

absl::Status GpuBackend::Generate(CaseState& cs, uint32_t slot, uint64_t call, uint32_t m) {
  GenerateArgs g{cs.shape.dtype,
                 cs.shape.pattern,
                 cs.shape.seed,
                 call,
                 rank_,
                 m,
                 cs.shape.n,
                 own_ + layout_.input_offset + slot * cs.slot_stride,
                 cs.residual + slot * cs.slot_stride};
  return GpuOk(LaunchGenerate(g, stream_), "generate inputs");
}

absl::Status GpuBackend::Launch(CaseState& cs, Variant variant, uint32_t m, uint32_t slot) {
  CallArgs a;
  a.m = m;
  a.n = cs.shape.n;
  a.residual = cs.shape.residual;
  a.eps = cs.shape.eps;
  a.input_offset = slot * cs.slot_stride;
  a.residual_in = cs.residual + slot * cs.slot_stride;
  a.weight = cs.weight;
  a.residual_out = cs.residual_out;
  a.out = cs.out;
  a.arm_repeat = std::max(1u, cs.req->knobs().arm_repeat());
  a.timeout_ns = cs.timeout_ns;
  if (cs.stopped) return absl::OkStatus();
  // Every fault is enqueued on the stream or carried in the call's arguments, never done by the
  // host at launch time: a graph captures it with the call, so replays run it too.
  using Fault = worker::FaultPlan::Kind;
  const Fault fault = cs.fault.Targets(rank_) ? cs.fault.kind : Fault::kNone;
  if (fault == Fault::kDelayRank) {
    const absl::Status s = GpuOk(
        LaunchFaultDelay(group_, uint64_t{cs.fault.delay_us} * 1000, stream_), "delay (fault)");
    if (!s.ok()) return s;
  }
  if (fault == Fault::kCrashRank && cs.calls == 1) {
    const absl::Status s = GpuOk(LaunchHostFunc(stream_, &CrashWorker, nullptr), "crash (fault)");
    if (!s.ok()) return s;
  }
  if (fault == Fault::kStallRank && cs.calls == 1) {
    const absl::Status s = GpuOk(LaunchHostFunc(stream_, &StallWorker, nullptr), "stall (fault)");
    if (!s.ok()) return s;
  }
  if (fault == Fault::kPoisonStaging && variant == colltest::v1::VARIANT_LAMPORT) {
    // Data where sentinels should be, as another kernel staging through the region between two
    // Lamport calls would leave it. Before this rank's start barrier, so no peer's store of this
    // call is overwritten.
    const absl::Status s =
        GpuOk(MemsetAsync(own_ + layout_.lamport_offset, 0x3f,
                          static_cast<size_t>(m) * cs.shape.n * cs.elem, stream_),
              "poison staging (fault)");
    if (!s.ok()) return s;
  }
  if (fault == Fault::kSkipRearm) a.arm_repeat = 0;
  if (fault == Fault::kSkipCanonicalize) a.faults |= kFaultSkipCanonicalize;
  if (fault == Fault::kHangEndSync) a.faults |= kFaultSkipEndSync;
  const uint32_t grid = GridFor(cs, variant, m);
  const DType t = cs.shape.dtype;
  Error e = kSuccess;
  switch (variant) {
    case colltest::v1::VARIANT_ONE_STAGE:
      e = LaunchCollective(Kind::kOneStage, t, group_, a, grid, cs.threads, stream_);
      break;
    case colltest::v1::VARIANT_TWO_KERNEL:
      e = LaunchCollective(Kind::kReduceScatter, t, group_, a, grid, cs.threads, stream_);
      if (e == kSuccess) {
        // The second kernel does not spin: size it for the rows.
        const uint32_t rows_grid = std::max(1u, std::min<uint32_t>(m, multiprocessors_ * 4));
        e = LaunchCollective(Kind::kLoadNorm, t, group_, a, rows_grid, cs.threads, stream_);
      }
      break;
    case colltest::v1::VARIANT_LAMPORT:
      e = LaunchCollective(Kind::kLamport, t, group_, a, grid, cs.threads, stream_);
      break;
    case colltest::v1::VARIANT_LAMPORT_TB:
      e = LaunchCollective(Kind::kLamportTb, t, group_, a, grid, cs.threads, stream_);
      break;
    case colltest::v1::VARIANT_NCCL: {
      // NCCL sums this call's registered input slot into its staging; our norm kernel follows.
      const absl::Status s =
          nccl_.Launch(t, own_ + layout_.input_offset + a.input_offset, a,
                       static_cast<uint32_t>(multiprocessors_) * 4, cs.threads, stream_);
      ++cs.calls;
      return s;
    }
    default:
      return absl::InvalidArgumentError("variant has no kernel");
  }
  ++cs.calls;
  if (e == kSuccess && fault == Fault::kHangEndSync) {
    // This rank left without its end barrier and stops here, so its peers wait for it until
    // their timeout and name it.
    e = LaunchFaultStop(group_, stream_);
    cs.stopped = true;
  }
  return GpuOk(e, "launch");
}

CheckArgs GpuBackend::CheckArgsFor(const CaseState& cs, uint64_t call, uint32_t m,
                                   DiffAccum* accum) {
  return CheckArgs{
      cs.shape.dtype,       cs.shape.pattern,  cs.shape.seed, call,       cs.world,        m,
      cs.shape.n,           cs.shape.residual, cs.shape.eps,  cs.profile, cs.residual_out, cs.out,
      cs.want_residual_out, cs.want_out,       accum};
}

absl::Status GpuBackend::FoldDiff(CaseState& cs, const DiffAccum& d, int64_t call, bool values,
                                  const std::string& note) {
  DiffSummary& s = cs.diff;
  s.mismatches += d.mismatches;
  s.checked += d.checked;
  s.nan_inf += d.nan_inf;
  double v;
  std::memcpy(&v, &d.max_abs_bits, sizeof v);
  s.max_abs_err = std::max(s.max_abs_err, v);
  std::memcpy(&v, &d.max_rel_bits, sizeof v);
  s.max_rel_err = std::max(s.max_rel_err, v);
  s.max_ulp = std::max<uint64_t>(s.max_ulp, d.max_ulp);
  if (d.first_bad_key != ~0ull && s.first_bad.empty()) {
    const bool is_out = (d.first_bad_key >> 62) != 0;
    const size_t index = d.first_bad_key & ((1ull << 62) - 1);
    s.first_bad_call = call;
    std::string& msg = s.first_bad;
    msg = is_out ? "out" : "residual_out";
    absl::StrAppend(&msg, "[", index / cs.shape.n, ",", index % cs.shape.n, "]");
    if (values) {
      uint32_t got_bits = 0;
      float want = 0;
      const uint8_t* got = (is_out ? cs.out : cs.residual_out) + index * cs.elem;
      const float* wants = is_out ? cs.want_out : cs.want_residual_out;
      if (auto st = GpuOk(MemcpyToHost(&got_bits, got, cs.elem), "read first bad"); !st.ok()) {
        return st;
      }
      if (auto st = GpuOk(MemcpyToHost(&want, wants + index, sizeof want), "read first bad");
          !st.ok()) {
        return st;
      }
      msg += " got ";
      AppendFloat(msg, ElemToFloat(cs.shape.dtype, got_bits));
      msg += " want ";
      AppendFloat(msg, want);
    }
    absl::StrAppend(&msg, " (call ", call, note, ")");
  }
  const double allowed =
      std::floor((1.0 - cs.profile.min_pass_fraction) * static_cast<double>(s.checked) + 1e-6);
  s.passed = static_cast<double>(s.mismatches) <= allowed;
  return absl::OkStatus();
}

absl::Status GpuBackend::Check(CaseState& cs, uint64_t call, uint32_t m) {
  if (auto s = ClearAccums(cs.accum, 1, stream_); !s.ok()) return s;
  const CheckArgs c = CheckArgsFor(cs, call, m, cs.accum);
  if (auto s = GpuOk(LaunchCheck(c, stream_), "check"); !s.ok()) return s;
  if (auto s = GpuOk(StreamSynchronizeBeating(stream_), "check"); !s.ok()) return s;
  DiffAccum d;
  if (auto s = GpuOk(MemcpyToHost(&d, cs.accum, sizeof d), "read diff"); !s.ok()) return s;
  return FoldDiff(cs, d, static_cast<int64_t>(call), true, "");
}

absl::StatusOr<colltest::v1::RankResult> GpuBackend::RunCase(
    const colltest::worker::v1::CaseRequest& req) {
  if (!connected_) return absl::FailedPreconditionError("RunCase before Connect");
  if (auto s = UseDevice(); !s.ok()) return s;
  colltest::v1::RankResult result = worker::NewRankResult(rank_, options_.device);
  const Variant variant = req.variant();
  const char* name = worker::VariantName(variant);
  auto unsupported = [&](const std::string& why) { return worker::Unsupported(result, why); };
  if (variant == colltest::v1::VARIANT_NCCL) {
    if (!nccl_.ready()) return unsupported(nccl_.reason());
    // NCCL's waits have no bound: a rank that never arrives would hang its peers for good.
    if (!req.fault().empty()) {
      return unsupported("nccl: fault injection is not supported (NCCL cannot time out a wait)");
    }
  }
  if (variant == colltest::v1::VARIANT_AUTO) {
    return unsupported("auto: no measured crossover table for this backend yet");
  }
  if (variant == colltest::v1::VARIANT_UNSPECIFIED) {
    return absl::InvalidArgumentError("variant: unspecified");
  }
  if (!SupportedWorld(world_)) {
    return unsupported(absl::StrCat(name, ": kernels exist for 2, 4 and 8 ranks, not ", world_));
  }

  CaseState cs;
  cs.req = &req;
  cs.world = world_;
  absl::StatusOr<CaseShape> shape = worker::ShapeOf(req, world_, req.m());
  if (!shape.ok()) return shape.status();
  cs.shape = *shape;
  cs.elem = ElemBytes(cs.shape.dtype);
  absl::StatusOr<size_t> case_bytes = worker::CaseBytes(req, cs.shape, layout_.capacity);
  if (!case_bytes.ok()) return case_bytes.status();
  const size_t bytes = *case_bytes;
  const uint32_t tpb = req.knobs().threads_per_block();
  if (tpb != 0 && tpb != 256 && tpb != 512) {
    return absl::InvalidArgumentError(
        absl::StrCat("threads_per_block = ", tpb, ": must be 256 or 512"));
  }
  cs.threads = tpb == 0 ? 512 : tpb;
  const uint32_t row_packs = req.n() / PackElems(cs.shape.dtype);
  if (row_packs > kMaxRowPacks * cs.threads) {
    return unsupported(absl::StrCat(name, ": a row of ", row_packs, " packs exceeds ", kMaxRowPacks,
                                    " packs per thread at ", cs.threads, " threads per block"));
  }
  if (variant == colltest::v1::VARIANT_LAMPORT_TB && bytes > layout_.tb_capacity) {
    return unsupported(absl::StrCat("lamport_tb: ", bytes,
                                    " bytes per rank exceed its triple-buffer capacity of ",
                                    layout_.tb_capacity, " bytes"));
  }
  const uint64_t timeout_ms = req.timeout_ms() > 0 ? req.timeout_ms() : 5000;
  cs.timeout_ns = timeout_ms * 1'000'000ull;
  cs.slot_stride = (bytes + kSlotAlign - 1) / kSlotAlign * kSlotAlign;
  cs.slots = static_cast<uint32_t>(
      std::clamp<size_t>(layout_.capacity / cs.slot_stride, 1, kMaxInputSlots));
  const size_t cap = layout_.capacity;
  cs.residual = scratch_;
  cs.residual_out = scratch_ + cap;
  cs.out = scratch_ + 2 * cap;
  cs.want_residual_out = reinterpret_cast<float*>(scratch_ + 3 * cap);
  cs.want_out = reinterpret_cast<float*>(scratch_ + 5 * cap);
  cs.weight = scratch_ + 7 * cap;
  cs.accum = reinterpret_cast<DiffAccum*>(scratch_ + 7 * cap + kWeightBytes);
  cs.profile = ProfileFor(worker::ToTolerance(req.tolerance()), cs.shape.dtype);
  if (req.n() * cs.elem > kWeightBytes) {
    return unsupported(absl::StrCat(name, ": n = ", req.n(), " exceeds the weight buffer"));
  }
  absl::StatusOr<worker::FaultPlan> fault = worker::ParseFault(req.fault(), world_);
  if (!fault.ok()) {
    // A result, not an RPC error: a bad fault spec must not cost the group its workers.
    result.set_status(colltest::v1::CASE_STATUS_ERROR);
    result.set_message(std::string(fault.status().message()));
    return result;
  }
  cs.fault = *fault;
  if (cs.fault.kind == worker::FaultPlan::Kind::kMissingRank && cs.fault.Targets(rank_)) {
    // The injected absence: this rank does nothing, not even the host barrier after arming; its
    // peers must time out there naming it.
    result.set_status(colltest::v1::CASE_STATUS_HANG);
    result.set_phase("fault: missing_rank");
    result.set_message(absl::StrCat("fault injected: rank ", rank_, " did not run the case"));
    return result;
  }

  if (auto s = ClearHang(); !s.ok()) return s;
  if (auto s = GpuOk(LaunchWeight(cs.shape.dtype, cs.shape.pattern, cs.shape.seed, req.n(),
                                  cs.weight, stream_),
                     "generate weight");
      !s.ok()) {
    return s;
  }

  std::vector<double> samples;
  bool hung = false;
  // Arming happens here, before any call and outside any graph.
  absl::StatusOr<bool> armed = EnsureArmed(variant, cs.shape.dtype, bytes, cs.timeout_ns);
  if (!armed.ok()) return armed.status();
  auto drained_hang = [&]() -> absl::StatusOr<bool> {
    if (auto s = GpuOk(StreamSynchronizeBeating(stream_), "run calls"); !s.ok()) return s;
    return HangRecorded();
  };
#define COLLTEST_RETURN_IF_ERROR(expr) \
  if (absl::Status _s = (expr); !_s.ok()) return _s;

  if (!*armed) {
    hung = true;
  } else if (req.stress_calls() > 0 && req.mode() != colltest::v1::MODE_GRAPH) {
    // Stress: m changes every call and every call is checked; Lamport variants get two_kernel and
    // one_stage calls with other m and other data in between, which would poison a staging region
    // they shared.
    for (uint32_t i = 0; i < req.stress_calls() && !hung; ++i) {
      const uint32_t slot = i % cs.slots;
      for (const OtherCall& o : kOtherCalls) {
        if (!IsLamport(variant) || i % o.every != o.at) continue;
        const uint32_t other_m = StressRows(cs.shape.seed, i, req.m(), o.salt);
        COLLTEST_RETURN_IF_ERROR(Generate(cs, slot, o.key + i, other_m));
        COLLTEST_RETURN_IF_ERROR(Launch(cs, o.variant, other_m, slot));
      }
      const uint32_t m = StressRows(cs.shape.seed, i, req.m(), kStressSalt);
      COLLTEST_RETURN_IF_ERROR(Generate(cs, slot, i, m));
      EventPairs ev;
      COLLTEST_RETURN_IF_ERROR(ev.Record(stream_, true));
      COLLTEST_RETURN_IF_ERROR(Launch(cs, variant, m, slot));
      COLLTEST_RETURN_IF_ERROR(ev.Record(stream_, false));
      absl::StatusOr<bool> h = drained_hang();
      if (!h.ok()) return h.status();
      if (*h) {
        hung = true;
        break;
      }
      for (double us : ev.Samples(1)) samples.push_back(us);
      COLLTEST_RETURN_IF_ERROR(Check(cs, i, m));
      if (cs.diff.mismatches > 0) break;  // the first failing call is what matters
    }
  } else if (req.stress_calls() > 0) {
    // Graph stress: capture K calls whose m changes every call (StressRows, as eager), each
    // followed by its check into its own accumulator (so every call of every replay is checked),
    // with the Lamport interleaving captured too; replay until stress_calls calls of the variant
    // have run. Arming happened above for req.m(); inputs are generated before capture with
    // req.m() rows (values do not depend on m, so they serve every smaller m), one key per slot:
    // the variant's calls rotate over their slots, the other variants get slots of their own when
    // there are enough, else they reuse the rotating ones.
    const uint32_t k = std::min(req.stress_calls(), kGraphStressCalls);
    const bool interleave = IsLamport(variant);
    const bool own_other_slots = interleave && cs.slots >= 3;
    const uint32_t main_slots = own_other_slots ? cs.slots - 2 : cs.slots;
    auto slot_key = [&](uint32_t slot) -> uint64_t {
      return slot < main_slots ? slot : (uint64_t{1} << 40) + slot;
    };
    const uint32_t used_slots = own_other_slots ? cs.slots : std::min(k, cs.slots);
    for (uint32_t s = 0; s < used_slots; ++s) {
      COLLTEST_RETURN_IF_ERROR(Generate(cs, s, slot_key(s), req.m()));
    }
    COLLTEST_RETURN_IF_ERROR(ClearAccums(cs.accum, k, stream_));
    COLLTEST_RETURN_IF_ERROR(GpuOk(StreamSynchronizeBeating(stream_), "prepare graph stress"));
    GraphExec exec = nullptr;
    int64_t per_replay = 0;
    COLLTEST_RETURN_IF_ERROR(CaptureGraph(
        stream_, k, cs.calls,
        [&](uint32_t c) -> absl::Status {
          const uint32_t slot = c % main_slots;
          for (uint32_t o = 0; o < std::size(kOtherCalls) && interleave; ++o) {
            const OtherCall& other = kOtherCalls[o];
            if (c % other.every != other.at) continue;
            const uint32_t other_m = StressRows(cs.shape.seed, c, req.m(), other.salt);
            COLLTEST_RETURN_IF_ERROR(
                Launch(cs, other.variant, other_m, own_other_slots ? main_slots + o : slot));
          }
          const uint32_t m = StressRows(cs.shape.seed, c, req.m(), kStressSalt);
          COLLTEST_RETURN_IF_ERROR(Launch(cs, variant, m, slot));
          return GpuOk(LaunchCheck(CheckArgsFor(cs, slot_key(slot), m, cs.accum + c), stream_),
                       "check");
        },
        &exec, &per_replay));
    DiffAccum none{};
    none.first_bad_key = ~0ull;
    std::vector<DiffAccum> acc(k, none);  // the last read, after a replay without a hang
    int64_t bad_call = -1;                // the first failing call: replay * k + captured index
    uint32_t bad_index = 0;
    absl::Status run = absl::OkStatus();
    for (uint64_t r = 0, done = 0; done < req.stress_calls() && run.ok(); ++r, done += k) {
      run = GpuOk(GraphLaunch(exec, stream_), "replay graph");
      if (!run.ok()) break;
      cs.calls += per_replay;
      absl::StatusOr<bool> h = drained_hang();
      if (!h.ok()) {
        run = h.status();
        break;
      }
      if (*h) {
        hung = true;
        break;
      }
      // Cumulative over replays; a replay is checked before the next one runs.
      run = GpuOk(MemcpyToHost(acc.data(), cs.accum, k * sizeof(DiffAccum)), "read diff");
      for (uint32_t c = 0; c < k && run.ok(); ++c) {
        if (acc[c].mismatches > 0) {
          bad_call = static_cast<int64_t>(r * k + c);
          bad_index = c;
          break;
        }
      }
      if (bad_call >= 0) break;  // the first failing replay is what matters
    }
    GraphExecDestroy(exec);
    COLLTEST_RETURN_IF_ERROR(run);
    // Fold the failing call first (its first-bad message wins), then every other accumulator.
    // Later captured calls overwrote out and the reference unless the failing call was the last.
    for (uint32_t i = 0; i < k; ++i) {
      const uint32_t c = bad_call >= 0 ? (bad_index + i) % k : i;
      const int64_t call = bad_call >= 0 ? bad_call - bad_index + c : c;
      COLLTEST_RETURN_IF_ERROR(
          FoldDiff(cs, acc[c], call, c == k - 1,
                   absl::StrCat(", graph replay ", call / k, " of ", k, " captured calls")));
    }
  } else if (req.mode() == colltest::v1::MODE_GRAPH) {
    // Graph: capture K calls with fixed arguments on this non-default stream and replay them;
    // device-resident state (the lamport_tb counter) is all that changes between replays.
    const uint32_t iters = std::max(1u, req.iters());
    const uint32_t k = std::min(iters, kGraphCalls);
    const uint32_t used_slots = std::min(k, cs.slots);
    for (uint32_t s = 0; s < used_slots; ++s) COLLTEST_RETURN_IF_ERROR(Generate(cs, s, s, req.m()));
    for (uint32_t w = 0; w < req.warmup(); ++w) {
      COLLTEST_RETURN_IF_ERROR(Launch(cs, variant, req.m(), w % used_slots));
    }
    absl::StatusOr<bool> h = drained_hang();
    if (!h.ok()) return h.status();
    hung = *h;
    if (!hung) {
      GraphExec exec = nullptr;
      int64_t per_replay = 0;
      COLLTEST_RETURN_IF_ERROR(CaptureGraph(
          stream_, k, cs.calls,
          [&](uint32_t c) { return Launch(cs, variant, req.m(), c % used_slots); }, &exec,
          &per_replay));
      // One untimed replay: the first launch of a graph uploads it.
      absl::Status run = GpuOk(GraphLaunch(exec, stream_), "replay graph");
      cs.calls += per_replay;
      const uint32_t replays = (iters + k - 1) / k;
      EventPairs ev;
      for (uint32_t r = 0; r < replays && run.ok(); ++r) {
        run = ev.Record(stream_, true);
        if (run.ok()) run = GpuOk(GraphLaunch(exec, stream_), "replay graph");
        if (run.ok()) run = ev.Record(stream_, false);
        cs.calls += per_replay;
      }
      absl::StatusOr<bool> hh = drained_hang();
      GraphExecDestroy(exec);
      COLLTEST_RETURN_IF_ERROR(run);
      if (!hh.ok()) return hh.status();
      hung = *hh;
      if (!hung) {
        samples = ev.Samples(k);
        COLLTEST_RETURN_IF_ERROR(Check(cs, (k - 1) % used_slots, req.m()));
      }
    }
  } else {
    const uint32_t total = req.warmup() + std::max(1u, req.iters());
    EventPairs ev;
    for (uint32_t c = 0; c < total; ++c) {
      const uint32_t slot = c % cs.slots;
      COLLTEST_RETURN_IF_ERROR(Generate(cs, slot, c, req.m()));
      const bool timed = c >= req.warmup();
      if (timed) COLLTEST_RETURN_IF_ERROR(ev.Record(stream_, true));
      COLLTEST_RETURN_IF_ERROR(Launch(cs, variant, req.m(), slot));
      if (timed) COLLTEST_RETURN_IF_ERROR(ev.Record(stream_, false));
    }
    absl::StatusOr<bool> h = drained_hang();
    if (!h.ok()) return h.status();
    hung = *h;
    if (!hung) {
      samples = ev.Samples(1);
      COLLTEST_RETURN_IF_ERROR(Check(cs, total - 1, req.m()));
    }
  }
#undef COLLTEST_RETURN_IF_ERROR
  if (auto s = GpuOk(StreamSynchronizeBeating(stream_), "finish case"); !s.ok()) return s;

  worker::ReportCase(name, cs.calls, GridFor(cs, variant, req.m()), std::move(samples), cs.diff,
                     hung, &result);
  if (hung) {
    volatile HangRecord* r = hang_host_;
    result.set_status(colltest::v1::CASE_STATUS_HANG);
    result.set_suspect_peer(r->peer);
    result.set_phase(PhaseName(r->phase));
    // No awaited peer: the rank stopped itself (an injected fault), as on the cpu backend.
    result.set_message(r->peer < 0
                           ? absl::StrCat("rank ", rank_, ": ", PhaseName(r->phase))
                           : absl::StrCat("rank ", rank_, " waited for rank ", r->peer, " in ",
                                          PhaseName(r->phase), " (block ", r->block, ", pack ",
                                          r->pack, ") past the ", timeout_ms, " ms timeout"));
  }
  return result;
}

}  // namespace colltest::gpu
