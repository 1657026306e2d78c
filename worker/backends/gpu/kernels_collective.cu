// The four protocol variants of the fused all-reduce + residual + RMSNorm on the GPU. The cpu
// backend's kernels.cc is the executable specification; these follow it step by step, and both
// take the layout, the Lamport word rules, the partitioning and the lamport_tb rotation from
// worker/protocol. The all-reduce sums in fp32 in rank order starting from rank 0's value and
// rounds to T, so the all-reduce part is bit-identical across variants.
#include <algorithm>

#include "worker/backends/gpu/device_elem.cuh"
#include "worker/backends/gpu/device_row.cuh"
#include "worker/backends/gpu/device_sync.cuh"
#include "worker/backends/gpu/kernels.h"
#include "worker/protocol/partition.h"
#include "worker/protocol/triple_buffer.h"

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
using protocol::TbStaged;

__device__ __forceinline__ uint8_t* Region(const DeviceGroup& g, uint32_t rank, size_t offset) {
  return g.base[rank] + offset;
}
__device__ __forceinline__ uint8_t* TbSlot(const DeviceGroup& g, uint32_t rank, uint32_t buffer,
                                           uint32_t src) {
  return g.base[rank] + g.layout.TbSlotOffset(buffer, src);
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

template <DType D, int W>
__global__ void __launch_bounds__(kMaxThreads, kMinBlocksPerSm)
    OneStageKernel(DeviceGroup g, CallArgs a) {
  SpinClock clk = StartClock(a.timeout_ns);
  if (!BlockBarrier(g, BarrierSlot::kStart, clk, Phase::kOneStageStart)) return;
  const uint32_t ppr = a.n / kPackElems<D>;
  for (uint32_t row = blockIdx.x; row < a.m; row += gridDim.x) {
    FusedRow<D>(a, row, [&](uint32_t k, uint4& s) {
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

template <DType D>
__global__ void __launch_bounds__(kMaxThreads, kMinBlocksPerSm)
    LoadNormKernel(DeviceGroup g, CallArgs a) {
  const uint8_t* tmp = Region(g, g.rank, g.layout.tmp_offset);
  const uint32_t ppr = a.n / kPackElems<D>;
  for (uint32_t row = blockIdx.x; row < a.m; row += gridDim.x) {
    FusedRow<D>(a, row, [&](uint32_t k, uint4& s) {
      s = LoadShared16(tmp + (static_cast<size_t>(row) * ppr + k) * 16);
      return true;
    });
  }
}

template <DType D, int W>
__global__ void __launch_bounds__(kMaxThreads, kMinBlocksPerSm)
    LamportKernel(DeviceGroup g, CallArgs a) {
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
    const bool ok = FusedRow<D>(a, row, [&](uint32_t k, uint4& s) {
      const size_t pack = static_cast<size_t>(row) * ppr + k;
      uint8_t* slot = staging + pack * 16;
      for (;;) {
        s = LoadVolatile16(slot);
        if (Arrived<D>(s)) break;
        if (!SpinTick(clk, g, Phase::kLamportPhaseB, static_cast<int>(OwnerOf(pack, packs, W)),
                      pack)) {
          return false;
        }
      }
      for (uint32_t i = 0; i < a.arm_repeat; ++i) Store16(slot, SentinelPack<D>());
      return true;
    });
    if (!ok) return;
  }
}

template <DType D, int W>
__global__ void __launch_bounds__(kMaxThreads, kMinBlocksPerSm)
    LamportTbKernel(DeviceGroup g, CallArgs a) {
  constexpr uint32_t E = kPackElems<D>;
  SpinClock clk = StartClock(a.timeout_ns);
  RankControl* control = ControlOf(g);
  // The counter lives on the device and advances inside the kernel, so graph replays rotate too.
  // Every block reads it before the last block of this call advances it.
  const uint64_t call = *reinterpret_cast<volatile uint64_t*>(&control->tb_call);
  const uint32_t buf = protocol::TbBuffer(call);
  const size_t bytes = static_cast<size_t>(a.m) * a.n * (D == DType::kFp32 ? 4 : 2);
  const size_t packs = bytes / 16;

  // Push: this rank's canonicalised input into slot `rank` of every PEER's current buffer. No
  // barrier: a peer can be at most one call ahead and writes into a buffer this rank is not using.
  // The own slot stays armed and unused (TbStaged): the consumer reads this rank's input directly
  // (same canonicalised bits), which saves a local copy of the input and its clearing.
  // skip_canonicalize (injected) pushes -0.0 as is; the own value read below is no flag and
  // keeps its canonicalisation.
  const uint8_t* input = Region(g, g.rank, g.layout.input_offset) + a.input_offset;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const bool canonicalize = (a.faults & kFaultSkipCanonicalize) == 0;
  for (size_t k = blockIdx.x * blockDim.x + threadIdx.x; k < packs; k += stride) {
    const uint4 v = *reinterpret_cast<const uint4*>(input + k * 16);
    const uint4 p = canonicalize ? Canonicalize<D>(v) : v;
#pragma unroll
    for (int d = 0; d < W; ++d) {
      if (TbStaged(g.rank, d)) StoreNonTemporal16(TbSlot(g, d, buf, g.rank) + k * 16, p);
    }
  }
  // Consume: per row, every rank's slot summed in rank order from rank 0's value.
  const uint32_t ppr = a.n / E;
  for (uint32_t row = blockIdx.x; row < a.m; row += gridDim.x) {
    const bool ok = FusedRow<D>(a, row, [&](uint32_t k, uint4& s) {
      const size_t pack = static_cast<size_t>(row) * ppr + k;
      float acc[E];
#pragma unroll
      for (int r = 0; r < W; ++r) {
        uint4 p;
        if (!TbStaged(r, g.rank)) {
          p = Canonicalize<D>(*reinterpret_cast<const uint4*>(input + pack * 16));
        } else {
          const uint8_t* slot = TbSlot(g, g.rank, buf, r) + pack * 16;
          for (;;) {
            p = LoadVolatile16(slot);
            if (Arrived<D>(p)) break;
            if (!SpinTick(clk, g, Phase::kLamportTbConsume, r, pack)) return false;
          }
        }
        float v[E];
        Unpack<D>(p, v);
#pragma unroll
        for (uint32_t e = 0; e < E; ++e) acc[e] = r == 0 ? v[e] : acc[e] + v[e];
      }
      s = PackOf<D>(acc);
      return true;
    });
    if (!ok) return;
  }
  // Clear the previous call's buffer: every peer finished writing it (this rank consumed all of
  // it) and its next writer is a peer at call + 2, which needs this rank's data of call + 1.
  const uint32_t prev = protocol::TbClearedBuffer(call);
  const size_t prev_packs = control->tb_used_bytes[prev] / 16;
  for (uint32_t r = 0; r < W; ++r) {
    if (!TbStaged(r, g.rank)) continue;  // never written
    uint8_t* slot = TbSlot(g, g.rank, prev, r);
    for (size_t k = blockIdx.x * blockDim.x + threadIdx.x; k < prev_packs; k += stride) {
      Store16(slot + k * 16, SentinelPack<D>());
    }
  }
  // The last block to finish records this call's size and advances the counter.
  __syncthreads();
  if (threadIdx.x == 0) {
    FenceDevice();
    if (atomicAdd(&control->tb_blocks_done, 1u) + 1 == gridDim.x) {
      control->tb_used_bytes[buf] = bytes;
      control->tb_blocks_done = 0;
      FenceDevice();
      *reinterpret_cast<volatile uint64_t*>(&control->tb_call) = call + 1;
    }
  }
}

template <DType D, int W>
Error LaunchTyped(Kind kind, const DeviceGroup& g, const CallArgs& a, uint32_t grid,
                  uint32_t threads, Stream s) {
  switch (kind) {
    case Kind::kOneStage:
      OneStageKernel<D, W><<<grid, threads, 0, s>>>(g, a);
      break;
    case Kind::kReduceScatter:
      ReduceScatterKernel<D, W><<<grid, threads, 0, s>>>(g, a);
      break;
    case Kind::kLoadNorm:
      LoadNormKernel<D><<<grid, threads, 0, s>>>(g, a);
      break;
    case Kind::kLamport:
      LamportKernel<D, W><<<grid, threads, 0, s>>>(g, a);
      break;
    case Kind::kLamportTb:
      LamportTbKernel<D, W><<<grid, threads, 0, s>>>(g, a);
      break;
  }
  return GetLastError();
}

template <int W>
Error LaunchWorld(Kind kind, DType dtype, const DeviceGroup& g, const CallArgs& a, uint32_t grid,
                  uint32_t threads, Stream s) {
  switch (dtype) {
    case DType::kBf16:
      return LaunchTyped<DType::kBf16, W>(kind, g, a, grid, threads, s);
    case DType::kFp16:
      return LaunchTyped<DType::kFp16, W>(kind, g, a, grid, threads, s);
    case DType::kFp32:
      return LaunchTyped<DType::kFp32, W>(kind, g, a, grid, threads, s);
  }
  return GetLastError();
}

template <int W>
int MinBlocksPerSm(uint32_t threads) {
  int best = 1 << 20;
  auto take = [&](auto kernel) {
    int n = 0;
    if (OccupancyBlocksPerSm(&n, kernel, static_cast<int>(threads)) == kSuccess) {
      best = std::min(best, n);
    } else {
      best = 0;
    }
  };
  take(OneStageKernel<DType::kBf16, W>);
  take(OneStageKernel<DType::kFp32, W>);
  take(ReduceScatterKernel<DType::kBf16, W>);
  take(LamportKernel<DType::kBf16, W>);
  take(LamportKernel<DType::kFp16, W>);
  take(LamportKernel<DType::kFp32, W>);
  take(LamportTbKernel<DType::kBf16, W>);
  take(LamportTbKernel<DType::kFp16, W>);
  take(LamportTbKernel<DType::kFp32, W>);
  return best;
}

}  // namespace

bool SupportedWorld(uint32_t world) { return world == 2 || world == 4 || world == 8; }

Error SpinKernelBlocksPerSm(uint32_t world, uint32_t threads, int* blocks) {
  switch (world) {
    case 2:
      *blocks = MinBlocksPerSm<2>(threads);
      break;
    case 4:
      *blocks = MinBlocksPerSm<4>(threads);
      break;
    default:
      *blocks = MinBlocksPerSm<8>(threads);
      break;
  }
  return GetLastError();
}

Error LaunchCollective(Kind kind, DType dtype, const DeviceGroup& g, const CallArgs& a,
                       uint32_t grid, uint32_t threads, Stream s) {
  switch (g.world) {
    case 2:
      return LaunchWorld<2>(kind, dtype, g, a, grid, threads, s);
    case 4:
      return LaunchWorld<4>(kind, dtype, g, a, grid, threads, s);
    case 8:
      return LaunchWorld<8>(kind, dtype, g, a, grid, threads, s);
    default:
      return COLLTEST_GPU_API(ErrorInvalidValue);
  }
}

}  // namespace colltest::gpu
