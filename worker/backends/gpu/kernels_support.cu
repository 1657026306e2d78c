// Kernels around the collectives: arming Lamport staging, the host barrier after arming, input
// generation and the communication-free reference with its diff statistics.
#include <cfloat>

#include "worker/backends/gpu/device_inputs.cuh"
#include "worker/backends/gpu/device_reduce.cuh"
#include "worker/backends/gpu/device_row.cuh"
#include "worker/backends/gpu/device_sync.cuh"
#include "worker/backends/gpu/kernels.h"
#include "worker/numerics/quant_code_rule.h"

namespace colltest::gpu {
namespace {

constexpr uint32_t kThreads = 256;

uint32_t GridFor(size_t items) {
  const size_t g = (items + kThreads - 1) / kThreads;
  return static_cast<uint32_t>(g < 4096 ? (g == 0 ? 1 : g) : 4096);
}

__global__ void ArmKernel(uint4* dst, size_t packs, uint32_t word) {
  const uint4 s = make_uint4(word, word, word, word);
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < packs;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    dst[i] = s;
  }
}

__global__ void HostBarrierKernel(DeviceGroup g, uint64_t timeout_ns) {
  SpinClock clk = StartClock(timeout_ns);
  BlockBarrier(g, BarrierSlot::kHost, clk, Phase::kHostBarrier);
}

// Ends early once any rank gave up: the delay has then done its work (a peer timed out waiting
// for this rank), and sleeping on before every later call would only push the case past the
// controller's deadline.
__global__ void FaultDelayKernel(DeviceGroup g, uint64_t delay_ns) {
  const uint64_t end = GlobalTimerNs() + delay_ns;
  while (GlobalTimerNs() < end) {
    for (uint32_t r = 0; r < g.world; ++r) {
      const auto* c = reinterpret_cast<const RankControl*>(g.base[r] + g.layout.control_offset);
      if (LoadVolatile32(&c->aborted) != 0) return;
    }
  }
}

// Raises the rank's abort flag too: whatever of this rank is still queued (a later replay of the
// graph that holds the call) then gives up at once instead of waiting for peers.
__global__ void FaultStopKernel(DeviceGroup g) { RecordHang(g, Phase::kFaultHangEndSync, -1, 0); }

__device__ __forceinline__ void StoreElem(void* base, DType t, size_t i, float v) {
  const uint32_t b = DevStoredBits(t, v);
  if (t == DType::kFp32) {
    static_cast<uint32_t*>(base)[i] = b;
  } else {
    static_cast<uint16_t*>(base)[i] = static_cast<uint16_t>(b);
  }
}
__device__ __forceinline__ float LoadElem(const void* base, DType t, size_t i) {
  const uint32_t b = t == DType::kFp32 ? static_cast<const uint32_t*>(base)[i]
                                       : static_cast<const uint16_t*>(base)[i];
  return ElemFromBits(t, b);
}

__global__ void GenerateKernel(GenerateArgs a) {
  const Pattern p = a.pattern;
  const StreamPlan in = inputs::PlanStream(p, a.seed, a.call, a.world, a.rank);
  const StreamPlan res = inputs::PlanStream(p, a.seed, a.call, a.world, inputs::kResidualRank);
  const size_t count = static_cast<size_t>(a.m) * a.n;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint32_t row = static_cast<uint32_t>(i / a.n), col = static_cast<uint32_t>(i % a.n);
    const RowPlan in_row = inputs::PlanRow(p, in, row, a.n);
    const RowPlan res_row = inputs::PlanRow(p, res, row, a.n);
    StoreElem(a.input, a.dtype, i, ValueAt(p, a.dtype, in, in_row, row, col));
    StoreElem(a.residual, a.dtype, i, ValueAt(p, a.dtype, res, res_row, row, col));
  }
}

__global__ void WeightKernel(DType t, Pattern p, uint64_t seed, uint32_t n, void* weight) {
  const uint64_t key = inputs::WeightKey(seed);
  for (uint32_t c = blockIdx.x * blockDim.x + threadIdx.x; c < n; c += gridDim.x * blockDim.x) {
    StoreElem(weight, t, c, WeightAt(p, t, key, c));
  }
}

