// lamport_tb on the GPU: the triple-buffered Lamport all-reduce fused with residual + RMSNorm, in
// one kernel with no barrier (docs/design.md section 4, docs/protocol.md, bench/NOTES.md for what
// each choice below bought on 2 x H200). The cpu backend's LamportTbBlock is its specification.
//
// Per row, each thread owns P packs (one where the row has at most kMaxTbThreads packs: n = 7168
// bf16 runs 896 threads) and, for each: loads its own input and residual, pushes the canonical
// input into its slot of every peer's current buffer, clears the same pack of the previous
// buffer, then polls every peer's slot in one loop and sums in rank order. Rows are pipelined
// (push row i, consume row i), so a block's later rows' pushes overlap its peers' polls.
#include <algorithm>

#include "worker/backends/gpu/device_elem.cuh"
#include "worker/backends/gpu/device_row.cuh"
#include "worker/backends/gpu/device_sync.cuh"
#include "worker/backends/gpu/device_tb.cuh"
#include "worker/backends/gpu/kernels.h"
#include "worker/protocol/triple_buffer.h"

namespace colltest::gpu {
namespace {

using protocol::TbStaged;

// Pushes pack `pack` (already loaded) to every peer and re-arms the same pack of the previous
// buffer's peer slots. The own value is returned canonical: it is what this rank sums.
template <DType D, int W>
__device__ __forceinline__ uint4 PushAndClear(const DeviceGroup& g, const TbCall& c, size_t pack,
                                              uint4 own, bool canonicalize) {
  const uint4 canonical = Canonicalize<D>(own);
  const uint4 pushed = canonicalize ? canonical : own;  // skip_canonicalize (injected)
#pragma unroll
  for (int d = 0; d < W; ++d) {
    if (TbStaged(g.rank, d)) StoreNonTemporal16(TbSlot(g, d, c.buf, g.rank) + pack * 16, pushed);
  }
  if (pack < c.prev_packs) {
#pragma unroll
    for (int r = 0; r < W; ++r) {
      if (TbStaged(r, g.rank)) Store16(TbSlot(g, g.rank, c.prev, r) + pack * 16, SentinelPack<D>());
    }
  }
  return canonical;
}

// The row's values each thread keeps between the phases of TbRow. With one pack per thread they
// all stay in registers (61 registers for bf16 at W = 2, no spills, with ptxas -v); with more,
// holding them spilled hundreds of bytes per thread, so the own input, the residual and the
// weight are loaded again where used (cache hits) and the sums read back from residual_out.
template <int P>
struct TbHeld {
  static constexpr bool kHold = P == 1;
  uint4 own[P];
  uint4 res[P];
  uint4 sum[P];
  uint4 w[P];
};

// Sum in rank order of the peers' values and this rank's canonical own value, plus the residual,
// rounded to T at each step as every variant does. Accumulates the sum of squares.
template <DType D, int W>
__device__ __forceinline__ uint4 RowValue(const CallArgs& a, uint4 (&v)[W], uint4 res,
                                          float& sumsq) {
  constexpr uint32_t E = kPackElems<D>;
  float acc[E], x[E];
  Unpack<D>(v[0], acc);
#pragma unroll
  for (int r = 1; r < W; ++r) {
    Unpack<D>(v[r], x);
#pragma unroll
    for (uint32_t e = 0; e < E; ++e) acc[e] += x[e];
  }
  uint4 sum = PackOf<D>(acc);  // the all-reduce, rounded to T
  if (a.residual) {
    Unpack<D>(sum, acc);
    Unpack<D>(res, x);
#pragma unroll
    for (uint32_t e = 0; e < E; ++e) acc[e] += x[e];
    sum = PackOf<D>(acc);
  }
  Unpack<D>(sum, acc);
#pragma unroll
  for (uint32_t e = 0; e < E; ++e) sumsq += acc[e] * acc[e];
  return sum;
}

// One row: push and clear every pack of the thread, then per pack poll, sum and add the
// residual, then RMSNorm. Block-uniform result (false: some thread's wait gave up).
template <DType D, int W, int P, bool kQuant>
__device__ __forceinline__ bool TbRow(const DeviceGroup& g, const CallArgs& a, const TbCall& c,
                                      SpinClock& clk, uint32_t row, TbHeld<P>& h) {
  constexpr uint32_t E = kPackElems<D>;
  constexpr bool kHold = TbHeld<P>::kHold;
  // Unrolled only where the held arrays need constant indices: unrolling P = 4 or 8 packs of
  // address arithmetic spilled (ptxas -v).
  constexpr int kUnroll = kHold ? P : 1;
  const uint32_t ppr = a.n / E;
  const size_t row_pack = static_cast<size_t>(row) * ppr;
  const bool canonicalize = (a.faults & kFaultSkipCanonicalize) == 0;
  const uint4* input = reinterpret_cast<const uint4*>(c.input) + row_pack;
  const uint4* residual = static_cast<const uint4*>(a.residual_in) + row_pack;
  uint4* residual_out = static_cast<uint4*>(a.residual_out) + row_pack;
#pragma unroll kUnroll
  for (int i = 0; i < P; ++i) {
    const uint32_t k = threadIdx.x + i * blockDim.x;
    if (k >= ppr) continue;
    const uint4 own = input[k];
    if (kHold && a.residual) h.res[i] = residual[k];  // in flight while this rank pushes
    const uint4 canonical = PushAndClear<D, W>(g, c, row_pack + k, own, canonicalize);
    if (kHold) h.own[i] = canonical;
  }
  float sumsq = 0.f;
  int failed = 0;
#pragma unroll kUnroll
  for (int i = 0; i < P; ++i) {
    const uint32_t k = threadIdx.x + i * blockDim.x;
    if (k >= ppr || failed) continue;
    uint4 v[W];
    if (!PollPeers<D, W>(g, c, clk, row_pack + k, Phase::kLamportTbConsume, v)) {
      failed = 1;
      continue;
    }
    const uint4 own = kHold ? h.own[i] : Canonicalize<D>(input[k]);
#pragma unroll
    for (int r = 0; r < W; ++r) {
      if (!TbStaged(r, g.rank)) v[r] = own;
    }
    const uint4 res = kHold || !a.residual ? h.res[i] : residual[k];
    const uint4 sum = RowValue<D, W>(a, v, res, sumsq);
    residual_out[k] = sum;
    if (kHold) h.sum[i] = sum;
  }
  if (__syncthreads_or(failed)) return false;
  const uint4* weight = static_cast<const uint4*>(a.weight);
  if constexpr (kQuant) {
    uint4* out = a.quant.keep_normed ? static_cast<uint4*>(a.out) + row_pack : nullptr;
    QuantizeNormedRow<D>(a.quant, row, a.n, a.eps, residual_out, weight, out);
    return true;
  }
  const float inv = 1.0f / sqrtf(BlockSum(sumsq) / static_cast<float>(a.n) + a.eps);
#pragma unroll kUnroll
  for (int i = 0; i < P; ++i) {
    const uint32_t k = threadIdx.x + i * blockDim.x;
    if (k >= ppr) continue;
    float x[E], wf[E];
    Unpack<D>(kHold ? h.sum[i] : residual_out[k], x);
    Unpack<D>(kHold ? h.w[i] : weight[k], wf);
#pragma unroll
    for (uint32_t e = 0; e < E; ++e) x[e] = x[e] * inv * wf[e];
    static_cast<uint4*>(a.out)[row_pack + k] = PackOf<D>(x);
  }
  return true;
}

template <DType D, int W, int P, bool kQuant>
__global__ void __launch_bounds__(kMaxTbThreads, 1) LamportTbKernel(DeviceGroup g, CallArgs a) {
  const uint32_t ppr = a.n / kPackElems<D>;
  // Before the wait only what no kernel of this stream writes during the case: the weight.
  TbHeld<P> h;
  if constexpr (TbHeld<P>::kHold) {
    if (threadIdx.x < ppr) h.w[0] = static_cast<const uint4*>(a.weight)[threadIdx.x];
  }
  EnterEarlyLaunched();
  SpinClock clk = StartClock(a.timeout_ns);
  const TbCall c = TbEnter(g, a);
  for (uint32_t row = blockIdx.x; row < a.m; row += gridDim.x) {
    if (!TbRow<D, W, P, kQuant>(g, a, c, clk, row, h)) return;
  }
  // The previous buffer beyond this call's rows (it may have been larger).
  const size_t packs = static_cast<size_t>(a.m) * ppr;
  for (size_t k = packs + blockIdx.x * blockDim.x + threadIdx.x; k < c.prev_packs;
       k += static_cast<size_t>(gridDim.x) * blockDim.x) {
#pragma unroll
    for (int r = 0; r < W; ++r) {
      if (TbStaged(r, g.rank)) Store16(TbSlot(g, g.rank, c.prev, r) + k * 16, SentinelPack<D>());
    }
  }
  TbAdvance(g, c, packs, clk, Phase::kLamportTbConsume);
}

// The kernel for (world, dtype, packs per thread, epilogue), handed to `use`: the launch and the
// occupancy query below both pick it here, so a grid is sized by the kernel that runs.
template <class Use>
KernelStatus WithLamportTbKernel(uint32_t world, DType dtype, uint32_t packs_per_thread,
                                 bool quantising, Use&& use) {
  return DispatchWorldDtypePacks(
      world, dtype, packs_per_thread, [&](auto w, auto d, auto p) -> KernelStatus {
        return DispatchEpilogue(quantising, [&](auto q) -> KernelStatus {
          return use(LamportTbKernel<decltype(d)::value, decltype(w)::value, decltype(p)::value,
                                     decltype(q)::value>);
        });
      });
}

}  // namespace

KernelStatus LaunchLamportTb(DType dtype, const DeviceGroup& g, const CallArgs& a, uint32_t grid,
                             uint32_t threads, Stream s) {
  const uint32_t packs_per_thread = TbPacksPerThread(a.n / PackElems(dtype), threads);
  return WithLamportTbKernel(
      g.world, dtype, packs_per_thread, a.quant.on,
      [&](auto kernel) -> KernelStatus { return LaunchEarly(kernel, grid, threads, s, g, a); });
}

KernelStatus LamportTbBlockShape(uint32_t world, DType dtype, uint32_t n, uint32_t threads_knob,
                                 TbShape* shape) {
  const uint32_t ppr = n / PackElems(dtype);
  shape->threads = threads_knob != 0 ? threads_knob : TbThreads(ppr, kWarpSize);
  shape->packs_per_thread = TbPacksPerThread(ppr, shape->threads);
  // The fewer blocks of the kernels without and with the epilogue: one grid size fits both.
  shape->blocks_per_sm = 1 << 20;
  for (const bool quantising : {false, true}) {
    int n = 0;
    const KernelStatus st = WithLamportTbKernel(
        world, dtype, shape->packs_per_thread, quantising, [&](auto kernel) -> KernelStatus {
          return OccupancyBlocksPerSm(&n, kernel, static_cast<int>(shape->threads));
        });
    if (!st.ok()) return st;
    shape->blocks_per_sm = std::min(shape->blocks_per_sm, n);
  }
  return KernelStatus();
}

}  // namespace colltest::gpu
