// one_stage, two_kernel and lamport: the fused all-reduce + residual + RMSNorm on the GPU
// (lamport_tb is kernels_lamport_tb.cu). The cpu backend's kernels.cc is the executable
// specification; these follow it step by step, and both take the layout, the Lamport word rules
// and the partitioning from worker/protocol. The all-reduce sums in fp32 in rank order starting
// from rank 0's value and rounds to T, so the all-reduce part is bit-identical across variants.
#include <algorithm>

#include "worker/backends/gpu/device_elem.cuh"
#include "worker/backends/gpu/device_row.cuh"
#include "worker/backends/gpu/device_sync.cuh"
#include "worker/backends/gpu/kernels.h"
#include "worker/protocol/partition.h"

namespace colltest::gpu {
namespace {

constexpr uint32_t kMaxThreads = 512;
// Registers are capped so that two blocks of kMaxThreads (four of 256) fit on a multiprocessor:
// the co-resident grid of a spinning kernel is what bounds its parallelism (one block per SM left
// lamport_tb at 80 registers with 132 blocks on an H200).
constexpr uint32_t kMinBlocksPerSm = 2;
// Packs each thread of a reduce-scatter loads before it stores any: more peer reads in flight.
constexpr uint32_t kScatterUnroll = 4;

using protocol::OwnerOf;
using protocol::Part;
using protocol::PartOf;

__device__ __forceinline__ uint8_t* Region(const DeviceGroup& g, uint32_t rank, size_t offset) {
  return g.base[rank] + offset;
}

// Pack `pack` summed over every rank's registered input in rank order, rounded to T.
template <DType D, int W>
__device__ __forceinline__ uint4 ReducePack(const DeviceGroup& g, size_t input_offset,
                                            size_t pack) {
  constexpr uint32_t E = kPackElems<D>;
  const size_t off = g.layout.input_offset + input_offset + pack * 16;
  float acc[E];
  Unpack<D>(LoadShared16(g.base[0] + off), acc);
#pragma unroll
  for (int r = 1; r < W; ++r) {
    float v[E];
    Unpack<D>(LoadShared16(g.base[r] + off), v);
#pragma unroll
    for (uint32_t e = 0; e < E; ++e) acc[e] += v[e];
  }
  return PackOf<D>(acc);
}

// Reduces this rank's part (grid-strided) and hands each pack to `put(k, p)`. Each thread issues
// the peer reads of kScatterUnroll packs before storing any of them. No __syncthreads inside:
// per-thread trip counts are fine.
template <DType D, int W, class Put>
__device__ __forceinline__ void ScatterPart(const DeviceGroup& g, size_t input_offset, Part part,
                                            Put&& put) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t k0 = part.begin + blockIdx.x * blockDim.x + threadIdx.x; k0 < part.end;
       k0 += stride * kScatterUnroll) {
    uint4 p[kScatterUnroll];
#pragma unroll
    for (uint32_t u = 0; u < kScatterUnroll; ++u) {
      const size_t k = k0 + u * stride;
      if (k < part.end) p[u] = ReducePack<D, W>(g, input_offset, k);
    }
#pragma unroll
    for (uint32_t u = 0; u < kScatterUnroll; ++u) {
      const size_t k = k0 + u * stride;
      if (k < part.end) put(k, p[u]);
    }
  }
}

template <DType D, int W, bool kQuant>
__global__ void __launch_bounds__(kMaxThreads, kMinBlocksPerSm)
    OneStageKernel(DeviceGroup g, CallArgs a) {
  EnterEarlyLaunched();
  SpinClock clk = StartClock(a.timeout_ns);
  if (!BlockBarrier(g, BarrierSlot::kStart, clk, Phase::kOneStageStart)) return;
  const uint32_t ppr = a.n / kPackElems<D>;
  for (uint32_t row = blockIdx.x; row < a.m; row += gridDim.x) {
    FusedRow<D, kQuant>(a, row, [&](uint32_t k, uint4& s) {
      s = ReducePack<D, W>(g, a.input_offset, static_cast<size_t>(row) * ppr + k);
      return true;
    });
  }
  // Without it a fast rank would overwrite its registered input while a peer still reads it.
  // hang_end_sync leaves it out: the peers must time out here naming this rank.
  if ((a.faults & kFaultSkipEndSync) == 0) {
    BlockBarrier(g, BarrierSlot::kEnd, clk, Phase::kOneStageEnd);
  }
}

