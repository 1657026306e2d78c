// Host-callable launchers of every kernel of the GPU backend. Kernels know nothing of gRPC; the
// backend knows nothing of kernel templates: this header is the seam between them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "worker/backends/gpu/device_layout.h"
#include "worker/backends/gpu/gpu_runtime.h"
#include "worker/numerics/dtype.h"
#include "worker/numerics/input_hash.h"
#include "worker/numerics/tolerance.h"

namespace colltest::gpu {

enum class Kind : uint8_t {
  kOneStage,
  kReduceScatter,
  kLoadNorm,
  kLamport,
  kLamportTb,
  kLamportTwoShot
};

// A row is held in registers: at most this many 16-byte packs per thread.
inline constexpr uint32_t kMaxRowPacks = 8;

// Injected faults the kernels obey (docs/design.md section 7, worker/fault_plan.h); 0 outside fault
// injection. A kernel parameter, so a test of it is uniform and costs no memory access.
enum FaultFlags : uint32_t {
  kFaultSkipCanonicalize = 1u << 0,  // Lamport producers store -0.0 as is
  kFaultSkipEndSync = 1u << 1,       // one_stage / reduce-scatter blocks skip their end barrier
};

struct CallArgs {
  uint32_t m = 0;
  uint32_t n = 0;
  bool residual = true;
  float eps = 1e-6f;
  size_t input_offset = 0;            // this call's input slot in every rank's input region
  const void* residual_in = nullptr;  // private, m * n
  const void* weight = nullptr;       // private, n
  void* residual_out = nullptr;       // private, m * n
  void* out = nullptr;                // private, m * n
  uint32_t arm_repeat = 1;  // 0: consumed Lamport packs stay un-armed (the skip_rearm fault)
  uint32_t faults = 0;      // FaultFlags
  uint64_t timeout_ns = 5'000'000'000ull;
};

// Whether W is a world size the kernels are instantiated for.
bool SupportedWorld(uint32_t world);

// lamport_tb's block shape (kernels_lamport_tb.cu). A thread owns one 16-byte pack of each row
// where a row has at most kMaxTbThreads packs, else the fewest of 1, 2, 4 or 8 that fit: its row
// stays in registers without the spills of a fixed 512-thread block holding up to 8 packs.
inline constexpr uint32_t kMaxTbThreads = 1024;
// Packs per thread for rows of `row_packs` packs at `threads` threads: 1, 2, 4 or 8; 0 when a row
// does not fit.
constexpr uint32_t TbPacksPerThread(uint32_t row_packs, uint32_t threads) {
  if (threads == 0) return 0;
  const uint32_t need = (row_packs + threads - 1) / threads;
  for (uint32_t p = 1; p <= kMaxRowPacks; p *= 2) {
    if (need <= p) return p;
  }
  return 0;
}
// The thread count for rows of `row_packs` packs: the fewest packs per thread that keep a block
// within kMaxTbThreads, rounded up to whole warps.
constexpr uint32_t TbThreads(uint32_t row_packs, uint32_t warp) {
  uint32_t p = 1;
  while (p < kMaxRowPacks && (row_packs + p - 1) / p > kMaxTbThreads) p *= 2;
  const uint32_t t = (row_packs + p - 1) / p;
  return t < warp ? warp : (t + warp - 1) / warp * warp;
}
struct TbShape {
  uint32_t threads = 0;
  uint32_t packs_per_thread = 0;
  int blocks_per_sm = 0;  // co-resident blocks of that kernel at that thread count
};
// threads_knob: 0 picks TbThreads; otherwise that many threads.
Error LamportTbBlockShape(uint32_t world, DType dtype, uint32_t n, uint32_t threads_knob,
                          TbShape* shape);
Error LaunchLamportTb(DType dtype, const DeviceGroup& group, const CallArgs& args, uint32_t grid,
                      uint32_t threads, Stream stream);

// lamport_two_shot (kernels_lamport_two_shot.cu): the grid and threads of the other variants.
Error LaunchLamportTwoShot(DType dtype, const DeviceGroup& group, const CallArgs& args,
                           uint32_t grid, uint32_t threads, Stream stream);
Error LamportTwoShotBlocksPerSm(uint32_t world, uint32_t threads, int* blocks);

// Co-resident blocks per multiprocessor of the smallest-occupancy spinning kernel at `threads`.
Error SpinKernelBlocksPerSm(uint32_t world, uint32_t threads, int* blocks);

Error LaunchCollective(Kind kind, DType dtype, const DeviceGroup& group, const CallArgs& args,
                       uint32_t grid, uint32_t threads, Stream stream);

// Fills `bytes` at `dst` with the dtype's sentinel (-0.0 in every lane).
Error LaunchArm(DType dtype, void* dst, size_t bytes, Stream stream);
// All ranks' block 0 meet through Signal::host (ordering arming before any peer's stores).
Error LaunchHostBarrier(const DeviceGroup& group, uint64_t timeout_ns, Stream stream);

// delay_rank: holds the stream for `delay_ns` before the rank's next call; ends early once any
// rank of the group gave up on the case.
Error LaunchFaultDelay(const DeviceGroup& group, uint64_t delay_ns, Stream stream);
// hang_end_sync: records the rank's own stop (Phase::kFaultHangEndSync, no awaited peer) in stream
// order after the call that skipped its end barrier.
Error LaunchFaultStop(const DeviceGroup& group, Stream stream);

struct GenerateArgs {
  DType dtype;
  Pattern pattern;
  uint64_t seed;
  uint64_t call;
  uint32_t rank;
  uint32_t m;
  uint32_t n;
  void* input;     // m * n of T
  void* residual;  // m * n of T
};
Error LaunchGenerate(const GenerateArgs& args, Stream stream);
Error LaunchWeight(DType dtype, Pattern pattern, uint64_t seed, uint32_t n, void* weight,
                   Stream stream);

// Device-side diff statistics of one check (docs/design.md section 5), accumulated with atomics.
struct DiffAccum {
  unsigned long long mismatches;
  unsigned long long checked;
  unsigned long long max_abs_bits;  // bits of a non-negative double: ordered like the value
  unsigned long long max_rel_bits;
  unsigned long long max_ulp;
  unsigned long long nan_inf;
  unsigned long long first_bad_key;  // tensor << 62 | element index; ~0 when none
};

struct CheckArgs {
  DType dtype;
  Pattern pattern;
  uint64_t seed;
  uint64_t call;
  uint32_t world;
  uint32_t m;
  uint32_t n;
  bool residual;
  float eps;
  ToleranceProfile profile;
  const void* got_residual_out;
  const void* got_out;
  float* want_residual_out;  // m * n, written
  float* want_out;           // m * n, written
  DiffAccum* accum;
};
// Regenerates every rank's inputs (no communication), computes the reference and compares.
Error LaunchCheck(const CheckArgs& args, Stream stream);

}  // namespace colltest::gpu
