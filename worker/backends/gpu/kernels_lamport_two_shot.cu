// lamport_two_shot on the GPU: the two-shot Lamport all-reduce fused with residual + RMSNorm, over
// lamport_tb's triple buffer and counter, in one kernel with no barrier (docs/protocol.md). The
// cpu backend's LamportTwoShotBlock is its specification.
//
// Rank j owns part j of the packs (PartOf). Scatter: every rank pushes each pack of its input
// that another rank owns into slot `rank` of the owner's buffer. Reduce: the owner polls its
// peers' slots over its part, sums in rank order with its own input, and pushes the canonical sum
// into slot d of every rank d's buffer (the gather slot, which lamport_tb leaves unused). Norm:
// every rank polls its gather slot row by row. Each rank moves (W - 1) / W of its input out and
// as much of the sums in: two one-way trips instead of one-shot's W - 1 full inputs per rank.
#include <algorithm>

#include "worker/backends/gpu/device_elem.cuh"
#include "worker/backends/gpu/device_row.cuh"
#include "worker/backends/gpu/device_sync.cuh"
#include "worker/backends/gpu/device_tb.cuh"
#include "worker/backends/gpu/kernels.h"
#include "worker/protocol/partition.h"

namespace colltest::gpu {
namespace {

constexpr uint32_t kMaxThreads = 512;
constexpr uint32_t kMinBlocksPerSm = 2;  // as the other spinning kernels (kernels_collective.cu)
// The gather waits for an owner's sums, which wait in that owner's reduce for every rank's
// scatter: its deadline is later by timeout / kGatherSlack, so that a rank that never scattered is
// named by the reduce waits (as the cpu backend, which reduces before it gathers, names it) rather
// than an owner it held up. Measured on one H200 at W = 4 and 8 with equal deadlines: with
// hang_end_sync on the last rank, blocks with no part to reduce timed out first in the gather and
// named the owners ("ranks disagree").
constexpr uint64_t kGatherSlack = 8;

using protocol::OwnerOf;
using protocol::Part;
using protocol::PartOf;
using protocol::TbStaged;

// Scatter: each pack of this rank's input to its owner; the own part stays in the input.
template <DType D, int W>
__device__ __forceinline__ void Scatter(const DeviceGroup& g, const CallArgs& a, const TbCall& c,
                                        size_t packs) {
  const bool canonicalize = (a.faults & kFaultSkipCanonicalize) == 0;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t k = blockIdx.x * blockDim.x + threadIdx.x; k < packs; k += stride) {
    const uint32_t owner = OwnerOf(k, packs, W);
    if (!TbStaged(g.rank, owner)) continue;
    const uint4 v = *reinterpret_cast<const uint4*>(c.input + k * 16);
    StoreNonTemporal16(TbSlot(g, owner, c.buf, g.rank) + k * 16,
                       canonicalize ? Canonicalize<D>(v) : v);
  }
}

// Re-arms what the previous call wrote into this rank's buffer: the peers' slots over this rank's
// part and the gather slot over everything. Safe at any moment of this call: the buffer's next
// writer is a peer at call + 2.
template <DType D, int W>
__device__ __forceinline__ void ClearPrevious(const DeviceGroup& g, const TbCall& c) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t first = blockIdx.x * blockDim.x + threadIdx.x;
  const Part part = PartOf(c.prev_packs, W, g.rank);
#pragma unroll
  for (int r = 0; r < W; ++r) {
    const bool scatter = TbStaged(r, g.rank);
    uint8_t* slot = TbSlot(g, g.rank, c.prev, r);
    const size_t end = scatter ? part.end : c.prev_packs;
    for (size_t k = (scatter ? part.begin : 0) + first; k < end; k += stride) {
      Store16(slot + k * 16, SentinelPack<D>());
    }
  }
}