template <DType D, int W>
__global__ void __launch_bounds__(kMaxThreads, kMinBlocksPerSm)
    ReduceScatterKernel(DeviceGroup g, CallArgs a) {
  EnterEarlyLaunched();
  SpinClock clk = StartClock(a.timeout_ns);
  if (!BlockBarrier(g, BarrierSlot::kStart, clk, Phase::kTwoKernelStart)) return;
  const size_t packs = static_cast<size_t>(a.m) * a.n / kPackElems<D>;
  const Part part = PartOf(packs, W, g.rank);
  ScatterPart<D, W>(g, a.input_offset, part, [&](size_t k, uint4 p) {
#pragma unroll
    for (int d = 0; d < W; ++d) Store16(Region(g, d, g.layout.tmp_offset) + k * 16, p);
  });
  // Release/acquire: the cross-device stores above must be visible before a peer's second kernel
  // reads them. hang_end_sync leaves it out, as in one_stage.
  if ((a.faults & kFaultSkipEndSync) == 0) {
    BlockBarrier(g, BarrierSlot::kEnd, clk, Phase::kTwoKernelEnd);
  }
}

template <DType D, bool kQuant>
__global__ void __launch_bounds__(kMaxThreads, kMinBlocksPerSm)
    LoadNormKernel(DeviceGroup g, CallArgs a) {
  EnterEarlyLaunched();
  const uint8_t* tmp = Region(g, g.rank, g.layout.tmp_offset);
  const uint32_t ppr = a.n / kPackElems<D>;
  for (uint32_t row = blockIdx.x; row < a.m; row += gridDim.x) {
    FusedRow<D, kQuant>(a, row, [&](uint32_t k, uint4& s) {
      s = LoadShared16(tmp + (static_cast<size_t>(row) * ppr + k) * 16);
      return true;
    });
  }
}

template <DType D, int W, bool kQuant>
__global__ void __launch_bounds__(kMaxThreads, kMinBlocksPerSm)
    LamportKernel(DeviceGroup g, CallArgs a) {
  EnterEarlyLaunched();
  SpinClock clk = StartClock(a.timeout_ns);
  // Acquire/release, not relaxed: this call's producer stores must land after every peer's
  // re-arming stores of the previous call.
  if (!BlockBarrier(g, BarrierSlot::kStart, clk, Phase::kLamportStart)) return;
  const size_t packs = static_cast<size_t>(a.m) * a.n / kPackElems<D>;
  const Part part = PartOf(packs, W, g.rank);
  // Phase A: reduce this rank's part and push it to every rank's private Lamport staging. No
  // fence and no barrier: the data is its own flag. Peer stores stream past the caches; the copy
  // into this rank's own staging stays cached because phase B reads it back. skip_canonicalize
  // (injected) stores -0.0 as is, so an all -0.0 sum reads as "not arrived" forever. A uniform
  // select rather than a second copy of the loop: measured with ptxas -v, it leaves the registers
  // and spills of every bf16 and every W = 2 instantiation as they were without it.
  const bool canonicalize = (a.faults & kFaultSkipCanonicalize) == 0;
  ScatterPart<D, W>(g, a.input_offset, part, [&](size_t k, uint4 sum) {
    const uint4 p = canonicalize ? Canonicalize<D>(sum) : sum;
#pragma unroll
    for (int d = 0; d < W; ++d) {
      uint8_t* dst = Region(g, d, g.layout.lamport_offset) + k * 16;
      if (d == static_cast<int>(g.rank)) {
        Store16(dst, p);
      } else {
        StoreNonTemporal16(dst, p);
      }
    }
  });
  // Phase B: rows are spread over blocks (block-uniform trip count); each thread spins on its
  // packs, consumes and re-arms them. Each pack is consumed by exactly one thread.
  uint8_t* staging = Region(g, g.rank, g.layout.lamport_offset);
  const uint32_t ppr = a.n / kPackElems<D>;
  for (uint32_t row = blockIdx.x; row < a.m; row += gridDim.x) {
    const bool ok = FusedRow<D, kQuant>(a, row, [&](uint32_t k, uint4& s) {
      const size_t pack = static_cast<size_t>(row) * ppr + k;
      uint8_t* slot = staging + pack * 16;
      auto owner = [&]() COLLTEST_INLINE_LAMBDA -> int { return OwnerOf(pack, packs, W); };
      auto arrived = [&](const uint4& p) COLLTEST_INLINE_LAMBDA {
        s = p;
        return Arrived<D>(p);
      };
      if (!WaitArrived<PollOrder::kVolatile16>(clk, g, Phase::kLamportPhaseB, owner, pack, slot,
                                               arrived)) {
        return false;
      }
      for (uint32_t i = 0; i < a.arm_repeat; ++i) Store16(slot, SentinelPack<D>());
      return true;
    });
    if (!ok) return;
  }
}

}  // namespace

