// The element generator of the input patterns (docs/input.md), written once for the host
// (input_hash.cc) and the GPU kernels (worker/backends/gpu/device_inputs.cuh): a counter hash of
// (seed, call, stream, row, column), the row plan (zero rows, amax_last_rank's spike) and each
// pattern's element and weight. Everything is COLLTEST_HD; rounding to T comes from a policy
// (host_rounding.h says why), so host and device produce the same values bit for bit.
//
// Only 64-bit integer ops, bit construction and fp32 operations that are exact or rounded once are
// used. Every product goes through MulRn (host_device.h): nvcc contracts a * b + c into one fma by
// default, which would skip the product's own rounding and change a value where the host rounds
// twice. Every product here happens to be exact (an integer below 2^24 times a power of two) but
// one, normal's single rounding, which no addition follows; MulRn keeps that true whatever the
// caller adds.
#pragma once

#include <cstdint>

#include "worker/numerics/dtype.h"
#include "worker/numerics/host_device.h"
#include "worker/numerics/input_hash.h"

namespace colltest::inputs {

// PackElems of dtype.h, which device code cannot call (a constexpr host function).
COLLTEST_HD uint32_t PackElemsOf(DType t) { return t == DType::kFp32 ? 4u : 8u; }
static_assert(PackElems(DType::kFp32) == 4 && PackElems(DType::kBf16) == 8 &&
              PackElems(DType::kFp16) == 8);

inline constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ull;
// The residual is no rank's input: PlanStream's rank for it.
inline constexpr uint32_t kResidualRank = 0xffffffffu;
inline constexpr uint32_t kNoColumn = 0xffffffffu;

// The splitmix64 finaliser: a bijection on 64 bits with full avalanche.
COLLTEST_HD uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Each coordinate goes through a full finaliser before the next one is added, so no coordinate can
// cancel another. Computed once per stream, not per element.
COLLTEST_HD uint64_t StreamKey(uint64_t seed, uint64_t call, uint32_t stream) {
  uint64_t k = Mix64(seed + kGamma);
  k = Mix64(k + call * kGamma);
  return Mix64(k + static_cast<uint64_t>(stream) * kGamma);
}

// splitmix64 with the stream key as state and (row, col) packed without loss as the counter.
COLLTEST_HD uint64_t HashAt(uint64_t key, uint32_t row, uint32_t col) {
  const uint64_t packed = (static_cast<uint64_t>(row) << 32) | col;
  return Mix64(key + packed * kGamma);
}

// Uniform integer in [0, count) from 32 bits by multiply-high: no division on the device.
COLLTEST_HD uint32_t Below(uint32_t bits, uint32_t count) {
  return static_cast<uint32_t>((static_cast<uint64_t>(bits) * count) >> 32);
}

// Irwin-Hall: the sum of four uniforms (c_i + 0.5) / 2^16 has mean 2 and variance 1/3, so
// (sum - 2) * sqrt(3) is close to N(0, 1) on [-2 sqrt 3, 2 sqrt 3]. The integer numerator is exact
// in fp32, which leaves a single rounding.
COLLTEST_HD float NormalFromHash(uint64_t h) {
  const int32_t c =
      static_cast<int32_t>((h & 0xffff) + ((h >> 16) & 0xffff) + ((h >> 32) & 0xffff) + (h >> 48));
  constexpr float kScale = 1.7320508075688772f / 65536.0f;
  return MulRn(static_cast<float>(c - 131070), kScale);
}

COLLTEST_HD float SmallIntFromHash(uint64_t h) {
  return static_cast<float>(static_cast<int32_t>(Below(static_cast<uint32_t>(h >> 32), 7)) - 3);
}

// A nonzero integer in [-3, 3].
COLLTEST_HD float NonzeroIntFromHash(uint64_t h) {
  const float mag = static_cast<float>(1 + Below(static_cast<uint32_t>(h >> 32), 3));
  return (h & 2) ? -mag : mag;
}

// Magnitude in [2^8, 2^12) before rounding (rounding may reach 2^12 itself); 8 ranks plus a
// residual sum to at most 9 * 2^12 = 36864, below the fp16 maximum of 65504.
template <class Rounding>
COLLTEST_HD float LargeFromHash(DType t, uint64_t h) {
  const uint32_t sign = static_cast<uint32_t>(h >> 32) & 0x80000000u;
  const uint32_t exp = 127u + 8u + static_cast<uint32_t>((h >> 40) & 3u);
  const uint32_t mant = static_cast<uint32_t>(h) & 0x7fffffu;
  return Rounding::RoundTo(t, BitsToFloat(sign | (exp << 23) | mant));
}

// Built in T's own encoding with a zero exponent field and a nonzero mantissa, so it is a
// subnormal of T by construction (bf16 shares fp32's exponent range, so its subnormals are fp32's).
template <class Rounding>
COLLTEST_HD float DenormalFromHash(DType t, uint64_t h) {
  const bool negative = (h >> 63) != 0;
  const uint32_t bits = static_cast<uint32_t>(h);
  switch (t) {
    case DType::kBf16:
      return Rounding::FromBits(t, (negative ? 0x8000u : 0u) | (1u + Below(bits, 127)));
    case DType::kFp16:
      return Rounding::FromBits(t, (negative ? 0x8000u : 0u) | (1u + Below(bits, 1023)));
    case DType::kFp32:
      return BitsToFloat((negative ? 0x80000000u : 0u) | (1u + Below(bits, 0x7fffffu)));
  }
  return 0.0f;
}

// One element of an input or the residual, outside the zero rows and the spike that the row plan
// places. `pack_h` only matters for neg_zero.
template <class Rounding>
COLLTEST_HD float ElementFromHash(Pattern p, DType t, uint64_t h, uint64_t pack_h) {
  switch (p) {
    case Pattern::kNormal:
    case Pattern::kSame:
    case Pattern::kAmaxLastRank:
    case Pattern::kQuantSaturate:
    case Pattern::kZeroRows:
      return Rounding::RoundTo(t, NormalFromHash(h));
    case Pattern::kQuantTies:
      // Rank 0 only (the other streams are zero rows): one value in every column, so the rms is
      // its magnitude and the normed y is the weight with this sign.
      return (h >> 63) != 0 ? -kQuantTiesInput : kQuantTiesInput;
    case Pattern::kIntegers:
      return SmallIntFromHash(h);
    case Pattern::kNegZero:
      // Whole packs of -0.0 on every rank are what collides with a -0.0 sentinel; the other packs
      // keep some +0.0 so that canonicalisation must not touch positive zeros either.
      if (pack_h & 1) return -0.0f;
      return (h & 1) ? 0.0f : NonzeroIntFromHash(h);
    case Pattern::kLarge:
      return LargeFromHash<Rounding>(t, h);
    case Pattern::kDenormal:
      return DenormalFromHash<Rounding>(t, h);
  }
  return 0.0f;
}

// quant_ties' weights, in blocks of 16 columns, even and odd blocks alternating; every one exact
// in bf16, fp16 and fp32. The normed y is +-weight: these are the values the epilogues quantise.
// Switches, not tables: device code cannot index a host constexpr array.
// Even blocks: at nvfp4's default global scale 256 the block amax 6 gives the block scale 256 and
// the output scale 1, so y is quantised as it is: 6 and the midpoints of neighbouring E2M1 values
// (the block's second half repeats its first).
COLLTEST_HD float E2m1TieWeight(uint32_t i) {
  switch (i % 8) {
    case 0:
      return 6.0f;
    case 1:
      return 0.25f;
    case 2:
      return 0.75f;
    case 3:
      return 1.25f;
    case 4:
      return 1.75f;
    case 5:
      return 2.5f;
    case 6:
      return 3.5f;
    default:
      return 5.0f;
  }
}
// Odd blocks, in FP8 code units (y = v / 32): 448 (y = 14) is the row amax, so fp8_token's scale
// in e4m3fn is 14 / 448 = 1/32, fp8_tensor's default scale; the others are midpoints of
// neighbouring e4m3fn codes (432 between 416 and 448; 3 * 2^-10 between the subnormals 2^-9 and
// 2^-8). Position 8 holds 3 * 2^-10 where position 0 holds 448; the rest repeats every 8.
COLLTEST_HD float Fp8TieCodeUnits(uint32_t i) {
  if (i == 0) return 448.0f;
  if (i == 8) return 0x3p-10f;
  switch (i % 8) {
    case 1:
      return 1.0625f;
    case 2:
      return 1.1875f;
    case 3:
      return 2.375f;
    case 4:
      return 4.25f;
    case 5:
      return 13.5f;
    case 6:
      return 432.0f;
    default:
      return 0.53125f;
  }
}
inline constexpr float kFp8TieScale = 1.0f / 32;

COLLTEST_HD float QuantTiesWeight(uint32_t col) {
  const uint32_t i = col % 16;
  return (col / 16) % 2 == 0 ? E2m1TieWeight(i) : MulRn(Fp8TieCodeUnits(i), kFp8TieScale);
}

template <class Rounding>
COLLTEST_HD float WeightFromHash(Pattern p, DType t, uint64_t h, uint32_t col) {
  if (p == Pattern::kIntegers) {
    return static_cast<float>(1 + Below(static_cast<uint32_t>(h >> 32), 3));
  }
  if (p == Pattern::kQuantTies) return QuantTiesWeight(col);
  if (p == Pattern::kQuantSaturate && col % 16 == kSaturatedColumn) return kSaturatingWeight;
  // [0.5, 1.5): keeps the norm's output at the scale of its input without ever zeroing it.
  return Rounding::RoundTo(t, 0.5f + MulRn(static_cast<float>(h >> 48), 0x1p-16f));
}

COLLTEST_HD uint64_t WeightKey(uint64_t seed) { return StreamKey(seed, 0, kWeightStream); }

template <class Rounding>
COLLTEST_HD float WeightAt(Pattern p, DType t, uint64_t weight_key, uint32_t col) {
  return WeightFromHash<Rounding>(p, t, HashAt(weight_key, 0, col), col);
}

COLLTEST_HD uint64_t PackHash(uint64_t pack_key, DType t, uint32_t row, uint32_t col) {
  return HashAt(pack_key, row, col / PackElemsOf(t));
}

// `same` is rank 0's `normal` input on every rank.
COLLTEST_HD uint32_t InputStream(Pattern p, uint32_t rank) {
  return p == Pattern::kSame ? 0 : rank;
}

// What every row of one stream (a rank's input, or the residual) shares in one call: computed once
// per stream, by the host per row and by a kernel's thread once.
struct StreamPlan {
  uint64_t key = 0;          // the stream's hash key
  uint64_t pack_key = 0;     // neg_zero: the key of the shared pack stream
  uint64_t spike_key = 0;    // amax_last_rank: the key of the shared spike stream
  bool zero = false;         // quant_ties: every row is +0.0 (every stream but rank 0's)
  bool holds_spike = false;  // amax_last_rank: the last rank's stream
};

// What one row of one stream adds to its StreamPlan.
struct RowPlan {
  bool zero = false;  // the whole row is +0.0
  // amax_last_rank: the column that holds the spike on the last rank and +0.0 in every other
  // stream (so the sum there is exactly the spike); kNoColumn for the other patterns.
  uint32_t spike_col = kNoColumn;
  float spike = 0.0f;  // this stream's value at spike_col
};

// `rank` is kResidualRank for the residual; `world` matters only to amax_last_rank.
COLLTEST_HD StreamPlan PlanStream(Pattern p, uint64_t seed, uint64_t call, uint32_t world,
                                  uint32_t rank) {
  StreamPlan s;
  const bool residual = rank == kResidualRank;
  s.key = StreamKey(seed, call, residual ? kResidualStream : InputStream(p, rank));
  if (p == Pattern::kNegZero) s.pack_key = StreamKey(seed, call, kNegZeroPackStream);
  if (p == Pattern::kQuantTies) s.zero = rank != 0;
  if (p == Pattern::kAmaxLastRank) {
    // Independent of the call: the spike's column moves with the row only.
    s.spike_key = StreamKey(seed, 0, kSpikeStream);
    s.holds_spike = !residual && rank + 1 == world;
  }
  return s;
}

// The spike of amax_last_rank sits in the row's last eighth, which lies inside the last rank's
// chunk at W = 2, 4, 8, so the row's amax after the norm needs the last rank's input. It depends
// on (seed, row) only, so every rank and the residual agree on it.
COLLTEST_HD void PlaceSpike(const StreamPlan& s, uint32_t row, uint32_t n, RowPlan& r) {
  const uint64_t h = HashAt(s.spike_key, row, 0);
  const uint32_t span = n / 8 > 1 ? n / 8 : 1;
  r.spike_col = n - 1 - Below(static_cast<uint32_t>(h >> 32), span);
  r.spike = s.holds_spike ? ((h & 1) != 0 ? -kAmaxSpike : kAmaxSpike) : 0.0f;
}

// `n` is the row's length.
COLLTEST_HD RowPlan PlanRow(Pattern p, const StreamPlan& s, uint32_t row, uint32_t n) {
  RowPlan r;
  r.zero = s.zero || (p == Pattern::kZeroRows && (row & 1) != 0);
  if (p == Pattern::kAmaxLastRank && n > 0) PlaceSpike(s, row, n, r);
  return r;
}

// The element at (row, col) of the stream and row planned.
template <class Rounding>
COLLTEST_HD float PlannedValue(Pattern p, DType t, const StreamPlan& s, const RowPlan& r,
                               uint32_t row, uint32_t col) {
  if (r.zero) return 0.0f;
  if (col == r.spike_col) return r.spike;
  const uint64_t pack_h = p == Pattern::kNegZero ? PackHash(s.pack_key, t, row, col) : 0;
  return ElementFromHash<Rounding>(p, t, HashAt(s.key, row, col), pack_h);
}

}  // namespace colltest::inputs