// Per-thread statistics, merged with atomics once at the end.
struct LocalDiff {
  unsigned long long mismatches = 0, checked = 0, max_ulp = 0, nan_inf = 0;
  double max_abs = 0, max_rel = 0;
  unsigned long long first_bad = ~0ull;
};

__device__ __forceinline__ unsigned long long DevUlpDistance(DType t, float a, float b) {
  const uint32_t width = t == DType::kFp32 ? 32 : 16;
  const uint32_t sign = 1u << (width - 1);
  const uint32_t ba = DevStoredBits(t, a), bb = DevStoredBits(t, b);
  const long long ia = (ba & sign) ? -static_cast<long long>(ba & (sign - 1))
                                   : static_cast<long long>(ba & (sign - 1));
  const long long ib = (bb & sign) ? -static_cast<long long>(bb & (sign - 1))
                                   : static_cast<long long>(bb & (sign - 1));
  return static_cast<unsigned long long>(ia > ib ? ia - ib : ib - ia);
}

// The element rule of DiffChecker::Compare (worker/numerics/diff.cc).
__device__ __forceinline__ void Compare(const CheckArgs& a, LocalDiff& d, bool residual_out,
                                        size_t index, float got, float want) {
  ++d.checked;
  bool bad;
  if (!isfinite(want)) {
    bad = !(isnan(want) ? isnan(got) : got == want);
  } else if (!isfinite(got)) {
    ++d.nan_inf;
    bad = true;
  } else {
    const double g = got, w = want;
    const double abs_err = fabs(g - w);
    const double tiny = a.dtype == DType::kFp16 ? 0x1p-14 : static_cast<double>(FLT_MIN);
    const double rel_err = abs_err / fmax(fabs(w), tiny);
    const unsigned long long ulp = DevUlpDistance(a.dtype, got, want);
    d.max_abs = fmax(d.max_abs, abs_err);
    d.max_rel = fmax(d.max_rel, rel_err);
    if (ulp > d.max_ulp) d.max_ulp = ulp;
    if (a.profile.kind == ToleranceKind::kStrict) {
      const bool exact = residual_out && a.profile.exact_residual;
      bad = exact ? ulp != 0 : ulp > a.profile.out_max_ulp;
    } else {
      bad = abs_err > a.profile.atol + a.profile.rtol * fabs(w);
    }
  }
  if (!bad) return;
  ++d.mismatches;
  const unsigned long long key = (residual_out ? 0ull : 1ull << 62) | index;
  if (key < d.first_bad) d.first_bad = key;
}

// A thread's tally of the quantised output against the reference, merged with atomics at the end.
struct LocalQuant {
  unsigned long long codes = 0, bad_codes = 0, tolerated = 0, scales = 0, bad_scales = 0;
  unsigned long long first_bad_row = ~0ull;
};

// One code of row `row` against the reference's, by the host's rule (quant_code_rule.h, as
// quant_diff.cc counts it): a code that differs is tolerated or bad. `e` is the element's codes and
// scale, `y` its reference value.
__device__ __forceinline__ void CountCode(const CheckArgs& a, LocalQuant& q, uint32_t row,
                                          const ElementCodes& e, uint8_t got, uint8_t want,
                                          float y) {
  ++q.codes;
  if (got == want) return;
  if (ElementCodeAccepted<DeviceRounding>(a.quant.tolerance, e, got, want, y, a.dtype)) {
    ++q.tolerated;
    return;
  }
  ++q.bad_codes;
  if (row < q.first_bad_row) q.first_bad_row = row;
}

__device__ __forceinline__ void CountScale(LocalQuant& q, uint32_t row, bool bad) {
  ++q.scales;
  if (!bad) return;
  ++q.bad_scales;
  if (row < q.first_bad_row) q.first_bad_row = row;
}