// Reduce: the own part summed in rank order, pushed canonical to every rank's gather slot.
template <DType D, int W>
__device__ __forceinline__ bool ReduceOwnPart(const DeviceGroup& g, const CallArgs& a,
                                              const TbCall& c, SpinClock& clk, size_t packs) {
  constexpr uint32_t E = kPackElems<D>;
  const bool canonicalize = (a.faults & kFaultSkipCanonicalize) == 0;
  const Part part = PartOf(packs, W, g.rank);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t k = part.begin + blockIdx.x * blockDim.x + threadIdx.x; k < part.end; k += stride) {
    uint4 v[W];
    if (!PollPeers<D, W>(g, c, clk, k, Phase::kLamportTwoShotReduce, v)) return false;
    const uint4 own = Canonicalize<D>(*reinterpret_cast<const uint4*>(c.input + k * 16));
    float acc[E], x[E];
#pragma unroll
    for (int r = 0; r < W; ++r) {
      Unpack<D>(TbStaged(r, g.rank) ? v[r] : own, x);
#pragma unroll
      for (uint32_t e = 0; e < E; ++e) acc[e] = r == 0 ? x[e] : acc[e] + x[e];
    }
    const uint4 sum = PackOf<D>(acc);
    const uint4 p = canonicalize ? Canonicalize<D>(sum) : sum;
#pragma unroll
    for (int d = 0; d < W; ++d) {
      uint8_t* dst = TbSlot(g, d, c.buf, d) + k * 16;
      if (d == static_cast<int>(g.rank)) {
        Store16(dst, p);
      } else {
        StoreNonTemporal16(dst, p);
      }
    }
  }
  return true;
}

template <DType D, int W, bool kQuant>
__global__ void __launch_bounds__(kMaxThreads, kMinBlocksPerSm)
    LamportTwoShotKernel(DeviceGroup g, CallArgs a) {
  EnterEarlyLaunched();
  SpinClock clk = StartClock(a.timeout_ns);
  const TbCall c = TbEnter(g, a);
  const uint32_t ppr = a.n / kPackElems<D>;
  const size_t packs = static_cast<size_t>(a.m) * ppr;
  Scatter<D, W>(g, a, c, packs);
  ClearPrevious<D, W>(g, c);
  // No __syncthreads in the reduce (per-thread trip counts): its failure is made block-uniform
  // right after it.
  const int failed = ReduceOwnPart<D, W>(g, a, c, clk, packs) ? 0 : 1;
  if (__syncthreads_or(failed)) return;
  const uint8_t* gather = TbSlot(g, g.rank, c.buf, g.rank);
  SpinClock gather_clk{clk.deadline_ns + a.timeout_ns / kGatherSlack, clk.polls};
  for (uint32_t row = blockIdx.x; row < a.m; row += gridDim.x) {
    const bool ok = FusedRow<D, kQuant>(a, row, [&](uint32_t k, uint4& s) {
      const size_t pack = static_cast<size_t>(row) * ppr + k;
      auto owner = [&]() COLLTEST_INLINE_LAMBDA -> int { return OwnerOf(pack, packs, W); };
      auto arrived = [&](const uint4& p) COLLTEST_INLINE_LAMBDA {
        s = p;
        return Arrived<D>(p);
      };
      return WaitArrived<PollOrder::kVolatile16>(gather_clk, g, Phase::kLamportTwoShotGather, owner,
                                                 pack, gather + pack * 16, arrived);
    });
    if (!ok) return;
  }
  TbAdvance(g, c, packs, gather_clk, Phase::kLamportTwoShotGather);
}

// The kernel for (world, dtype, epilogue), handed to `use`: the launch and the occupancy query
// below both pick it here.
template <class Use>
KernelStatus WithLamportTwoShotKernel(uint32_t world, DType dtype, bool quantising, Use&& use) {
  return DispatchWorldDtypeEpilogue(
      world, dtype, quantising, [&](auto w, auto d, auto q) -> KernelStatus {
        return use(
            LamportTwoShotKernel<decltype(d)::value, decltype(w)::value, decltype(q)::value>);
      });
}

}  // namespace

KernelStatus LaunchLamportTwoShot(DType dtype, const DeviceGroup& g, const CallArgs& a,
                                  uint32_t grid, uint32_t threads, Stream s) {
  return WithLamportTwoShotKernel(g.world, dtype, a.quant.on, [&](auto kernel) -> KernelStatus {
    return LaunchEarly(kernel, grid, threads, s, g, a);
  });
}

// The fewer of the kernels without and with the epilogue: one grid size fits both.
KernelStatus LamportTwoShotBlocksPerSm(uint32_t world, DType dtype, uint32_t threads, int* blocks) {
  int least = 1 << 20;
  for (const bool quantising : {false, true}) {
    int n = 0;
    const KernelStatus st =
        WithLamportTwoShotKernel(world, dtype, quantising, [&](auto kernel) -> KernelStatus {
          return OccupancyBlocksPerSm(&n, kernel, static_cast<int>(threads));
        });
    if (!st.ok()) return st;
    least = std::min(least, n);
  }
  *blocks = least;
  return KernelStatus();
}

}  // namespace colltest::gpu
