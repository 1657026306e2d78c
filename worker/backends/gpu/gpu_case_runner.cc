// GpuBackend::RunCase: the GPU backend's CaseRuntime under the one case driver
// (worker/case_driver.h). Calls, faults and checks are enqueued on the rank's non-default stream;
// timing is taken with events on it; a capture is a graph of the stream, replayed as one launch.
#include <signal.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/fault_spec.h"
#include "common/names.h"
#include "common/status_macros.h"
#include "worker/backends/gpu/elem_bits.h"
#include "worker/backends/gpu/gpu_backend.h"
#include "worker/backends/gpu/gpu_handles.h"
#include "worker/backends/gpu/stream_wait.h"
#include "worker/case_config.h"
#include "worker/case_driver.h"
#include "worker/heartbeat.h"
#include "worker/numerics/diff.h"
#include "worker/numerics/quant_checker.h"
#include "worker/numerics/quant_plan.h"
#include "worker/plugins/plugin_launch.h"
#include "worker/plugins/plugin_rules.h"
#include "worker/rank_report.h"

namespace colltest::gpu {

using colltest::v1::Variant;

namespace {

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
    case Phase::kLamportTwoShotReduce:
      return "lamport_two_shot reduce";
    case Phase::kLamportTwoShotGather:
      return "lamport_two_shot gather";
    default:
      return "unknown";
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

// Events of timed calls, read after the stream drained.
class EventPairs final : public worker::CaseTimer {
 public:
  explicit EventPairs(Stream stream) : stream_(stream) {}
  absl::Status Start() override { return Record(); }
  absl::Status Stop() override { return Record(); }
  std::vector<double> Samples(double divide) const override {
    std::vector<double> out;
    for (size_t i = 0; i + 1 < events_.size(); i += 2) {
      float ms = 0;
      if (EventElapsedMs(&ms, events_[i].get(), events_[i + 1].get()) == kSuccess) {
        out.push_back(ms * 1000.0 / divide);
      }
    }
    return out;
  }