// fp8 codes of one row from the reference's y (quant_epilogue.h, no planted break), against the
// kernel's codes and, for fp8_token, its row scale. Block-uniform (BlockMax).
__device__ void CheckFp8Row(const CheckArgs& a, uint32_t row, const float* y, LocalQuant& q) {
  const QuantArgs& k = a.quant;
  const bool token = k.scheme == QuantScheme::kFp8Token;
  float scale = 0.f;
  if (token) {
    float amax = 0.f;
    for (uint32_t col = threadIdx.x; col < a.n; col += blockDim.x) amax = AbsMaxStep(amax, y[col]);
    scale = Fp8TokenScale(BlockMax(amax), Fp8MaxFinite(k.format));
    if (threadIdx.x == 0) {
      CountScale(q, row, __float_as_uint(k.row_scales[row]) != __float_as_uint(scale));
    }
  }
  const float inverse = Fp8TensorInverse(k.fp8_scale);
  const ElementCodes e{k.scheme, k.format, token ? scale : inverse};
  const uint8_t* got = k.codes + static_cast<size_t>(row) * a.n;
  for (uint32_t col = threadIdx.x; col < a.n; col += blockDim.x) {
    const float scaled = token ? Fp8TokenScaled(y[col], scale) : Fp8TensorScaled(y[col], inverse);
    CountCode(a, q, row, e, got[col], EncodeFp8(k.format, scaled), y[col]);
  }
}

// nvfp4 of one row: a thread per block of 16 (its block scale, then its codes).
__device__ void CheckNvfp4Row(const CheckArgs& a, uint32_t row, const float* y, LocalQuant& q) {
  const QuantArgs& k = a.quant;
  const uint32_t blocks = Nvfp4RowBlocks(a.n);
  const uint8_t* got = k.codes + static_cast<size_t>(row) * Nvfp4RowBytes(a.n);
  for (uint32_t b = threadIdx.x; b < blocks; b += blockDim.x) {
    const uint32_t first = b * kNvfp4BlockElems;
    const uint32_t end = first + kNvfp4BlockElems < a.n ? first + kNvfp4BlockElems : a.n;
    float amax = 0.f;
    for (uint32_t i = first; i < end; ++i) amax = AbsMaxStep(amax, y[i]);
    const uint8_t sf = Nvfp4BlockScaleCode(amax, k.nvfp4_global);
    CountScale(q, row, k.block_scales[static_cast<size_t>(row) * blocks + b] != sf);
    const float out_scale = Nvfp4OutputScale(sf, k.nvfp4_global);
    const ElementCodes e{QuantScheme::kNvfp4, k.format, out_scale};
    for (uint32_t i = first; i < end; ++i) {
      CountCode(a, q, row, e, PackedE2m1At(got, i), EncodeE2m1(Nvfp4Scaled(y[i], out_scale)), y[i]);
    }
  }
}

__device__ __forceinline__ void MergeQuant(const LocalQuant& q, DiffAccum* accum) {
  if (q.codes == 0 && q.scales == 0) return;
  atomicAdd(&accum->quant_checked_codes, q.codes);
  atomicAdd(&accum->quant_code_mismatches, q.bad_codes);
  atomicAdd(&accum->quant_tolerated_codes, q.tolerated);
  atomicAdd(&accum->quant_checked_scales, q.scales);
  atomicAdd(&accum->quant_scale_mismatches, q.bad_scales);
  atomicMin(&accum->quant_first_bad_row, q.first_bad_row);
}