// Every collective kernel is launched early (LaunchEarly): its launch overlaps the previous
// kernel's tail, and it waits for that kernel in EnterEarlyLaunched before touching memory.
KernelStatus LaunchOneStage(DType dtype, const DeviceGroup& g, const CallArgs& a, uint32_t grid,
                            uint32_t threads, Stream s) {
  return DispatchWorldDtypeEpilogue(
      g.world, dtype, a.quant.on, [&](auto w, auto d, auto q) -> KernelStatus {
        return LaunchEarly(
            OneStageKernel<decltype(d)::value, decltype(w)::value, decltype(q)::value>, grid,
            threads, s, g, a);
      });
}

KernelStatus LaunchReduceScatter(DType dtype, const DeviceGroup& g, const CallArgs& a,
                                 uint32_t grid, uint32_t threads, Stream s) {
  return DispatchWorldDtype(g.world, dtype, [&](auto w, auto d) -> KernelStatus {
    return LaunchEarly(ReduceScatterKernel<decltype(d)::value, decltype(w)::value>, grid, threads,
                       s, g, a);
  });
}

// Reads only this rank's staging: no world in its instantiation.
KernelStatus LaunchLoadNorm(DType dtype, const DeviceGroup& g, const CallArgs& a, uint32_t grid,
                            uint32_t threads, Stream s) {
  return DispatchDtype(dtype, [&](auto d) -> KernelStatus {
    return DispatchEpilogue(a.quant.on, [&](auto q) -> KernelStatus {
      return LaunchEarly(LoadNormKernel<decltype(d)::value, decltype(q)::value>, grid, threads, s,
                         g, a);
    });
  });
}

KernelStatus LaunchLamport(DType dtype, const DeviceGroup& g, const CallArgs& a, uint32_t grid,
                           uint32_t threads, Stream s) {
  return DispatchWorldDtypeEpilogue(
      g.world, dtype, a.quant.on, [&](auto w, auto d, auto q) -> KernelStatus {
        return LaunchEarly(
            LamportKernel<decltype(d)::value, decltype(w)::value, decltype(q)::value>, grid,
            threads, s, g, a);
      });
}

// Every spinning kernel a launcher above (or lamport_two_shot's) can launch at this world: the
// same lists, so no grid is sized by a kernel other than the one that runs. A failed query counts
// as 0 blocks.
KernelStatus SpinKernelBlocksPerSm(uint32_t world, uint32_t threads, int* blocks) {
  return DispatchWorld(world, [&](auto w) -> KernelStatus {
    constexpr int W = decltype(w)::value;
    int least = 1 << 20;
    auto take = [&](auto kernel) {
      int n = 0;
      const Error e = OccupancyBlocksPerSm(&n, kernel, static_cast<int>(threads));
      least = std::min(least, e == kSuccess ? n : 0);
    };
    ForEachValue(KernelDtypes{}, [&](auto d) {
      constexpr DType D = decltype(d)::value;
      take(ReduceScatterKernel<D, W>);
      ForEachValue(KernelEpilogues{}, [&](auto q) {
        take(OneStageKernel<D, W, decltype(q)::value>);
        take(LamportKernel<D, W, decltype(q)::value>);
      });
      int two_shot = 0;
      if (!LamportTwoShotBlocksPerSm(W, D, threads, &two_shot).ok()) two_shot = 0;
      least = std::min(least, two_shot);
    });
    *blocks = least;
    return GetLastError();
  });
}

}  // namespace colltest::gpu