 private:
  absl::Status Record() {
    EventHandle e;
    COLLTEST_RETURN_IF_ERROR(GpuOk(CreateEvent(&e), "create event"));
    events_.push_back(std::move(e));
    return GpuOk(EventRecord(events_.back().get(), stream_), "record event");
  }
  Stream stream_;
  std::vector<EventHandle> events_;
};

// Zeroes `count` accumulators, first_bad_key and quant_first_bad_row = ~0 (none): the two are
// neighbours, so one fill sets both.
absl::Status ClearAccums(DiffAccum* accum, uint32_t count, Stream stream) {
  static_assert(offsetof(DiffAccum, quant_first_bad_row) ==
                offsetof(DiffAccum, first_bad_key) + sizeof(uint64_t));
  COLLTEST_RETURN_IF_ERROR(
      GpuOk(MemsetAsync(accum, 0, count * sizeof(DiffAccum), stream), "clear diff"));
  for (uint32_t i = 0; i < count; ++i) {
    COLLTEST_RETURN_IF_ERROR(GpuOk(
        MemsetAsync(&accum[i].first_bad_key, 0xff, 2 * sizeof(uint64_t), stream), "clear diff"));
  }
  return absl::OkStatus();
}

// One accumulator's statistics as the numerics keep them; the first-bad text is the caller's.
DiffSummary SummaryOf(const DiffAccum& d) {
  DiffSummary s;
  s.mismatches = d.mismatches;
  s.checked = d.checked;
  s.nan_inf = d.nan_inf;
  std::memcpy(&s.max_abs_err, &d.max_abs_bits, sizeof s.max_abs_err);
  std::memcpy(&s.max_rel_err, &d.max_rel_bits, sizeof s.max_rel_err);
  s.max_ulp = d.max_ulp;
  return s;
}

DiffAccum NoAccum() {
  DiffAccum none{};
  none.first_bad_key = ~0ull;
  none.quant_first_bad_row = ~0ull;
  return none;
}

// One accumulator's quantised-output counts (kernels_support.cu counts the codes outside the
// case's tolerance, and apart from them those that differ but pass it).
QuantCheckSummary QuantCountsOf(const DiffAccum& d) {
  QuantCheckSummary q;
  q.checked_codes = d.quant_checked_codes;
  q.code_mismatches = d.quant_code_mismatches;
  q.tolerated = d.quant_tolerated_codes;
  q.checked_scales = d.quant_checked_scales;
  q.scale_mismatches = d.quant_scale_mismatches;
  q.passed = q.code_mismatches == 0 && q.scale_mismatches == 0;
  return q;
}

}  // namespace

class GpuBackend::Rules final : public worker::CaseRules {
 public:
  explicit Rules(const GpuBackend& b) : b_(b) {}
  size_t capacity() const override { return b_.layout_.capacity; }
  size_t tb_capacity() const override { return b_.layout_.tb_capacity; }
  uint32_t max_slots() const override { return kMaxInputSlots; }
  Fp8Format native_fp8_format() const override { return b_.fp8_format_; }
  absl::StatusOr<std::string> RefuseVariant(
      const colltest::worker::v1::CaseRequest& req) const override {
    if (req.variant() == colltest::v1::VARIANT_NCCL) {
      if (!b_.nccl_.ready()) return b_.nccl_.reason();
      // NCCL's waits have no bound: a rank that never arrives would hang its peers for good.
      if (!req.fault().empty()) {
        return std::string("nccl: fault injection is not supported (NCCL cannot time out a wait)");
      }
    }
    if (req.variant() == colltest::v1::VARIANT_AUTO) {
      return std::string("auto: no measured crossover table for this backend yet");
    }
    if (req.variant() == colltest::v1::VARIANT_PLUGIN) {
      return worker::plugins::RefusePluginCase(b_.plugins_, req, b_.world_, b_.rank_,
                                               kPluginBackendBit);
    }
    if (!SupportedWorld(b_.world_)) {
      return absl::StrCat(common::VariantName(req.variant()), ": ",
                          UnsupportedText(Unsupported{KernelParam::kWorld, b_.world_}));
    }
    return std::string();
  }
  absl::StatusOr<std::string> RefuseShape(const worker::CasePlan& plan) const override {
    const auto& req = *plan.req;
    if (const std::string quant = RefuseQuant(plan); !quant.empty()) return quant;
    // A plugin's own limits were its rules' (RefuseVariant); the rest are colltest's kernels'.
    if (plan.variant == colltest::v1::VARIANT_PLUGIN) return std::string();
    const absl::string_view name = common::VariantName(plan.variant);
    const uint32_t tpb = req.knobs().threads_per_block();
    if (tpb != 0 && tpb != 256 && tpb != 512) {
      return absl::InvalidArgumentError(
          absl::StrCat("threads_per_block = ", tpb, ": must be 256 or 512"));
    }
    const uint32_t threads = ThreadsOf(req);
    const uint32_t row_packs = req.n() / PackElems(plan.shape.dtype);
    if (plan.variant == colltest::v1::VARIANT_LAMPORT_TB) {
      TbShape tb;
      if (!LamportTbBlockShape(b_.world_, plan.shape.dtype, req.n(), tpb, &tb).ok() ||
          tb.blocks_per_sm <= 0) {
        return absl::StrCat(name, ": a row of ", row_packs, " packs exceeds ", kMaxRowPacks,
                            " packs per thread at ", tpb != 0 ? tpb : kMaxTbThreads,
                            " threads per block");
      }
    } else if (row_packs > kMaxRowPacks * threads) {
      return absl::StrCat(name, ": a row of ", row_packs, " packs exceeds ", kMaxRowPacks,
                          " packs per thread at ", threads, " threads per block");
    }
    if (req.n() * plan.elem > kWeightBytes) {
      return absl::StrCat(name, ": n = ", req.n(), " exceeds the weight buffer");
    }
    return std::string();
  }
  // What the GPU buffers of a quantising epilogue cannot hold: never a fake OK.
  static std::string RefuseQuant(const worker::CasePlan& plan) {
    if (plan.quant.scheme.has_value() && plan.shape.m > kMaxQuantRows) {
      return absl::StrCat("epilogue ", common::EpilogueName(plan.req->epilogue()),
                          ": m = ", plan.shape.m, " rows, the GPU buffers hold scales of ",
                          kMaxQuantRows);
    }
    return std::string();
  }
  static uint32_t ThreadsOf(const colltest::worker::v1::CaseRequest& req) {
    const uint32_t tpb = req.knobs().threads_per_block();
    return tpb == 0 ? 512 : tpb;
  }