// One block per row (grid-stride): the all-reduce in fp32 in rank order rounded to T, the residual
// add rounded to T, the norm in fp64 rounded to T, as worker/numerics/reference.cc.
__global__ void CheckKernel(CheckArgs a) {
  const Pattern p = a.pattern;
  StreamPlan streams[kMaxRanks];
  for (uint32_t r = 0; r < a.world; ++r) {
    streams[r] = inputs::PlanStream(p, a.seed, a.call, a.world, r);
  }
  const StreamPlan res = inputs::PlanStream(p, a.seed, a.call, a.world, inputs::kResidualRank);
  const uint64_t wkey = inputs::WeightKey(a.seed);
  const bool check_out = a.quant.WritesNormed();
  LocalDiff d;
  LocalQuant q;
  for (uint32_t row = blockIdx.x; row < a.m; row += gridDim.x) {
    const size_t base = static_cast<size_t>(row) * a.n;
    RowPlan rows[kMaxRanks];
    for (uint32_t r = 0; r < a.world; ++r) rows[r] = inputs::PlanRow(p, streams[r], row, a.n);
    const RowPlan res_row = inputs::PlanRow(p, res, row, a.n);
    double sumsq = 0;
    for (uint32_t col = threadIdx.x; col < a.n; col += blockDim.x) {
      float acc = ValueAt(p, a.dtype, streams[0], rows[0], row, col);
      for (uint32_t r = 1; r < a.world; ++r) {
        acc = __fadd_rn(acc, ValueAt(p, a.dtype, streams[r], rows[r], row, col));
      }
      acc = DevRoundTo(a.dtype, acc);
      if (a.residual) {
        acc = DevRoundTo(a.dtype, __fadd_rn(acc, ValueAt(p, a.dtype, res, res_row, row, col)));
      }
      a.want_residual_out[base + col] = acc;
      sumsq += static_cast<double>(acc) * acc;
    }
    const double total = BlockSum(sumsq);
    const double inv_rms = 1.0 / sqrt(total / a.n + static_cast<double>(a.eps));
    for (uint32_t col = threadIdx.x; col < a.n; col += blockDim.x) {
      const float acc = a.want_residual_out[base + col];
      const double v =
          static_cast<double>(acc) * inv_rms * static_cast<double>(WeightAt(p, a.dtype, wkey, col));
      const float want = DevRoundTo(a.dtype, static_cast<float>(v));
      a.want_out[base + col] = want;
      Compare(a, d, true, base + col, LoadElem(a.got_residual_out, a.dtype, base + col), acc);
      if (check_out)
        Compare(a, d, false, base + col, LoadElem(a.got_out, a.dtype, base + col), want);
    }
    if (!a.quant.on) continue;
    __syncthreads();  // the row's reference, written by every thread, read by any
    if (a.quant.scheme == QuantScheme::kNvfp4) {
      CheckNvfp4Row(a, row, a.want_out + base, q);
    } else {
      CheckFp8Row(a, row, a.want_out + base, q);
    }
  }
  MergeQuant(q, a.accum);
  if (d.checked == 0) return;
  atomicAdd(&a.accum->mismatches, d.mismatches);
  atomicAdd(&a.accum->checked, d.checked);
  atomicAdd(&a.accum->nan_inf, d.nan_inf);
  atomicMax(&a.accum->max_ulp, d.max_ulp);
  atomicMax(&a.accum->max_abs_bits,
            static_cast<unsigned long long>(__double_as_longlong(d.max_abs)));
  atomicMax(&a.accum->max_rel_bits,
            static_cast<unsigned long long>(__double_as_longlong(d.max_rel)));
  atomicMin(&a.accum->first_bad_key, d.first_bad);
}

}  // namespace

Error LaunchArm(DType dtype, void* dst, size_t bytes, Stream stream) {
  if (bytes < 16) return kSuccess;
  const uint32_t word = dtype == DType::kFp32 ? 0x80000000u : 0x80008000u;
  ArmKernel<<<GridFor(bytes / 16), kThreads, 0, stream>>>(static_cast<uint4*>(dst), bytes / 16,
                                                          word);
  return GetLastError();
}

Error LaunchHostBarrier(const DeviceGroup& group, uint64_t timeout_ns, Stream stream) {
  HostBarrierKernel<<<1, 32, 0, stream>>>(group, timeout_ns);
  return GetLastError();
}

Error LaunchFaultDelay(const DeviceGroup& group, uint64_t delay_ns, Stream stream) {
  FaultDelayKernel<<<1, 1, 0, stream>>>(group, delay_ns);
  return GetLastError();
}

Error LaunchFaultStop(const DeviceGroup& group, Stream stream) {
  FaultStopKernel<<<1, 1, 0, stream>>>(group);
  return GetLastError();
}

Error LaunchGenerate(const GenerateArgs& args, Stream stream) {
  GenerateKernel<<<GridFor(static_cast<size_t>(args.m) * args.n), kThreads, 0, stream>>>(args);
  return GetLastError();
}

Error LaunchWeight(DType dtype, Pattern pattern, uint64_t seed, uint32_t n, void* weight,
                   Stream stream) {
  WeightKernel<<<GridFor(n), kThreads, 0, stream>>>(dtype, pattern, seed, n, weight);
  return GetLastError();
}

Error LaunchCheck(const CheckArgs& args, Stream stream) {
  const uint32_t grid = args.m < 1024 ? args.m : 1024;
  CheckKernel<<<grid == 0 ? 1 : grid, kThreads, 0, stream>>>(args);
  return GetLastError();
}

}  // namespace colltest::gpu
