// CpuBackend::RunCase: the cpu backend's CaseRuntime under the one case driver
// (worker/case_driver.h). Calls run on the block threads when launched; a capture records them,
// with the faults decided at launch as a GPU graph captures them, and a replay runs the record.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/backends/cpu/cpu_backend.h"
#include "worker/backends/cpu/elem.h"
#include "worker/case_config.h"
#include "worker/case_driver.h"
#include "worker/heartbeat.h"
#include "worker/numerics/diff.h"
#include "worker/numerics/quant_checker.h"
#include "worker/numerics/quant_plan.h"
#include "worker/plugins/plugin_launch.h"
#include "worker/plugins/plugin_rules.h"
#include "worker/rank_report.h"

namespace colltest::cpu {

using colltest::v1::Variant;
using Clock = std::chrono::steady_clock;

namespace {

// The host clock around calls that run to completion before Launch returns.
class HostTimer final : public worker::CaseTimer {
 public:
  absl::Status Start() override {
    t0_ = Clock::now();
    return absl::OkStatus();
  }
  absl::Status Stop() override {
    samples_.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0_).count());
    return absl::OkStatus();
  }
  std::vector<double> Samples(double divide) const override {
    std::vector<double> out;
    for (double us : samples_) out.push_back(us / divide);
    return out;
  }

 private:
  Clock::time_point t0_;
  std::vector<double> samples_;
};

// `count` elements of T from `bytes`, as floats.
std::vector<float> ToFloats(DType t, const uint8_t* bytes, size_t count) {
  const size_t elem = ElemBytes(t);
  std::vector<float> f(count);
  for (size_t i = 0; i < count; ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, bytes + i * elem, elem);  // little-endian: low bytes hold T
    f[i] = t == DType::kBf16   ? Bf16ToFloat(bits)
           : t == DType::kFp16 ? Fp16ToFloat(bits)
                               : BitsToFloat(bits);
  }
  return f;
}

}  // namespace

class CpuBackend::Rules final : public worker::CaseRules {
 public:
  explicit Rules(const CpuBackend& b) : b_(b), layout_(b.layout_) {}
  size_t capacity() const override { return layout_.capacity; }
  size_t tb_capacity() const override { return layout_.tb_capacity; }
  uint32_t max_slots() const override { return kMaxInputSlots; }
  absl::StatusOr<std::string> RefuseVariant(
      const colltest::worker::v1::CaseRequest& req) const override {
    if (req.variant() == colltest::v1::VARIANT_NCCL) {
      return "nccl: NCCL/RCCL exist only on GPU backends";
    }
    if (req.variant() == colltest::v1::VARIANT_AUTO) {
      return "auto: dispatches between GPU kernels by a measured crossover table; none on the cpu "
             "backend";
    }
    if (req.variant() == colltest::v1::VARIANT_PLUGIN) {
      return worker::plugins::RefusePluginCase(b_.plugins_, req, b_.world_, b_.rank_,
                                               COLLTEST_BACKEND_CPU);
    }
    return "";
  }
  absl::StatusOr<std::string> RefuseShape(const worker::CasePlan&) const override { return ""; }

 private:
  const CpuBackend& b_;
  const RankLayout& layout_;
};

class CpuBackend::Runtime final : public worker::CaseRuntime {
 public:
  Runtime(CpuBackend& b, const worker::CasePlan& plan);

  absl::StatusOr<bool> Arm() override;
  absl::Status Generate(uint32_t slot, uint64_t call, uint32_t m) override;
  absl::Status Launch(Variant variant, uint32_t m, uint32_t slot) override;
  absl::StatusOr<bool> Drain() override { return hung_; }
  absl::Status Settle(const char*) override {
    b_.pending_.Drain();
    return absl::OkStatus();
  }
  std::unique_ptr<worker::CaseTimer> NewTimer() override { return std::make_unique<HostTimer>(); }
  absl::Status BeginCapture() override;
  absl::Status EndCapture(bool keep) override;
  absl::Status Replay() override;
  bool FirstReplayWarms() const override { return false; }
  // Checks compare on the host, each into its own DiffChecker and QuantChecker; a capture
  // records them.
  absl::Status ClearChecks(uint32_t count) override {
    accums_.assign(count, DiffChecker(s_.dtype, profile_));
    read_.assign(count, DiffSummary{});
    quant_accums_.assign(count, QuantChecker(p_.quant, s_.dtype));
    quant_read_.assign(count, QuantCheckSummary{});
    return absl::OkStatus();
  }
  absl::Status Check(uint64_t call, uint32_t m, uint32_t index) override;
  absl::StatusOr<std::vector<uint64_t>> ReadChecks(uint32_t count) override {
    std::vector<uint64_t> mismatches(count);
    for (uint32_t c = 0; c < count && c < accums_.size(); ++c) {
      read_[c] = accums_[c].Summary();
      quant_read_[c] = quant_accums_[c].Summary();
      mismatches[c] = read_[c].mismatches + quant_read_[c].failures();
    }
    return mismatches;
  }
  absl::Status FoldCheck(uint32_t index, int64_t call, bool values,
                         const std::string& note) override;
  uint32_t Grid(Variant variant, uint32_t m) const override;
  worker::HangFacts Hang() const override {
    const HangRecord h = b_.guard_.record();
    // The cpu's waits do not record the pack they waited for.
    return worker::HangFacts{h.awaited_peer, h.phase, h.block, std::nullopt};
  }

