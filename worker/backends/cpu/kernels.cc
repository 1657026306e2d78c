#include "worker/backends/cpu/kernels.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "worker/backends/cpu/barrier.h"
#include "worker/backends/cpu/elem.h"
#include "worker/backends/cpu/lamport_protocol.h"
#include "worker/heartbeat.h"
#include "worker/protocol/partition.h"
#include "worker/protocol/triple_buffer.h"

namespace colltest::cpu {
namespace {

using protocol::kPackBytes;
using protocol::OwnerOf;
using protocol::Part;
using protocol::PartOf;
using protocol::TbStaged;

// Per-thread row scratch, reused across calls.
std::vector<float>& RowScratch(uint32_t n) {
  thread_local std::vector<float> row;
  if (row.size() < n) row.resize(n);
  return row;
}

template <DType D>
void UnpackTo(const Pack& p, float* dst) {
  using S = typename Elem<D>::Storage;
  S lanes[kPackElems<D>];
  std::memcpy(lanes, p.w, sizeof lanes);
  for (uint32_t i = 0; i < kPackElems<D>; ++i) dst[i] = Elem<D>::ToFloat(lanes[i]);
}

// The pack of T holding `f`, each element rounded to T.
template <DType D>
Pack PackOf(const float (&f)[kPackElems<D>]) {
  using S = typename Elem<D>::Storage;
  S lanes[kPackElems<D>];
  for (uint32_t i = 0; i < kPackElems<D>; ++i) lanes[i] = Elem<D>::FromFloat(f[i]);
  Pack p;
  std::memcpy(p.w, lanes, sizeof lanes);
  return p;
}

// Sum over ranks in rank order, in fp32, rounded to T: the same for every variant.
template <DType D>
Pack ReducePack(const GroupView& g, size_t input_offset, size_t pack) {
  // Starting from rank 0's value (not +0.0) keeps a sum of -0.0 at -0.0, as on the GPU: the
  // case canonicalisation exists for.
  float acc[kPackElems<D>];
  UnpackTo<D>(LoadPack(g.peers[0].input() + input_offset + pack * kPackBytes), acc);
  for (uint32_t r = 1; r < g.world; ++r) {
    float v[kPackElems<D>];
    UnpackTo<D>(LoadPack(g.peers[r].input() + input_offset + pack * kPackBytes), v);
    for (uint32_t i = 0; i < kPackElems<D>; ++i) acc[i] += v[i];
  }
  return PackOf<D>(acc);
}

// Per-thread scratch for a row of the normed output, apart from RowScratch (which holds the sums
// the epilogue reads).
std::vector<float>& NormScratch(uint32_t n) {
  thread_local std::vector<float> y;
  if (y.size() < n) y.resize(n);
  return y;
}

// The normed row y = T(residual_out * rsqrt(mean(residual_out^2) + eps) * w), into `y`. In a
// quantising call the arithmetic is the reference's (fp64, rounded to float and then to T): the
// epilogue encodes y, and one T ulp of y can move a code or a dynamic scale, so there the
// specification's y is the reference's bit for bit. Elsewhere it is fp32, as the GPU kernels do
// it; the T diff allows the ulp. fp64 in every call made hostile.health_fairness (a cpu group of
// 1-case runs beside a health loop) go from 3.6 to 8.7 s.
template <DType D>
void NormRow(const typename Elem<D>::Storage* rout, const typename Elem<D>::Storage* w,
             const CallArgs& a, float* y) {
  const auto t = [](float v) { return Elem<D>::ToFloat(Elem<D>::FromFloat(v)); };
  if (a.quant.active()) {
    double sumsq = 0;
    for (uint32_t j = 0; j < a.n; ++j) {
      const double rf = Elem<D>::ToFloat(rout[j]);
      sumsq += rf * rf;
    }
    const double inv = 1.0 / std::sqrt(sumsq / a.n + static_cast<double>(a.eps));
    for (uint32_t j = 0; j < a.n; ++j) {
      const double v = static_cast<double>(Elem<D>::ToFloat(rout[j])) * inv *
                       static_cast<double>(Elem<D>::ToFloat(w[j]));
      y[j] = t(static_cast<float>(v));
    }
    return;
  }
  float sumsq = 0.f;
  for (uint32_t j = 0; j < a.n; ++j) {
    const float rf = Elem<D>::ToFloat(rout[j]);
    sumsq += rf * rf;
  }
  const float inv = 1.0f / std::sqrt(sumsq / static_cast<float>(a.n) + a.eps);
  for (uint32_t j = 0; j < a.n; ++j)
    y[j] = t(Elem<D>::ToFloat(rout[j]) * inv * Elem<D>::ToFloat(w[j]));
}

// residual_out = T(s + residual); y = NormRow; then out = y and/or y quantised (QuantizeRow), as
// the case's epilogue asks.
template <DType D>
void FusedRowEpilogue(const float* sums, uint32_t row, const CallArgs& a) {
  worker::Advance();  // a large call on a crowded machine computes for long between two spins
  using S = typename Elem<D>::Storage;
  const size_t base = static_cast<size_t>(row) * a.n;
  const S* res = static_cast<const S*>(a.residual_in) + base;
  S* rout = static_cast<S*>(a.residual_out) + base;
  for (uint32_t j = 0; j < a.n; ++j) {
    rout[j] = a.residual ? Elem<D>::FromFloat(sums[j] + Elem<D>::ToFloat(res[j]))
                         : Elem<D>::FromFloat(sums[j]);
  }
  float* y = NormScratch(a.n).data();
  NormRow<D>(rout, static_cast<const S*>(a.weight), a, y);
  if (a.quant.writes_out()) {
    S* out = static_cast<S*>(a.out) + base;
    for (uint32_t j = 0; j < a.n; ++j) out[j] = Elem<D>::FromFloat(y[j]);
  }
  QuantizeRow(a.quant, row, y, a.n);
}

// Inlined into every poll: out of line, the pack went through the stack on each of the W polls
// of every pack, and lamport_tb's consume loop stalled on the reload.
template <DType D>
[[gnu::always_inline]] inline bool PackArrived(const BlockContext& ctx, const Pack& p) {
  return ctx.breaks->float_compare ? ArrivedFloatCompare<D>(p) : Arrived<D>(p);
}

template <DType D>
Pack ProducerValue(const BlockContext& ctx, const Pack& p) {
  return ctx.breaks->skip_canonicalize ? p : Canonicalize<D>(p);
}

uint8_t* LamportStaging(const BlockContext& ctx, uint32_t rank) {
  const RankMemory& mem = ctx.group->peers[rank];
  return ctx.breaks->shared_staging ? mem.tmp() : mem.lamport();
}

// lamport_tb push: this rank's canonicalised input into slot `rank` of every PEER's current
// buffer (worker/protocol/triple_buffer.h: a rank never stages its own contribution). There is no
// barrier: a peer can be at most one call ahead, and it writes into a buffer this rank is not
// using.
template <DType D>
void TbPush(const BlockContext& ctx, const uint8_t* input, size_t packs, uint32_t buf) {
  const GroupView& g = *ctx.group;
  for (size_t k = ctx.block; k < packs; k += ctx.grid) {
    const Pack p = ProducerValue<D>(ctx, LoadPack(input + k * kPackBytes));
    for (uint32_t d = 0; d < g.world; ++d) {
      if (TbStaged(g.rank, d)) {
        ctx.posted->Store(g.peers[d].tb_slot(buf, g.rank) + k * kPackBytes, p);
      }
    }
  }
  ctx.posted->Drain();
}

// Rank r's contribution to `pack`: a peer's from this rank's buffer once it arrived; this rank's
// own straight from its input, canonicalised as it pushes it, so every rank sums the same bits
// (and skip_canonicalize, which breaks only what is pushed, leaves it canonical). False when the
// wait gave up.
template <DType D>
bool TbContribution(const BlockContext& ctx, const uint8_t* input, uint32_t buf, uint32_t r,
                    size_t pack, Pack* p, const char* phase) {
  const GroupView& g = *ctx.group;
  if (!TbStaged(r, g.rank)) {
    *p = Canonicalize<D>(LoadPack(input + pack * kPackBytes));
    return true;
  }
  const uint8_t* slot = g.self().tb_slot(buf, r) + pack * kPackBytes;
  return SpinUntil(*ctx.guard, *ctx.posted, static_cast<int>(ctx.block), static_cast<int>(r), phase,
                   [&] { return PackArrived<D>(ctx, *p = LoadPack(slot)); });
}

// Clears the previous call's buffer: every peer finished writing it (this rank consumed all of
// it), and the next writer is a peer at call + 2, which needs this rank's data of call + 1. The
// own slot was never written.
template <DType D>
void TbClear(const BlockContext& ctx, uint32_t prev, size_t prev_packs) {
  const GroupView& g = *ctx.group;
  for (uint32_t r = 0; r < g.world; ++r) {
    if (!TbStaged(r, g.rank)) continue;
    uint8_t* slot = g.self().tb_slot(prev, r);
    for (size_t k = ctx.block; k < prev_packs; k += ctx.grid) {
      ctx.posted->Store(slot + k * kPackBytes, SentinelPack<D>());
    }
  }
}

// lamport_two_shot clears what the previous call wrote into this rank's buffer: each peer's slot
// over this rank's part (the scatter) and the own slot over everything (the gather).
template <DType D>
void TwoShotClear(const BlockContext& ctx, uint32_t prev, size_t prev_packs) {
  const GroupView& g = *ctx.group;
  const Part part = PartOf(prev_packs, g.world, g.rank);
  for (uint32_t r = 0; r < g.world; ++r) {
    uint8_t* slot = g.self().tb_slot(prev, r);
    const size_t begin = TbStaged(r, g.rank) ? part.begin : 0;
    const size_t end = TbStaged(r, g.rank) ? part.end : prev_packs;
    for (size_t k = begin + ctx.block; k < end; k += ctx.grid) {
      ctx.posted->Store(slot + k * kPackBytes, SentinelPack<D>());
    }
  }
}

// The rotation counter of lamport_tb and lamport_two_shot: each block reads it and then counts
// itself in; block 0 advances it at its end once every block has (as the GPU kernels do: no fence
// and atomic at every block's end).
uint64_t TbEnter(RankControl* control) {
  const uint64_t call = std::atomic_ref<uint64_t>(control->tb_call).load(std::memory_order_acquire);
  std::atomic_ref<uint32_t>(control->tb_blocks).fetch_add(1, std::memory_order_release);
  return call;
}

// Block 0 records this call's size and advances the counter once every block read it.
void TbAdvance(const BlockContext& ctx, RankControl* control, uint64_t call, uint32_t buf,
               size_t bytes, const char* phase) {
  if (ctx.block != 0) return;
  if (!SpinUntil(*ctx.guard, *ctx.posted, 0, -1, phase, [&] {
        return std::atomic_ref<uint32_t>(control->tb_blocks).load(std::memory_order_acquire) ==
               ctx.grid;
      })) {
    return;
  }
  control->tb_used_bytes[buf] = bytes;
  std::atomic_ref<uint32_t>(control->tb_blocks).store(0, std::memory_order_relaxed);
  std::atomic_ref<uint64_t>(control->tb_call).store(call + 1, std::memory_order_release);
}

// Rank-order fp32 sum of every rank's contribution to `pack` (TbContribution), rounded to T.
template <DType D>
bool TbSum(const BlockContext& ctx, const uint8_t* input, uint32_t buf, size_t pack,
           const char* phase, float (&sum)[kPackElems<D>]) {
  for (uint32_t r = 0; r < ctx.group->world; ++r) {
    Pack p;
    if (!TbContribution<D>(ctx, input, buf, r, pack, &p, phase)) return false;
    float v[kPackElems<D>];
    UnpackTo<D>(p, v);
    for (uint32_t i = 0; i < kPackElems<D>; ++i) sum[i] = r == 0 ? v[i] : sum[i] + v[i];
  }
  for (uint32_t i = 0; i < kPackElems<D>; ++i)
    sum[i] = Elem<D>::ToFloat(Elem<D>::FromFloat(sum[i]));
  return true;
}

}  // namespace

template <DType D>
void OneStageBlock(const BlockContext& ctx, const CallArgs& a) {
  const GroupView& g = *ctx.group;
  if (!BlockBarrier(ctx, BarrierSlot::kStart, "one_stage start_sync")) return;
  std::vector<float>& row = RowScratch(a.n);
  const uint32_t packs_per_row = a.n / kPackElems<D>;
  for (uint32_t m = ctx.block; m < a.m; m += ctx.grid) {
    for (uint32_t k = 0; k < packs_per_row; ++k) {
      const Pack p = ReducePack<D>(g, a.input_offset, static_cast<size_t>(m) * packs_per_row + k);
      UnpackTo<D>(p, row.data() + k * kPackElems<D>);
    }
    FusedRowEpilogue<D>(row.data(), m, a);
  }
  // Without it a fast rank would overwrite its registered input while a peer still reads it.
  if (!ctx.breaks->skip_end_sync) BlockBarrier(ctx, BarrierSlot::kEnd, "one_stage end_sync");
}

template <DType D>
void ReduceScatterBlock(const BlockContext& ctx, const CallArgs& a) {
  const GroupView& g = *ctx.group;
  if (!BlockBarrier(ctx, BarrierSlot::kStart, "two_kernel start_sync")) return;
  const size_t packs = static_cast<size_t>(a.m) * a.n / kPackElems<D>;
  const Part part = PartOf(packs, g.world, g.rank);
  for (size_t k = part.begin + ctx.block; k < part.end; k += ctx.grid) {
    const Pack p = ReducePack<D>(g, a.input_offset, k);
    for (uint32_t d = 0; d < g.world; ++d) ctx.posted->Store(g.peers[d].tmp() + k * kPackBytes, p);
  }
  // Release/acquire: the cross-device stores above must be visible before a peer's second kernel
  // reads them.
  if (!ctx.breaks->skip_end_sync) BlockBarrier(ctx, BarrierSlot::kEnd, "two_kernel end_sync");
}

template <DType D>
void LoadNormBlock(const BlockContext& ctx, const CallArgs& a) {
  const uint8_t* tmp = ctx.group->self().tmp();
  std::vector<float>& row = RowScratch(a.n);
  const uint32_t packs_per_row = a.n / kPackElems<D>;
  for (uint32_t m = ctx.block; m < a.m; m += ctx.grid) {
    for (uint32_t k = 0; k < packs_per_row; ++k) {
      const size_t pack = static_cast<size_t>(m) * packs_per_row + k;
      UnpackTo<D>(LoadPack(tmp + pack * kPackBytes), row.data() + k * kPackElems<D>);
    }
    FusedRowEpilogue<D>(row.data(), m, a);
  }
}

template <DType D>
void LamportBlock(const BlockContext& ctx, const CallArgs& a) {
  const GroupView& g = *ctx.group;
  // Acquire/release, not relaxed: this call's producer stores must land after every peer's
  // re-arming stores of the previous call.
  if (!BlockBarrier(ctx, BarrierSlot::kStart, "lamport start_sync")) return;
  const size_t packs = static_cast<size_t>(a.m) * a.n / kPackElems<D>;
  const Part part = PartOf(packs, g.world, g.rank);
  // Phase A: reduce this rank's part and push it to every rank. No end barrier and no fence:
  // consumers see arrival in the data itself.
  for (size_t k = part.begin + ctx.block; k < part.end; k += ctx.grid) {
    const Pack p = ProducerValue<D>(ctx, ReducePack<D>(g, a.input_offset, k));
    for (uint32_t d = 0; d < g.world; ++d) {
      ctx.posted->Store(LamportStaging(ctx, d) + k * kPackBytes, p);
    }
  }
  // Let the produced data go now rather than when this block first spins; not a fence: nothing
  // below depends on the order in which it lands.
  ctx.posted->Drain();
  // Phase B: one block per row; spin on each pack, consume it, re-arm it. Each pack is consumed
  // by exactly one block, so re-arming needs no further synchronisation.
  uint8_t* staging = LamportStaging(ctx, g.rank);
  std::vector<float>& row = RowScratch(a.n);
  const uint32_t packs_per_row = a.n / kPackElems<D>;
  for (uint32_t m = ctx.block; m < a.m; m += ctx.grid) {
    for (uint32_t k = 0; k < packs_per_row; ++k) {
      const size_t pack = static_cast<size_t>(m) * packs_per_row + k;
      uint8_t* slot = staging + pack * kPackBytes;
      Pack p;
      const bool ok = SpinUntil(*ctx.guard, *ctx.posted, static_cast<int>(ctx.block),
                                static_cast<int>(OwnerOf(pack, packs, g.world)), "lamport phase B",
                                [&] { return PackArrived<D>(ctx, p = LoadPack(slot)); });
      if (!ok) return;
      UnpackTo<D>(p, row.data() + k * kPackElems<D>);
      if (!ctx.breaks->skip_rearm) {
        for (uint32_t i = 0; i < a.arm_repeat; ++i) ctx.posted->Store(slot, SentinelPack<D>());
      }
    }
    FusedRowEpilogue<D>(row.data(), m, a);
  }
}

template <DType D>
void LamportTbBlock(const BlockContext& ctx, const CallArgs& a) {
  const GroupView& g = *ctx.group;
  RankControl* control = g.self().control();
  const uint32_t buffers = ctx.breaks->two_buffer_rotation ? 2 : protocol::kTbBuffers;
  // The counter lives in the rank's memory and advances inside the kernel, so graph replays
  // rotate too.
  const uint64_t call = TbEnter(control);
  const uint32_t buf = protocol::TbBuffer(call, buffers);
  const size_t bytes = static_cast<size_t>(a.m) * a.n * ElemBytes(D);
  const uint8_t* input = g.self().input() + a.input_offset;
  TbPush<D>(ctx, input, bytes / kPackBytes, buf);
  // Consume: per row, every rank's contribution, summed in rank order from rank 0's value.
  std::vector<float>& row = RowScratch(a.n);
  const uint32_t packs_per_row = a.n / kPackElems<D>;
  for (uint32_t m = ctx.block; m < a.m; m += ctx.grid) {
    for (uint32_t k = 0; k < packs_per_row; ++k) {
      const size_t pack = static_cast<size_t>(m) * packs_per_row + k;
      float sum[kPackElems<D>];
      if (!TbSum<D>(ctx, input, buf, pack, "lamport_tb consume", sum)) return;
      std::memcpy(row.data() + k * kPackElems<D>, sum, sizeof sum);
    }
    FusedRowEpilogue<D>(row.data(), m, a);
  }
  const uint32_t prev = protocol::TbClearedBuffer(call, buffers);
  TbClear<D>(ctx, prev, control->tb_used_bytes[prev] / kPackBytes);
  TbAdvance(ctx, control, call, buf, bytes, "lamport_tb consume");
}

template <DType D>
void LamportTwoShotBlock(const BlockContext& ctx, const CallArgs& a) {
  const GroupView& g = *ctx.group;
  RankControl* control = g.self().control();
  const uint64_t call = TbEnter(control);
  const uint32_t buf = protocol::TbBuffer(call);
  const size_t bytes = static_cast<size_t>(a.m) * a.n * ElemBytes(D);
  const size_t packs = bytes / kPackBytes;
  const uint8_t* input = g.self().input() + a.input_offset;
  // Scatter: pack k to its owner's slot `rank`; the own part stays in the input (TbStaged).
  for (size_t k = ctx.block; k < packs; k += ctx.grid) {
    const uint32_t owner = OwnerOf(k, packs, g.world);
    if (!TbStaged(g.rank, owner)) continue;
    const Pack p = ProducerValue<D>(ctx, LoadPack(input + k * kPackBytes));
    ctx.posted->Store(g.peers[owner].tb_slot(buf, g.rank) + k * kPackBytes, p);
  }
  ctx.posted->Drain();
  // Reduce the own part in rank order and push the sum, canonical (it is a flag again), into
  // every rank's gather slot: slot `d` of rank d's buffer, which lamport_tb leaves unused.
  const Part part = PartOf(packs, g.world, g.rank);
  for (size_t k = part.begin + ctx.block; k < part.end; k += ctx.grid) {
    float sum[kPackElems<D>];
    if (!TbSum<D>(ctx, input, buf, k, "lamport_two_shot reduce", sum)) return;
    const Pack p = ProducerValue<D>(ctx, PackOf<D>(sum));
    for (uint32_t d = 0; d < g.world; ++d) {
      ctx.posted->Store(g.peers[d].tb_slot(buf, d) + k * kPackBytes, p);
    }
  }
  ctx.posted->Drain();
  // Consume: per row, the sums from the own gather slot.
  const uint8_t* gather = g.self().tb_slot(buf, g.rank);
  std::vector<float>& row = RowScratch(a.n);
  const uint32_t packs_per_row = a.n / kPackElems<D>;
  for (uint32_t m = ctx.block; m < a.m; m += ctx.grid) {
    for (uint32_t k = 0; k < packs_per_row; ++k) {
      const size_t pack = static_cast<size_t>(m) * packs_per_row + k;
      Pack p;
      if (!SpinUntil(
              *ctx.guard, *ctx.posted, static_cast<int>(ctx.block),
              static_cast<int>(OwnerOf(pack, packs, g.world)), "lamport_two_shot gather",
              [&] { return PackArrived<D>(ctx, p = LoadPack(gather + pack * kPackBytes)); })) {
        return;
      }
      UnpackTo<D>(p, row.data() + k * kPackElems<D>);
    }
    FusedRowEpilogue<D>(row.data(), m, a);
  }
  const uint32_t prev = protocol::TbClearedBuffer(call);
  TwoShotClear<D>(ctx, prev, control->tb_used_bytes[prev] / kPackBytes);
  TbAdvance(ctx, control, call, buf, bytes, "lamport_two_shot gather");
}

void ArmStaging(DType dtype, uint8_t* staging, size_t bytes) {
  Pack sentinel;
  switch (dtype) {
    case DType::kBf16:
      sentinel = SentinelPack<DType::kBf16>();
      break;
    case DType::kFp16:
      sentinel = SentinelPack<DType::kFp16>();
      break;
    case DType::kFp32:
      sentinel = SentinelPack<DType::kFp32>();
      break;
  }
  for (size_t off = 0; off + kPackBytes <= bytes; off += kPackBytes)
    StorePack(staging + off, sentinel);
}

#define COLLTEST_INSTANTIATE(D)                                              \
  template void OneStageBlock<D>(const BlockContext&, const CallArgs&);      \
  template void ReduceScatterBlock<D>(const BlockContext&, const CallArgs&); \
  template void LoadNormBlock<D>(const BlockContext&, const CallArgs&);      \
  template void LamportBlock<D>(const BlockContext&, const CallArgs&);       \
  template void LamportTbBlock<D>(const BlockContext&, const CallArgs&);     \
  template void LamportTwoShotBlock<D>(const BlockContext&, const CallArgs&);
COLLTEST_INSTANTIATE(DType::kBf16)
COLLTEST_INSTANTIATE(DType::kFp16)
COLLTEST_INSTANTIATE(DType::kFp32)
#undef COLLTEST_INSTANTIATE

}  // namespace colltest::cpu