 private:
  const GpuBackend& b_;
};

class GpuBackend::Runtime final : public worker::CaseRuntime {
 public:
  Runtime(GpuBackend& b, const worker::CasePlan& plan);
  // Clears the hang record and the abort flag and generates the weight, before arming.
  absl::Status Prepare();

  absl::StatusOr<bool> Arm() override;
  absl::Status Generate(uint32_t slot, uint64_t call, uint32_t m) override;
  absl::Status Launch(Variant variant, uint32_t m, uint32_t slot) override;
  absl::StatusOr<bool> Drain() override;
  absl::Status Settle(const char* what) override { return WaitStream(what); }
  std::unique_ptr<worker::CaseTimer> NewTimer() override {
    return std::make_unique<EventPairs>(stream());
  }
  absl::Status BeginCapture() override {
    return GpuOk(gpu::BeginCapture(stream()), "begin capture");
  }
  absl::Status EndCapture(bool keep) override;
  absl::Status Replay() override {
    return GpuOk(GraphLaunch(exec_.get(), stream()), "replay graph");
  }
  absl::Status ClearChecks(uint32_t count) override;
  absl::Status Check(uint64_t call, uint32_t m, uint32_t index) override;
  absl::StatusOr<std::vector<uint64_t>> ReadChecks(uint32_t count) override;
  absl::Status FoldCheck(uint32_t index, int64_t call, bool values,
                         const std::string& note) override;
  uint32_t Grid(Variant variant, uint32_t m) const override;
  worker::HangFacts Hang() const override;

 private:
  Stream stream() const { return b_.stream_.get(); }
  // Enqueues the injected faults that precede a call and carries the others in `a`.
  absl::Status EnqueueFaults(Variant variant, uint32_t m, CallArgs& a);
  // One call of the case's kernel plugin, enqueued by the plugin on the stream.
  absl::Status LaunchPlugin(uint32_t m, uint32_t slot, CallArgs& a);
  // Waits for the stream, marked on the worker's page as inside the plugin's kernel when the
  // case runs one (a kernel that never finishes is named by the controller).
  absl::Status WaitStream(const char* what);
  CheckArgs CheckArgsFor(uint64_t call, uint32_t m, DiffAccum* accum) const;
  // The case's quantising epilogue as the kernels and the check take it (off without one); built
  // once, into quant_args_.
  QuantArgs QuantArgsFor() const;
  // Accumulator `d`'s quantised-output tally; the first bad row compared again on the host by the
  // one QuantChecker (its rule, code distances and errors) while the outputs hold the call.
  absl::StatusOr<QuantCheckSummary> QuantSummaryOf(const DiffAccum& d, int64_t call, bool values,
                                                   const std::string& note) const;
  absl::Status FirstBadText(const DiffAccum& d, int64_t call, bool values, const std::string& note,
                            std::string* msg) const;