 private:
  // One call as launched: its arguments and the faults decided for it then.
  struct Call {
    Variant variant;
    uint32_t m;
    uint32_t slot;
    bool crash;
    bool stall;
    uint64_t index;  // the call's index in the case, from 0
  };
  void Run(const Call& call);
  void RunPlugin(const Call& call);
  // A kernel plugin's answer other than OK ends the case with it (CaseRuntime::kernel_end).
  void EndByPlugin(const char* entry, int64_t call, const worker::plugins::EntryResult& r);
  void RunCheck(uint64_t call, uint32_t m, uint32_t index);
  void CheckQuant(uint64_t call, uint32_t m, const std::vector<float>& want_out, uint32_t index);
  QuantOutputs QuantBuffers();
  void Inject(const Call& call);
  template <DType D>
  void LaunchTyped(Variant variant, const CallArgs& args, uint32_t grid);

  CpuBackend& b_;
  const worker::CasePlan& p_;
  const CaseShape& s_;
  worker::plugins::GroupPlugin* plugin_ = nullptr;  // a VARIANT_PLUGIN case's
  // The rules in force for this case: the backend's, plus an injected fault's.
  ProtocolBreaks breaks_;
  common::FaultKind fault_ = common::FaultKind::kNone;  // aimed at this rank
  ToleranceProfile profile_;
  std::vector<uint8_t> weight_;
  std::vector<uint8_t> residual_;     // slots x slot_stride, private
  std::vector<float> generated_row_;  // Generate's row of values, reused by every call
  std::vector<uint8_t> residual_out_;
  std::vector<uint8_t> out_;
  // The quantised outputs of a quantising epilogue (QuantOutputs), m rows at the largest m.
  std::vector<uint8_t> codes_;
  std::vector<float> row_scales_;
  std::vector<uint8_t> block_scales_;
  std::vector<DiffChecker> accums_;
  std::vector<DiffSummary> read_;  // accumulators as last read
  std::vector<QuantChecker> quant_accums_;
  std::vector<QuantCheckSummary> quant_read_;
  bool capturing_ = false;
  std::vector<std::function<void()>> recorded_;
  // hang_end_sync fired at a launch: this rank launches nothing more (decided at launch, as a
  // GPU stream decides it when it enqueues).
  bool stopped_ = false;
  bool hung_ = false;  // a call gave up or the case was cancelled: nothing more runs
};

CpuBackend::Runtime::Runtime(CpuBackend& b, const worker::CasePlan& plan)
    : b_(b),
      p_(plan),
      s_(plan.shape),
      breaks_(b.options_.breaks),
      profile_(ProfileFor(worker::ToTolerance(plan.req->tolerance()), plan.shape.dtype)) {
  using Fault = common::FaultKind;
  if (plan.variant == colltest::v1::VARIANT_PLUGIN) plugin_ = b.plugins_.Find(plan.req->plugin());
  if (plan.fault.Targets(plan.rank)) fault_ = plan.fault.kind;
  if (fault_ == Fault::kSkipRearm) breaks_.skip_rearm = true;
  if (fault_ == Fault::kSkipCanonicalize) breaks_.skip_canonicalize = true;
  if (fault_ == Fault::kHangEndSync) breaks_.skip_end_sync = true;
  weight_.resize(static_cast<size_t>(s_.n) * p_.elem);
  for (uint32_t col = 0; col < s_.n; ++col) {
    const uint32_t w = StoredBits(s_.dtype, WeightValue(s_.pattern, s_.dtype, s_.seed, col));
    std::memcpy(weight_.data() + col * p_.elem, &w, p_.elem);
  }
  residual_.resize(p_.slots * p_.slot_stride);
  residual_out_.resize(p_.bytes);
  out_.resize(p_.bytes);
  const QuantPlan& q = p_.quant;
  codes_.resize(static_cast<size_t>(s_.m) * QuantCodeBytesPerRow(q, s_.n));
  row_scales_.resize(static_cast<size_t>(s_.m) * QuantRowScalesPerRow(q));
  block_scales_.resize(static_cast<size_t>(s_.m) * QuantBlockScalesPerRow(q, s_.n));
}

