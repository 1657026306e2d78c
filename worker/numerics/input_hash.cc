#include "worker/numerics/input_hash.h"

#include <cstdint>

#include "worker/numerics/dtype.h"

namespace colltest {

const char* PatternName(Pattern p) {
  switch (p) {
    case Pattern::kNormal:
      return "normal";
    case Pattern::kIntegers:
      return "integers";
    case Pattern::kNegZero:
      return "neg_zero";
    case Pattern::kLarge:
      return "large";
    case Pattern::kDenormal:
      return "denormal";
    case Pattern::kSame:
      return "same";
    case Pattern::kAmaxLastRank:
      return "amax_last_rank";
    case Pattern::kQuantTies:
      return "quant_ties";
    case Pattern::kQuantSaturate:
      return "quant_saturate";
    case Pattern::kZeroRows:
      return "zero_rows";
  }
  return "unknown";
}

namespace {

// Everything below uses only 64-bit integer ops, bit construction and fp32 operations that are
// exact or rounded once (`normal`: one multiply of an exact integer by kScale), so a CUDA / HIP
// port with the same constants reproduces these values bit for bit.

constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ull;

// The splitmix64 finaliser: a bijection on 64 bits with full avalanche.
inline uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Each coordinate goes through a full finaliser before the next one is added, so no coordinate can
// cancel another. Computed once per row by the bulk functions.
inline uint64_t StreamKey(uint64_t seed, uint64_t call, uint32_t stream) {
  uint64_t k = Mix64(seed + kGamma);
  k = Mix64(k + call * kGamma);
  return Mix64(k + static_cast<uint64_t>(stream) * kGamma);
}

// splitmix64 with the stream key as state and (row, col) packed without loss as the counter.
inline uint64_t HashAt(uint64_t key, uint32_t row, uint32_t col) {
  const uint64_t packed = (static_cast<uint64_t>(row) << 32) | col;
  return Mix64(key + packed * kGamma);
}

// Uniform integer in [0, count) from 32 bits by multiply-high: no division on the device.
inline uint32_t Below(uint32_t bits, uint32_t count) {
  return static_cast<uint32_t>((static_cast<uint64_t>(bits) * count) >> 32);
}

// Irwin-Hall: the sum of four uniforms (c_i + 0.5) / 2^16 has mean 2 and variance 1/3, so
// (sum - 2) * sqrt(3) is close to N(0, 1) on [-2 sqrt 3, 2 sqrt 3]. The integer numerator is exact
// in fp32, which leaves a single rounding.
inline float NormalFromHash(uint64_t h) {
  const int32_t c =
      static_cast<int32_t>((h & 0xffff) + ((h >> 16) & 0xffff) + ((h >> 32) & 0xffff) + (h >> 48));
  constexpr float kScale = 1.7320508075688772f / 65536.0f;
  return static_cast<float>(c - 131070) * kScale;
}

inline float SmallIntFromHash(uint64_t h) {
  return static_cast<float>(static_cast<int32_t>(Below(static_cast<uint32_t>(h >> 32), 7)) - 3);
}

// A nonzero integer in [-3, 3].
inline float NonzeroIntFromHash(uint64_t h) {
  const float mag = static_cast<float>(1 + Below(static_cast<uint32_t>(h >> 32), 3));
  return (h & 2) ? -mag : mag;
}

// Magnitude in [2^8, 2^12) before rounding (rounding may reach 2^12 itself); 8 ranks plus a
// residual sum to at most 9 * 2^12 = 36864, below the fp16 maximum of 65504.
inline float LargeFromHash(DType t, uint64_t h) {
  const uint32_t sign = static_cast<uint32_t>(h >> 32) & 0x80000000u;
  const uint32_t exp = 127u + 8u + static_cast<uint32_t>((h >> 40) & 3u);
  const uint32_t mant = static_cast<uint32_t>(h) & 0x7fffffu;
  return RoundTo(t, BitsToFloat(sign | (exp << 23) | mant));
}

// Built in T's own encoding with a zero exponent field and a nonzero mantissa, so it is a
// subnormal of T by construction (bf16 shares fp32's exponent range, so its subnormals are fp32's).
inline float DenormalFromHash(DType t, uint64_t h) {
  const bool negative = (h >> 63) != 0;
  const uint32_t bits = static_cast<uint32_t>(h);
  switch (t) {
    case DType::kBf16:
      return Bf16ToFloat(
          static_cast<uint16_t>((negative ? 0x8000u : 0u) | (1u + Below(bits, 127))));
    case DType::kFp16:
      return Fp16ToFloat(
          static_cast<uint16_t>((negative ? 0x8000u : 0u) | (1u + Below(bits, 1023))));
    case DType::kFp32:
      return BitsToFloat((negative ? 0x80000000u : 0u) | (1u + Below(bits, 0x7fffffu)));
  }
  return 0.0f;
}

// One element of an input or the residual, outside the zero rows and the spike that RowPlan
// places. `pack_h` only matters for neg_zero.
inline float ElementFromHash(Pattern p, DType t, uint64_t h, uint64_t pack_h) {
  switch (p) {
    case Pattern::kNormal:
    case Pattern::kSame:
    case Pattern::kAmaxLastRank:
    case Pattern::kQuantSaturate:
    case Pattern::kZeroRows:
      return RoundTo(t, NormalFromHash(h));
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
      return LargeFromHash(t, h);
    case Pattern::kDenormal:
      return DenormalFromHash(t, h);
  }
  return 0.0f;
}

// quant_ties' weights, in blocks of 16 columns, even and odd blocks alternating; every one exact
// in bf16, fp16 and fp32. The normed y is +-weight: these are the values the epilogues quantise.
// Even blocks: at nvfp4's default global scale 256 the block amax 6 gives the block scale 256 and
// the output scale 1, so y is quantised as it is: 6 and the midpoints of neighbouring E2M1 values.
constexpr float kE2m1TieWeights[16] = {6, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5,
                                       6, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5};
// Odd blocks, in FP8 code units (y = v / 32): 448 (y = 14) is the row amax, so fp8_token's scale
// in e4m3fn is 14 / 448 = 1/32, fp8_tensor's default scale; the others are midpoints of
// neighbouring e4m3fn codes (432 between 416 and 448; 3 * 2^-10 between the subnormals 2^-9 and
// 2^-8).
constexpr float kFp8TieCodeUnits[16] = {448,     1.0625, 1.1875, 2.375, 4.25, 13.5, 432, 0.53125,
                                        0x3p-10, 1.0625, 1.1875, 2.375, 4.25, 13.5, 432, 0.53125};
constexpr float kFp8TieScale = 1.0f / 32;

inline float QuantTiesWeight(uint32_t col) {
  const uint32_t i = col % 16;
  return (col / 16) % 2 == 0 ? kE2m1TieWeights[i] : kFp8TieCodeUnits[i] * kFp8TieScale;
}

inline float WeightFromHash(Pattern p, DType t, uint64_t h, uint32_t col) {
  if (p == Pattern::kIntegers) {
    return static_cast<float>(1 + Below(static_cast<uint32_t>(h >> 32), 3));
  }
  if (p == Pattern::kQuantTies) return QuantTiesWeight(col);
  if (p == Pattern::kQuantSaturate && col % 16 == kSaturatedColumn) return kSaturatingWeight;
  // [0.5, 1.5): keeps the norm's output at the scale of its input without ever zeroing it.
  return RoundTo(t, 0.5f + static_cast<float>(h >> 48) * 0x1p-16f);
}

inline uint64_t PackHash(uint64_t pack_key, DType t, uint32_t row, uint32_t col) {
  return HashAt(pack_key, row, col / PackElems(t));
}

// `same` is rank 0's `normal` input on every rank.
inline uint32_t InputStream(Pattern p, uint32_t rank) { return p == Pattern::kSame ? 0 : rank; }

// The residual is no rank's input.
constexpr uint32_t kResidualRank = 0xffffffffu;
constexpr uint32_t kNoColumn = 0xffffffffu;

// What every element of one row of one stream shares, computed once per row.
struct RowPlan {
  uint64_t key = 0;       // the stream's hash key
  uint64_t pack_key = 0;  // neg_zero: the key of the shared pack stream
  bool zero = false;      // the whole row is +0.0
  // amax_last_rank: the column that holds the spike on the last rank and +0.0 in every other
  // stream (so the sum there is exactly the spike); kNoColumn for the other patterns.
  uint32_t spike_col = kNoColumn;
  float spike = 0.0f;  // this stream's value at spike_col
};

// The spike of amax_last_rank sits in the row's last eighth, which lies inside the last rank's
// chunk at W = 2, 4, 8, so the row's amax after the norm needs the last rank's input. It depends
// on (seed, row) only, so every rank and the residual agree on it.
void PlaceSpike(uint64_t seed, uint32_t world, uint32_t rank, uint32_t row, uint32_t n,
                RowPlan& plan) {
  const uint64_t h = HashAt(StreamKey(seed, 0, kSpikeStream), row, 0);
  const uint32_t span = n / 8 > 1 ? n / 8 : 1;
  plan.spike_col = n - 1 - Below(static_cast<uint32_t>(h >> 32), span);
  const bool last_rank = rank != kResidualRank && rank + 1 == world;
  plan.spike = last_rank ? ((h & 1) != 0 ? -kAmaxSpike : kAmaxSpike) : 0.0f;
}

// `rank` is kResidualRank for the residual.
RowPlan PlanRow(Pattern p, uint64_t seed, uint64_t call, uint32_t world, uint32_t rank,
                uint32_t row, uint32_t n) {
  RowPlan plan;
  const uint32_t stream = rank == kResidualRank ? kResidualStream : InputStream(p, rank);
  plan.key = StreamKey(seed, call, stream);
  if (p == Pattern::kNegZero) plan.pack_key = StreamKey(seed, call, kNegZeroPackStream);
  if (p == Pattern::kZeroRows) plan.zero = (row & 1) != 0;
  if (p == Pattern::kQuantTies) plan.zero = rank != 0;
  if (p == Pattern::kAmaxLastRank && n > 0) PlaceSpike(seed, world, rank, row, n, plan);
  return plan;
}

float PlannedValue(Pattern p, DType t, const RowPlan& plan, uint32_t row, uint32_t col) {
  if (plan.zero) return 0.0f;
  if (col == plan.spike_col) return plan.spike;
  const uint64_t pack_h = p == Pattern::kNegZero ? PackHash(plan.pack_key, t, row, col) : 0;
  return ElementFromHash(p, t, HashAt(plan.key, row, col), pack_h);
}

void PlannedRow(Pattern p, DType t, const RowPlan& plan, uint32_t row, uint32_t n, float* out) {
  if (plan.zero) {
    for (uint32_t c = 0; c < n; ++c) out[c] = 0.0f;
    return;
  }
  if (p == Pattern::kNegZero) {
    const uint32_t pe = PackElems(t);
    for (uint32_t c0 = 0; c0 < n; c0 += pe) {
      const uint64_t pack_h = PackHash(plan.pack_key, t, row, c0);
      const uint32_t end = n - c0 < pe ? n : c0 + pe;
      for (uint32_t c = c0; c < end; ++c)
        out[c] = ElementFromHash(p, t, HashAt(plan.key, row, c), pack_h);
    }
  } else {
    for (uint32_t c = 0; c < n; ++c) out[c] = ElementFromHash(p, t, HashAt(plan.key, row, c), 0);
  }
  if (plan.spike_col < n) out[plan.spike_col] = plan.spike;
}

}  // namespace

uint64_t HashCoords(uint64_t seed, uint64_t call, uint32_t stream, uint32_t row, uint32_t col) {
  return HashAt(StreamKey(seed, call, stream), row, col);
}

float InputValue(Pattern p, DType t, uint64_t seed, uint64_t call, uint32_t world, uint32_t rank,
                 uint32_t row, uint32_t n, uint32_t col) {
  return PlannedValue(p, t, PlanRow(p, seed, call, world, rank, row, n), row, col);
}

float ResidualValue(Pattern p, DType t, uint64_t seed, uint64_t call, uint32_t row, uint32_t n,
                    uint32_t col) {
  return PlannedValue(p, t, PlanRow(p, seed, call, 0, kResidualRank, row, n), row, col);
}

float WeightValue(Pattern p, DType t, uint64_t seed, uint32_t col) {
  return WeightFromHash(p, t, HashAt(StreamKey(seed, 0, kWeightStream), 0, col), col);
}

void InputRow(Pattern p, DType t, uint64_t seed, uint64_t call, uint32_t world, uint32_t rank,
              uint32_t row, uint32_t n, float* out) {
  PlannedRow(p, t, PlanRow(p, seed, call, world, rank, row, n), row, n, out);
}

void ResidualRow(Pattern p, DType t, uint64_t seed, uint64_t call, uint32_t row, uint32_t n,
                 float* out) {
  PlannedRow(p, t, PlanRow(p, seed, call, 0, kResidualRank, row, n), row, n, out);
}

void WeightRow(Pattern p, DType t, uint64_t seed, uint32_t n, float* out) {
  const uint64_t key = StreamKey(seed, 0, kWeightStream);
  for (uint32_t c = 0; c < n; ++c) out[c] = WeightFromHash(p, t, HashAt(key, 0, c), c);
}

}  // namespace colltest