  GpuBackend& b_;
  const worker::CasePlan& p_;
  const CaseShape& s_;
  uint8_t* own_;
  uint32_t threads_;
  uint8_t* residual_;
  uint8_t* residual_out_;
  uint8_t* out_;
  float* want_residual_out_;
  float* want_out_;
  uint8_t* weight_;
  DiffAccum* accum_;
  uint8_t* quant_codes_;
  float* quant_row_scales_;
  uint8_t* quant_block_scales_;
  QuantArgs quant_args_;
  uint64_t timeout_ns_;
  ToleranceProfile profile_;
  std::vector<DiffAccum> read_;  // accumulators as last read
  GraphExecHandle exec_;
  TbShape tb_;  // lamport_tb's own block shape (Prepare)
  // hang_end_sync fired on this rank: it launches no further call, as the cpu backend's rank
  // stops after the call that skipped its end barrier.
  bool stopped_ = false;
  worker::plugins::GroupPlugin* plugin_ = nullptr;  // a VARIANT_PLUGIN case's
  // The first call launched since the stream was last drained: the earliest whose kernel may not
  // have finished, which the page names while the host waits (the calls before it finished).
  uint64_t first_pending_call_ = 0;
};

GpuBackend::Runtime::Runtime(GpuBackend& b, const worker::CasePlan& plan)
    : b_(b),
      p_(plan),
      s_(plan.shape),
      own_(b.own_.get()),
      threads_(Rules::ThreadsOf(*plan.req)),
      timeout_ns_(plan.timeout_ms * 1'000'000ull),
      profile_(ProfileFor(worker::ToTolerance(plan.req->tolerance()), plan.shape.dtype)) {
  // The private buffers, where the backend's allocation has them (scratch_layout.h).
  const ScratchLayout& l = b.scratch_layout_;
  uint8_t* scratch = b.scratch_.get();
  residual_ = scratch + l.residual_offset;
  residual_out_ = scratch + l.residual_out_offset;
  out_ = scratch + l.out_offset;
  want_residual_out_ = reinterpret_cast<float*>(scratch + l.want_residual_out_offset);
  want_out_ = reinterpret_cast<float*>(scratch + l.want_out_offset);
  weight_ = scratch + l.weight_offset;
  accum_ = reinterpret_cast<DiffAccum*>(scratch + l.accum_offset);
  quant_codes_ = scratch + l.quant_codes_offset;
  quant_row_scales_ = reinterpret_cast<float*>(scratch + l.quant_row_scales_offset);
  quant_block_scales_ = scratch + l.quant_block_scales_offset;
  quant_args_ = QuantArgsFor();
  if (plan.variant == colltest::v1::VARIANT_PLUGIN) plugin_ = b.plugins_.Find(plan.req->plugin());
}

absl::Status GpuBackend::Runtime::Prepare() {
  COLLTEST_RETURN_IF_ERROR(b_.ClearHang());
  if (p_.variant == colltest::v1::VARIANT_LAMPORT_TB) {
    COLLTEST_RETURN_IF_ERROR(GpuOk(
        LamportTbBlockShape(b_.world_, s_.dtype, s_.n, p_.req->knobs().threads_per_block(), &tb_),
        "lamport_tb block shape"));
  }
  return GpuOk(LaunchWeight(s_.dtype, s_.pattern, s_.seed, s_.n, weight_, stream()),
               "generate weight");
}

absl::StatusOr<bool> GpuBackend::Runtime::Arm() {
  if (plugin_ != nullptr && !kernel_end_.has_value()) {
    const worker::plugins::EntryResult r = plugin_->Arm(stream());
    if (!r.ok()) kernel_end_ = worker::plugins::EndOf(plugin_->variant(), "arm", -1, r);
  }
  COLLTEST_ASSIGN_OR_RETURN(const bool armed,
                            b_.EnsureArmed(p_.variant, s_.dtype, p_.bytes, timeout_ns_));
  return !armed;
}

absl::StatusOr<bool> GpuBackend::Runtime::Drain() {
  COLLTEST_RETURN_IF_ERROR(WaitStream("run calls"));
  return b_.HangRecorded();
}

// The wait beats (the device is busy); its end is progress: everything enqueued completed.
absl::Status GpuBackend::Runtime::WaitStream(const char* what) {
  if (plugin_ == nullptr) {
    COLLTEST_RETURN_IF_ERROR(GpuOk(StreamSynchronizeBeating(stream()), what));
    worker::Advance();
    return absl::OkStatus();
  }
  const worker::InPluginScope inside(PluginEntry::kKernel, first_pending_call_);
  COLLTEST_RETURN_IF_ERROR(GpuOk(StreamSynchronizeBeating(stream()), what));
  first_pending_call_ = static_cast<uint64_t>(calls_);
  worker::Advance();
  return absl::OkStatus();
}

uint32_t GpuBackend::Runtime::Grid(Variant variant, uint32_t m) const {
  if (variant == colltest::v1::VARIANT_PLUGIN) return 0;  // the plugin picks its own
  // Every block of a spinning kernel must be co-resident and Signal slots are indexed by block:
  // clamp to both. The grid depends only on values equal on every rank (m, n, dtype, world, the
  // threads knob, the multiprocessor count and the occupancy of one binary on one device model).
  // Measured on 2 x H200 (bench/results/2026-11-30_h200x2_cuda_grid_policy): one_stage, lamport
  // and lamport_tb gain from every co-resident block up to 2 per SM at 512 threads (one row per
  // block in their norm phase); two_kernel's reduce-scatter is best near half the SMs (m = 256:
  // 24.1 us at 64 blocks, 28.4 us at 224), its end barrier costing more than the width buys.
  // lamport_tb's block is sized to the row: its own occupancy bounds it.
  const uint32_t limit = variant == colltest::v1::VARIANT_LAMPORT_TB
                             ? std::min(b_.ShareOf(static_cast<uint32_t>(
                                            std::max(tb_.blocks_per_sm, 1) * b_.multiprocessors_)),
                                        kMaxBlocks)
                             : b_.SpinLimit(threads_);
  const size_t packs = static_cast<size_t>(m) * s_.n / PackElems(s_.dtype);
  const uint32_t part_blocks = static_cast<uint32_t>((packs / b_.world_ + threads_ - 1) / threads_);
  uint32_t g;
  switch (variant) {
    case colltest::v1::VARIANT_ONE_STAGE:
      g = m;
      break;
    case colltest::v1::VARIANT_TWO_KERNEL:
      g = std::min(part_blocks, static_cast<uint32_t>(std::max(2, b_.multiprocessors_) / 2));
      break;
    case colltest::v1::VARIANT_LAMPORT_TB:
      // One row per block: a block pushes, clears and consumes its rows in turn, so more
      // co-resident blocks than rows buy nothing.
      g = m;
      break;
    default:
      g = std::max(m, part_blocks);
      break;
  }
  if (p_.req->knobs().grid_blocks() > 0) g = p_.req->knobs().grid_blocks();
  if (variant == colltest::v1::VARIANT_ONE_STAGE) g = std::min(g, m);
  return std::max(1u, std::min(g, limit));
}

absl::Status GpuBackend::Runtime::Generate(uint32_t slot, uint64_t call, uint32_t m) {
  GenerateArgs g{s_.dtype,
                 s_.pattern,
                 s_.seed,
                 call,
                 b_.rank_,
                 m,
                 s_.n,
                 own_ + b_.layout_.input_offset + slot * p_.slot_stride,
                 residual_ + slot * p_.slot_stride,
                 p_.world};
  return GpuOk(LaunchGenerate(g, stream()), "generate inputs");
}

// Every fault is enqueued on the stream or carried in the call's arguments, never done by the
// host at launch time: a graph captures it with the call, so replays run it too.
absl::Status GpuBackend::Runtime::EnqueueFaults(Variant variant, uint32_t m, CallArgs& a) {
  using Fault = common::FaultKind;
  const Fault fault = p_.fault.Targets(b_.rank_) ? p_.fault.kind : Fault::kNone;
  if (fault == Fault::kDelayRank) {
    COLLTEST_RETURN_IF_ERROR(
        GpuOk(LaunchFaultDelay(b_.group_, uint64_t{p_.fault.delay_us} * 1000, stream()),
              "delay (fault)"));
  }
  if (fault == Fault::kCrashRank && calls_ == 1) {
    COLLTEST_RETURN_IF_ERROR(
        GpuOk(LaunchHostFunc(stream(), &CrashWorker, nullptr), "crash (fault)"));
  }
  if (fault == Fault::kStallRank && calls_ == 1) {
    COLLTEST_RETURN_IF_ERROR(
        GpuOk(LaunchHostFunc(stream(), &StallWorker, nullptr), "stall (fault)"));
  }
  if (fault == Fault::kPoisonStaging && variant == colltest::v1::VARIANT_LAMPORT) {
    // Data where sentinels should be, as another kernel staging through the region between two
    // Lamport calls would leave it. Before this rank's start barrier, so no peer's store of this
    // call is overwritten.
    COLLTEST_RETURN_IF_ERROR(GpuOk(MemsetAsync(own_ + b_.layout_.lamport_offset, 0x3f,
                                               static_cast<size_t>(m) * s_.n * p_.elem, stream()),
                                   "poison staging (fault)"));
  }
  if (fault == Fault::kSkipRearm) a.arm_repeat = 0;
  if (fault == Fault::kSkipCanonicalize) a.faults |= kFaultSkipCanonicalize;
  if (fault == Fault::kHangEndSync) a.faults |= kFaultSkipEndSync;
  return absl::OkStatus();
}

absl::Status GpuBackend::Runtime::Launch(Variant variant, uint32_t m, uint32_t slot) {
  CallArgs a;
  a.m = m;
  a.n = s_.n;
  a.residual = s_.residual;
  a.eps = s_.eps;
  a.input_offset = slot * p_.slot_stride;
  a.residual_in = residual_ + slot * p_.slot_stride;
  a.weight = weight_;
  a.residual_out = residual_out_;
  a.out = out_;
  a.arm_repeat = std::max(1u, p_.req->knobs().arm_repeat());
  a.timeout_ns = timeout_ns_;
  a.quant = quant_args_;
  if (stopped_) return absl::OkStatus();
  if (variant == colltest::v1::VARIANT_PLUGIN) return LaunchPlugin(m, slot, a);
  COLLTEST_RETURN_IF_ERROR(EnqueueFaults(variant, m, a));
  const uint32_t grid = Grid(variant, m);
  const DType t = s_.dtype;
  const DeviceGroup& group = b_.group_;
  // The variant picks its launcher here, once; each launcher picks its kernel's instantiation
  // (kernel_dispatch.h).
  KernelStatus e;
  switch (variant) {
    case colltest::v1::VARIANT_ONE_STAGE:
      e = LaunchOneStage(t, group, a, grid, threads_, stream());
      break;
    case colltest::v1::VARIANT_TWO_KERNEL:
      e = LaunchReduceScatter(t, group, a, grid, threads_, stream());
      if (e.ok()) {
        // The second kernel does not spin: size it for the rows.
        const uint32_t rows_grid = std::max(1u, std::min<uint32_t>(m, b_.multiprocessors_ * 4));
        e = LaunchLoadNorm(t, group, a, rows_grid, threads_, stream());
      }
      break;
    case colltest::v1::VARIANT_LAMPORT:
      e = LaunchLamport(t, group, a, grid, threads_, stream());
      break;
    case colltest::v1::VARIANT_LAMPORT_TB:
      e = LaunchLamportTb(t, group, a, grid, tb_.threads, stream());
      break;
    case colltest::v1::VARIANT_LAMPORT_TWO_SHOT:
      e = LaunchLamportTwoShot(t, group, a, grid, threads_, stream());
      break;
    case colltest::v1::VARIANT_NCCL: {
      // NCCL sums this call's registered input slot into its staging; our norm kernel follows.
      const absl::Status s =
          b_.nccl_.Launch(t, own_ + b_.layout_.input_offset + a.input_offset, a,
                          static_cast<uint32_t>(b_.multiprocessors_) * 4, threads_, stream());
      ++calls_;
      return s;
    }
    default:
      return absl::InvalidArgumentError("variant has no kernel");
  }
  ++calls_;
  if (e.ok() && (a.faults & kFaultSkipEndSync) != 0) {
    // This rank left without its end barrier and stops here, so its peers wait for it until
    // their timeout and name it.
    e = LaunchFaultStop(group, stream());
    stopped_ = true;
  }
  worker::Advance();  // a call enqueued: the host's progress; the stream's shows at WaitStream
  return GpuOk(e, "launch");
}

// The plugin gets device pointers into this rank's buffers and the stream; its all-reduce goes
// through the workspaces it got at init. The faults from outside are enqueued before it, as for
// colltest's kernels; a missing rank launches nothing.
absl::Status GpuBackend::Runtime::LaunchPlugin(uint32_t m, uint32_t slot, CallArgs& a) {
  if (kernel_end_.has_value()) return absl::OkStatus();  // refused or failed: nothing more runs
  const bool missing =
      p_.fault.kind == common::FaultKind::kMissingRank && p_.fault.Targets(b_.rank_);
  if (missing) {
    kernel_end_ = worker::plugins::MissingRankEnd(plugin_->variant(), b_.rank_);
    return absl::OkStatus();
  }
  COLLTEST_RETURN_IF_ERROR(EnqueueFaults(colltest::v1::VARIANT_PLUGIN, m, a));
  worker::plugins::CallBuffers buffers;
  buffers.input = own_ + b_.layout_.input_offset + a.input_offset;
  buffers.residual_in = s_.residual ? a.residual_in : nullptr;
  buffers.residual_out = residual_out_;
  buffers.weight = weight_;
  buffers.out = out_;
  buffers.codes = quant_codes_;
  buffers.row_scales = quant_row_scales_;
  buffers.block_scales = quant_block_scales_;
  const uint64_t index = static_cast<uint64_t>(calls_);
  const colltest_launch_v1_t call = worker::plugins::LaunchOf(buffers, *p_.req, p_.quant, s_.eps, m,
                                                              index, static_cast<void*>(stream()));
  ++calls_;
  const worker::plugins::EntryResult r = plugin_->Launch(call);
  if (!r.ok()) {
    kernel_end_ =
        worker::plugins::EndOf(plugin_->variant(), "launch", static_cast<int64_t>(index), r);
  }
  return absl::OkStatus();
}

absl::Status GpuBackend::Runtime::EndCapture(bool keep) {
  GraphHandle graph;
  const Error ended = EndCaptureInto(stream(), &graph);
  if (!keep) return absl::OkStatus();  // the failed record's error is the one reported
  COLLTEST_RETURN_IF_ERROR(GpuOk(ended, "end capture"));
  return GpuOk(Instantiate(graph, &exec_), "instantiate graph");
}

absl::Status GpuBackend::Runtime::ClearChecks(uint32_t count) {
  read_.assign(count, NoAccum());
  return ClearAccums(accum_, count, stream());
}

CheckArgs GpuBackend::Runtime::CheckArgsFor(uint64_t call, uint32_t m, DiffAccum* accum) const {
  return CheckArgs{
      s_.dtype, s_.pattern, s_.seed,       call, p_.world,           m,         s_.n,  s_.residual,
      s_.eps,   profile_,   residual_out_, out_, want_residual_out_, want_out_, accum, quant_args_};
}

QuantArgs GpuBackend::Runtime::QuantArgsFor() const {
  const QuantPlan& plan = p_.quant;
  QuantArgs q;
  if (!plan.scheme.has_value()) return q;
  q.on = true;
  q.scheme = *plan.scheme;
  q.format = plan.format;
  q.keep_normed = plan.keep_normed;
  q.fp8_scale = plan.fp8_scale;
  q.nvfp4_global = plan.nvfp4_global_scale;
  q.world = p_.world;
  q.breaks = plan.breaks;
  q.tolerance = plan.tolerance;
  q.codes = quant_codes_;
  q.row_scales = quant_row_scales_;
  q.block_scales = quant_block_scales_;
  return q;
}

absl::StatusOr<QuantCheckSummary> GpuBackend::Runtime::QuantSummaryOf(
    const DiffAccum& d, int64_t call, bool values, const std::string& note) const {
  QuantCheckSummary q = QuantCountsOf(d);
  if (q.passed || d.quant_first_bad_row == ~0ull) return q;
  const auto row = static_cast<uint32_t>(d.quant_first_bad_row);
  q.first_bad_call = call;
  if (!values) {
    q.rule = QuantRule::kUnexplained;
    q.first_bad = absl::StrCat("row ", row, " (call ", call, note, ")");
    return q;
  }
  const QuantPlan& plan = p_.quant;
  const uint32_t n = s_.n;
  std::vector<float> y(n);
  std::vector<uint8_t> codes(QuantCodeBytesPerRow(plan, n));
  std::vector<uint8_t> blocks(QuantBlockScalesPerRow(plan, n));
  float row_scale = 0;
  COLLTEST_RETURN_IF_ERROR(
      GpuOk(MemcpyToHost(y.data(), want_out_ + static_cast<size_t>(row) * n, n * sizeof(float)),
            "read first bad row"));
  COLLTEST_RETURN_IF_ERROR(
      GpuOk(MemcpyToHost(codes.data(), quant_codes_ + static_cast<size_t>(row) * codes.size(),
                         codes.size()),
            "read first bad row"));
  if (!blocks.empty()) {
    COLLTEST_RETURN_IF_ERROR(GpuOk(
        MemcpyToHost(blocks.data(), quant_block_scales_ + static_cast<size_t>(row) * blocks.size(),
                     blocks.size()),
        "read first bad row"));
  }
  if (QuantRowScalesPerRow(plan) > 0) {
    COLLTEST_RETURN_IF_ERROR(GpuOk(
        MemcpyToHost(&row_scale, quant_row_scales_ + row, sizeof row_scale), "read first bad row"));
  }
  QuantChecker checker(plan, s_.dtype);
  checker.CompareRow(call, row, y.data(), n,
                     ReadQuantizedRow(plan, n, codes.data(), &row_scale, blocks.data()));
  const QuantCheckSummary& r = checker.Summary();
  q.rule = r.passed ? QuantRule::kUnexplained : r.rule;
  q.max_code_distance = r.max_code_distance;
  q.nan_codes = r.nan_codes;
  q.max_scale_rel_err = r.max_scale_rel_err;
  q.max_dequant_err = r.max_dequant_err;
  q.expected_dequant_err = r.expected_dequant_err;
  q.first_bad = r.first_bad.empty() ? absl::StrCat("row ", row) : r.first_bad;
  worker::RenameFirstBadCall(q.first_bad, q.first_bad_call, call, note);
  return q;
}

absl::Status GpuBackend::Runtime::Check(uint64_t call, uint32_t m, uint32_t index) {
  return GpuOk(LaunchCheck(CheckArgsFor(call, m, accum_ + index), stream()), "check");
}

absl::StatusOr<std::vector<uint64_t>> GpuBackend::Runtime::ReadChecks(uint32_t count) {
  COLLTEST_RETURN_IF_ERROR(GpuOk(StreamSynchronizeBeating(stream()), "check"));
  read_.resize(std::max<size_t>(read_.size(), count), NoAccum());
  COLLTEST_RETURN_IF_ERROR(
      GpuOk(MemcpyToHost(read_.data(), accum_, count * sizeof(DiffAccum)), "read diff"));
  std::vector<uint64_t> mismatches(count);
  for (uint32_t c = 0; c < count; ++c) {
    mismatches[c] = read_[c].mismatches + QuantCountsOf(read_[c]).failures();
  }
  return mismatches;
}

// "out[3,17] got 1.5 want 1.25 (call 7<note>)"; the values only while the outputs and the
// reference still hold the checked call's.
absl::Status GpuBackend::Runtime::FirstBadText(const DiffAccum& d, int64_t call, bool values,
                                               const std::string& note, std::string* msg) const {
  const bool is_out = (d.first_bad_key >> 62) != 0;
  const size_t index = d.first_bad_key & ((1ull << 62) - 1);
  *msg = is_out ? "out" : "residual_out";
  absl::StrAppend(msg, "[", index / s_.n, ",", index % s_.n, "]");
  if (values) {
    uint32_t got_bits = 0;
    float want = 0;
    const uint8_t* got = (is_out ? out_ : residual_out_) + index * p_.elem;
    const float* wants = is_out ? want_out_ : want_residual_out_;
    COLLTEST_RETURN_IF_ERROR(GpuOk(MemcpyToHost(&got_bits, got, p_.elem), "read first bad"));
    COLLTEST_RETURN_IF_ERROR(
        GpuOk(MemcpyToHost(&want, wants + index, sizeof want), "read first bad"));
    *msg += " got ";
    AppendFloat(*msg, ElemFromBits(s_.dtype, got_bits));
    *msg += " want ";
    AppendFloat(*msg, want);
  }
  absl::StrAppend(msg, " (call ", call, note, ")");
  return absl::OkStatus();
}

absl::Status GpuBackend::Runtime::FoldCheck(uint32_t index, int64_t call, bool values,
                                            const std::string& note) {
  const DiffAccum& d = read_.at(index);
  DiffSummary s = SummaryOf(d);
  if (d.first_bad_key != ~0ull && diff_.first_bad.empty()) {
    COLLTEST_RETURN_IF_ERROR(FirstBadText(d, call, values, note, &s.first_bad));
    s.first_bad_call = call;
  }
  worker::MergeDiff(s, profile_.min_pass_fraction, &diff_);
  if (p_.quant.scheme.has_value()) {
    COLLTEST_ASSIGN_OR_RETURN(const QuantCheckSummary q, QuantSummaryOf(d, call, values, note));
    MergeQuantCheck(q, &quant_);
  }
  return absl::OkStatus();
}

worker::HangFacts GpuBackend::Runtime::Hang() const {
  const volatile HangRecord* r = b_.hang_host_.get();
  return worker::HangFacts{r->peer, PhaseName(r->phase), r->block, r->pack};
}

absl::StatusOr<colltest::v1::RankResult> GpuBackend::RunCase(
    const colltest::worker::v1::CaseRequest& req) {
  if (!connected_) return absl::FailedPreconditionError("RunCase before Connect");
  COLLTEST_RETURN_IF_ERROR(UseDevice());
  return worker::RunCase(
      req, rank_, world_, options_.device, Rules(*this),
      [this](const worker::CasePlan& plan) -> absl::StatusOr<std::unique_ptr<worker::CaseRuntime>> {
        auto runtime = std::make_unique<Runtime>(*this, plan);
        COLLTEST_RETURN_IF_ERROR(runtime->Prepare());
        return std::unique_ptr<worker::CaseRuntime>(std::move(runtime));
      });
}

}  // namespace colltest::gpu