QuantOutputs CpuBackend::Runtime::QuantBuffers() {
  if (!p_.quant.scheme.has_value()) return QuantOutputs{};
  return QuantOutputs{&p_.quant, codes_.data(), row_scales_.data(), block_scales_.data(), p_.world};
}

absl::StatusOr<bool> CpuBackend::Runtime::Arm() {
  if (plugin_ != nullptr && !kernel_end_.has_value()) {
    EndByPlugin("arm", -1, plugin_->Arm(nullptr));
  }
  b_.guard_.Arm(Clock::now() + std::chrono::milliseconds(p_.timeout_ms));
  hung_ = !b_.EnsureArmed(p_.variant, s_.dtype, p_.bytes);
  return hung_;
}

uint32_t CpuBackend::Runtime::Grid(Variant variant, uint32_t m) const {
  if (variant == colltest::v1::VARIANT_PLUGIN) return 0;  // the plugin picks its own
  // Every block of a kernel that waits for other blocks must be co-resident, and Signal slots are
  // indexed by block: clamp to both. The grid depends only on values equal on every rank.
  uint32_t limit = std::min(b_.pool_->resident(), kMaxBlocks);
  const uint32_t knob = p_.req->knobs().grid_blocks();
  uint32_t g = std::min(knob > 0 ? knob : limit, limit);
  if (breaks_.rank_dependent_grid) g = std::min(g + b_.rank_, limit);  // tests only
  if (variant == colltest::v1::VARIANT_ONE_STAGE) g = std::min(g, m);
  return std::max(g, 1u);
}

absl::Status CpuBackend::Runtime::Generate(uint32_t slot, uint64_t call, uint32_t m) {
  if (hung_) return absl::OkStatus();  // nothing will read them
  uint8_t* input = b_.group_.self().input() + slot * p_.slot_stride;
  uint8_t* residual = residual_.data() + slot * p_.slot_stride;
  // The bulk row forms hash each stream once per row, not once per element: per element, at
  // W = 8, m = 257, n = 7168, generating took longer than the call it feeds.
  std::vector<float>& row_values = generated_row_;
  row_values.resize(s_.n);
  for (uint32_t row = 0; row < m; ++row) {
    worker::Advance();
    const size_t at = static_cast<size_t>(row) * s_.n * p_.elem;
    InputRow(s_.pattern, s_.dtype, s_.seed, call, s_.world, b_.rank_, row, s_.n, row_values.data());
    StoreRow(s_.dtype, row_values.data(), s_.n, input + at);
    ResidualRow(s_.pattern, s_.dtype, s_.seed, call, row, s_.n, row_values.data());
    StoreRow(s_.dtype, row_values.data(), s_.n, residual + at);
  }
  return absl::OkStatus();
}

absl::Status CpuBackend::Runtime::Launch(Variant variant, uint32_t m, uint32_t slot) {
  // A stopped or hung rank launches nothing more (the cpu runs an eager call at launch).
  if (stopped_ || hung_) return absl::OkStatus();
  using Fault = common::FaultKind;
  const Call call{variant,
                  m,
                  slot,
                  fault_ == Fault::kCrashRank && calls_ == 1,
                  fault_ == Fault::kStallRank && calls_ == 1,
                  static_cast<uint64_t>(calls_)};
  ++calls_;
  // The injected hang: this rank leaves without its end barrier and stops after this call.
  if (breaks_.skip_end_sync) stopped_ = true;
  if (capturing_) {
    recorded_.push_back([this, call] { Run(call); });
  } else {
    Run(call);
  }
  return absl::OkStatus();
}

// The faults done by the host before a call: what a GPU stream runs before the call's kernels.
void CpuBackend::Runtime::Inject(const Call& call) {
  using Fault = common::FaultKind;
  if (fault_ == Fault::kDelayRank) {
    std::this_thread::sleep_for(std::chrono::microseconds(p_.fault.delay_us));
  }
  if (call.crash) std::abort();    // the injected crash: a worker that dies in the middle of a case
  if (call.stall) raise(SIGSTOP);  // the injected stall: the whole process stops, as if wedged
  if (fault_ == Fault::kPoisonStaging && call.variant == colltest::v1::VARIANT_LAMPORT) {
    // The injected stale staging: data where sentinels should be, as another kernel staging
    // through the region between two Lamport calls would leave it. Before this rank's start
    // barrier, so no peer's store of this call is overwritten.
    std::memset(breaks_.shared_staging ? b_.group_.self().tmp() : b_.group_.self().lamport(), 0x3f,
                static_cast<size_t>(call.m) * s_.n * p_.elem);
  }
}

