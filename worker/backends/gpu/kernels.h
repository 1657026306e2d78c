// Host-callable launchers of every kernel of the GPU backend. Kernels know nothing of gRPC; the
// backend knows nothing of kernel templates: this header is the seam between them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "worker/backends/gpu/device_layout.h"
#include "worker/backends/gpu/gpu_runtime.h"
#include "worker/backends/gpu/kernel_dispatch.h"
#include "worker/backends/gpu/scratch_layout.h"
#include "worker/numerics/dtype.h"
#include "worker/numerics/input_hash.h"
#include "worker/numerics/quant_diff.h"
#include "worker/numerics/quant_epilogue.h"
#include "worker/numerics/tolerance.h"

namespace colltest::gpu {

// What a launch or an occupancy query answers: the runtime's error, or Unsupported when no kernel
// is instantiated for the values asked (kernel_dispatch.h), in which case nothing ran.
struct KernelStatus {
  Error error = kSuccess;
  std::optional<Unsupported> unsupported;

  KernelStatus() = default;
  KernelStatus(Error e) : error(e) {}              // NOLINT: a runtime call's answer as it is
  KernelStatus(Unsupported u) : unsupported(u) {}  // NOLINT: the dispatch's answer as it is
  bool ok() const { return error == kSuccess && !unsupported; }
};

inline std::string KernelStatusText(const KernelStatus& s) {
  return s.unsupported ? UnsupportedText(*s.unsupported) : ErrorString(s.error);
}

// Injected faults the kernels obey (docs/design.md section 7, common/fault_spec.h); 0 outside fault
// injection. A kernel parameter, so a test of it is uniform and costs no memory access.
enum FaultFlags : uint32_t {
  kFaultSkipCanonicalize = 1u << 0,  // Lamport producers store -0.0 as is
  kFaultSkipEndSync = 1u << 1,       // one_stage / reduce-scatter blocks skip their end barrier
};

// The quantising epilogue of a call (docs/quantisation.md), fused into the norm of every variant
// (device_quant.cuh). Off: the norm writes `out` only.
struct QuantArgs {
  bool on = false;
  QuantScheme scheme = QuantScheme::kFp8Token;
  Fp8Format format = Fp8Format::kE4m3fn;
  bool keep_normed = false;  // with `on`: `out` is written too
  float fp8_scale = 0.03125f;
  float nvfp4_global = 256.f;
  // How the check kernel accepts codes (quant_code_rule.h).
  QuantTolerance tolerance = QuantTolerance::kStrict;
  uint32_t world = 2;               // for the planted amax break
  uint32_t breaks = 0;              // QuantBreak flags (quant_breaks.h); 0 outside tests
  uint8_t* codes = nullptr;         // fp8: m * n; nvfp4: m * Nvfp4RowBytes(n)
  float* row_scales = nullptr;      // fp8_token: m
  uint8_t* block_scales = nullptr;  // nvfp4: m * Nvfp4RowBlocks(n)
  // Whether the norm writes `out`.
  COLLTEST_HD bool WritesNormed() const { return !on || keep_normed; }
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
  QuantArgs quant;
};

struct TbShape {
  uint32_t threads = 0;
  uint32_t packs_per_thread = 0;
  int blocks_per_sm = 0;  // co-resident blocks of that kernel at that thread count
};
// The collective kernels, one launcher per kernel (kernels_collective.cu, kernels_lamport_tb.cu,
// kernels_lamport_two_shot.cu). Each maps (group.world, dtype) onto its template instantiation
// through kernel_dispatch.h, as its occupancy query below does. Every one is launched early
// (LaunchEarly).
KernelStatus LaunchOneStage(DType dtype, const DeviceGroup& group, const CallArgs& args,
                            uint32_t grid, uint32_t threads, Stream stream);
// two_kernel: the reduce-scatter, then the norm over what it stored.
KernelStatus LaunchReduceScatter(DType dtype, const DeviceGroup& group, const CallArgs& args,
                                 uint32_t grid, uint32_t threads, Stream stream);
KernelStatus LaunchLoadNorm(DType dtype, const DeviceGroup& group, const CallArgs& args,
                            uint32_t grid, uint32_t threads, Stream stream);
KernelStatus LaunchLamport(DType dtype, const DeviceGroup& group, const CallArgs& args,
                           uint32_t grid, uint32_t threads, Stream stream);
// `threads`: LamportTbBlockShape's; packs per thread follow from it and n.
KernelStatus LaunchLamportTb(DType dtype, const DeviceGroup& group, const CallArgs& args,
                             uint32_t grid, uint32_t threads, Stream stream);
// The grid and threads of the other variants.
KernelStatus LaunchLamportTwoShot(DType dtype, const DeviceGroup& group, const CallArgs& args,
                                  uint32_t grid, uint32_t threads, Stream stream);

// threads_knob: 0 picks TbThreads; otherwise that many threads. The occupancy is that of the
// kernel LaunchLamportTb launches for this world, dtype and shape.
KernelStatus LamportTbBlockShape(uint32_t world, DType dtype, uint32_t n, uint32_t threads_knob,
                                 TbShape* shape);
// Co-resident blocks per multiprocessor of lamport_two_shot's kernel at `threads`.
KernelStatus LamportTwoShotBlocksPerSm(uint32_t world, DType dtype, uint32_t threads, int* blocks);
// Co-resident blocks per multiprocessor of the smallest-occupancy spinning kernel at `threads`:
// one_stage, two_kernel's reduce-scatter, lamport and lamport_two_shot at every dtype.
KernelStatus SpinKernelBlocksPerSm(uint32_t world, uint32_t threads, int* blocks);

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
  // The number of ranks: amax_last_rank puts its spike on rank world - 1 (input_elements.h).
  uint32_t world = 0;
};
Error LaunchGenerate(const GenerateArgs& args, Stream stream);
Error LaunchWeight(DType dtype, Pattern pattern, uint64_t seed, uint32_t n, void* weight,
                   Stream stream);

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
  // The call's epilogue: with `quant.on` its codes and scales are checked against the reference's
  // out (strict: every code and scale exact), and `out` only when the norm wrote it.
  QuantArgs quant;
};
// Regenerates every rank's inputs (no communication), computes the reference and compares.
Error LaunchCheck(const CheckArgs& args, Stream stream);

}  // namespace colltest::gpu