void CpuBackend::Runtime::Run(const Call& call) {
  if (hung_) return;
  if (worker::CancelRequested()) {
    // Between two calls: the case ends here, and nothing more runs.
    b_.guard_.RecordHang(0, -1, kCancelledPhase);
    hung_ = true;
    return;
  }
  Inject(call);
  b_.guard_.Arm(Clock::now() + std::chrono::milliseconds(p_.timeout_ms));
  CallArgs args;
  args.m = call.m;
  args.n = s_.n;
  args.residual = s_.residual;
  args.eps = s_.eps;
  args.input_offset = call.slot * p_.slot_stride;
  args.residual_in = residual_.data() + call.slot * p_.slot_stride;
  args.weight = weight_.data();
  args.residual_out = residual_out_.data();
  args.out = out_.data();
  args.arm_repeat = std::max(1u, p_.req->knobs().arm_repeat());
  args.quant = QuantBuffers();
  if (call.variant == colltest::v1::VARIANT_PLUGIN) {
    RunPlugin(call);
    worker::Advance();
    return;
  }
  const uint32_t grid = Grid(call.variant, call.m);
  switch (s_.dtype) {
    case DType::kBf16:
      LaunchTyped<DType::kBf16>(call.variant, args, grid);
      break;
    case DType::kFp16:
      LaunchTyped<DType::kFp16>(call.variant, args, grid);
      break;
    case DType::kFp32:
      LaunchTyped<DType::kFp32>(call.variant, args, grid);
      break;
  }
  worker::Advance();
  if (breaks_.skip_end_sync) {
    // The injected hang: its peers wait for this rank until their timeout and name it.
    b_.guard_.RecordHang(0, -1, "fault: hang_end_sync");
    hung_ = true;
    return;
  }
  hung_ = b_.guard_.aborted();
}

// One call of a kernel plugin, on this thread: host pointers into this rank's buffers, no stream.
// Its all-reduce goes through the workspaces the plugin got at init, not through colltest's.
void CpuBackend::Runtime::RunPlugin(const Call& call) {
  if (kernel_end_.has_value()) return;  // it refused or failed: nothing more runs
  if (fault_ == common::FaultKind::kMissingRank) {
    kernel_end_ = worker::plugins::MissingRankEnd(plugin_->variant(), b_.rank_);
    return;
  }
  worker::plugins::CallBuffers b;
  b.input = b_.group_.self().input() + call.slot * p_.slot_stride;
  b.residual_in = s_.residual ? residual_.data() + call.slot * p_.slot_stride : nullptr;
  b.residual_out = residual_out_.data();
  b.weight = weight_.data();
  b.out = out_.data();
  b.codes = codes_.data();
  b.row_scales = row_scales_.data();
  b.block_scales = block_scales_.data();
  const colltest_launch_v1_t l =
      worker::plugins::LaunchOf(b, *p_.req, p_.quant, s_.eps, call.m, call.index, nullptr);
  EndByPlugin("launch", static_cast<int64_t>(call.index), plugin_->Launch(l));
}

void CpuBackend::Runtime::EndByPlugin(const char* entry, int64_t call,
                                      const worker::plugins::EntryResult& r) {
  if (r.ok() || kernel_end_.has_value()) return;
  kernel_end_ = worker::plugins::EndOf(plugin_->variant(), entry, call, r);
}

template <DType D>
void CpuBackend::Runtime::LaunchTyped(Variant variant, const CallArgs& args, uint32_t grid) {
  const ProtocolBreaks* breaks = &breaks_;
  auto launch = [&](void (*body)(const BlockContext&, const CallArgs&)) {
    b_.pool_->Launch(grid, [&](uint32_t block, uint32_t g, PostedStores& posted) {
      if (b_.guard_.aborted()) return;
      BlockContext ctx{&b_.group_, block, g, &b_.guard_, &posted, breaks};
      body(ctx, args);
    });
  };
  switch (variant) {
    case colltest::v1::VARIANT_ONE_STAGE:
      launch(&OneStageBlock<D>);
      break;
    case colltest::v1::VARIANT_TWO_KERNEL:
      launch(&ReduceScatterBlock<D>);
      if (!b_.guard_.aborted()) launch(&LoadNormBlock<D>);
      break;
    case colltest::v1::VARIANT_LAMPORT:
      launch(&LamportBlock<D>);
      break;
    case colltest::v1::VARIANT_LAMPORT_TB:
      launch(&LamportTbBlock<D>);
      break;
    case colltest::v1::VARIANT_LAMPORT_TWO_SHOT:
      launch(&LamportTwoShotBlock<D>);
      break;
    default:
      break;
  }
}

absl::Status CpuBackend::Runtime::BeginCapture() {
  capturing_ = true;
  recorded_.clear();
  return absl::OkStatus();
}

absl::Status CpuBackend::Runtime::EndCapture(bool keep) {
  capturing_ = false;
  if (!keep) recorded_.clear();
  return absl::OkStatus();
}

absl::Status CpuBackend::Runtime::Replay() {
  for (const std::function<void()>& step : recorded_) step();
  return absl::OkStatus();
}

absl::Status CpuBackend::Runtime::Check(uint64_t call, uint32_t m, uint32_t index) {
  if (index >= accums_.size()) return absl::InternalError("check: no such accumulator");
  if (capturing_) {
    recorded_.push_back([this, call, m, index] { RunCheck(call, m, index); });
  } else {
    RunCheck(call, m, index);
  }
  return absl::OkStatus();
}

void CpuBackend::Runtime::RunCheck(uint64_t call, uint32_t m, uint32_t index) {
  if (hung_) return;
  CaseShape shape = s_;
  shape.m = m;
  const ReferenceRows want = ComputeReference(shape, call, &worker::Advance);
  const size_t count = static_cast<size_t>(m) * shape.n;
  const std::vector<float> got_res = ToFloats(s_.dtype, residual_out_.data(), count);
  // Without keep_normed a quantising epilogue leaves out unwritten, and it is not checked.
  const std::vector<float> got_out =
      p_.quant.writes_out() ? ToFloats(s_.dtype, out_.data(), count) : std::vector<float>();
  accums_[index].CompareRows(static_cast<int64_t>(call), m, shape.n, got_res.data(),
                             got_out.empty() ? nullptr : got_out.data(), want.residual_out.data(),
                             want.out.data(), &worker::Advance);
  if (p_.quant.scheme.has_value()) CheckQuant(call, m, want.out, index);
}

// Each row of the reference's out (rounded to T) quantised by the rules against the kernel's
// codes and scales of that row.
void CpuBackend::Runtime::CheckQuant(uint64_t call, uint32_t m, const std::vector<float>& want_out,
                                     uint32_t index) {
  const QuantPlan& q = p_.quant;
  const uint32_t n = s_.n;
  for (uint32_t row = 0; row < m; ++row) {
    worker::Advance();
    const QuantizedRow got = ReadQuantizedRow(
        q, n, codes_.data() + static_cast<size_t>(row) * QuantCodeBytesPerRow(q, n),
        row_scales_.data() + static_cast<size_t>(row) * QuantRowScalesPerRow(q),
        block_scales_.data() + static_cast<size_t>(row) * QuantBlockScalesPerRow(q, n));
    quant_accums_[index].CompareRow(static_cast<int64_t>(call), row,
                                    want_out.data() + static_cast<size_t>(row) * n, n, got);
  }
}

absl::Status CpuBackend::Runtime::FoldCheck(uint32_t index, int64_t call, bool /*values*/,
                                            const std::string& note) {
  // The cpu compared values on the host, so its first-bad text always carries them.
  DiffSummary s = read_.at(index);
  worker::RenameFirstBadCall(s.first_bad, s.first_bad_call, call, note);
  worker::MergeDiff(s, profile_.min_pass_fraction, &diff_);
  QuantCheckSummary q = quant_read_.at(index);
  worker::RenameFirstBadCall(q.first_bad, q.first_bad_call, call, note);
  MergeQuantCheck(q, &quant_);
  return absl::OkStatus();
}

absl::StatusOr<colltest::v1::RankResult> CpuBackend::RunCase(
    const colltest::worker::v1::CaseRequest& req) {
  if (!connected_) return absl::FailedPreconditionError("RunCase before Connect");
  // The page names nobody until a wait of this case does: a wait of the last case that timed out
  // kept naming its peer, and a case that ends before arming (missing_rank) must not repeat it.
  guard_.Arm(Clock::now());
  return worker::RunCase(
      req, rank_, world_, options_.device, Rules(*this),
      [this](const worker::CasePlan& plan) -> absl::StatusOr<std::unique_ptr<worker::CaseRuntime>> {
        return std::make_unique<Runtime>(*this, plan);
      });
}

}  // namespace colltest::cpu
