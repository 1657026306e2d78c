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

// One element of an input or the residual. `pack_h` only matters for neg_zero.
inline float ElementFromHash(Pattern p, DType t, uint64_t h, uint64_t pack_h) {
  switch (p) {
    case Pattern::kNormal:
    case Pattern::kSame:
      return RoundTo(t, NormalFromHash(h));
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

inline float WeightFromHash(Pattern p, DType t, uint64_t h) {
  if (p == Pattern::kIntegers) {
    return static_cast<float>(1 + Below(static_cast<uint32_t>(h >> 32), 3));
  }
  // [0.5, 1.5): keeps the norm's output at the scale of its input without ever zeroing it.
  return RoundTo(t, 0.5f + static_cast<float>(h >> 48) * 0x1p-16f);
}

inline uint64_t PackHash(uint64_t pack_key, DType t, uint32_t row, uint32_t col) {
  return HashAt(pack_key, row, col / PackElems(t));
}

float StreamValue(Pattern p, DType t, uint64_t seed, uint64_t call, uint32_t stream, uint32_t row,
                  uint32_t col) {
  const uint64_t h = HashAt(StreamKey(seed, call, stream), row, col);
  const uint64_t pack_h =
      p == Pattern::kNegZero ? PackHash(StreamKey(seed, call, kNegZeroPackStream), t, row, col) : 0;
  return ElementFromHash(p, t, h, pack_h);
}

void StreamRow(Pattern p, DType t, uint64_t seed, uint64_t call, uint32_t stream, uint32_t row,
               uint32_t n, float* out) {
  const uint64_t key = StreamKey(seed, call, stream);
  if (p == Pattern::kNegZero) {
    const uint64_t pack_key = StreamKey(seed, call, kNegZeroPackStream);
    const uint32_t pe = PackElems(t);
    for (uint32_t c0 = 0; c0 < n; c0 += pe) {
      const uint64_t pack_h = PackHash(pack_key, t, row, c0);
      const uint32_t end = n - c0 < pe ? n : c0 + pe;
      for (uint32_t c = c0; c < end; ++c)
        out[c] = ElementFromHash(p, t, HashAt(key, row, c), pack_h);
    }
    return;
  }
  for (uint32_t c = 0; c < n; ++c) out[c] = ElementFromHash(p, t, HashAt(key, row, c), 0);
}

// `same` is rank 0's `normal` input on every rank.
inline uint32_t InputStream(Pattern p, uint32_t rank) { return p == Pattern::kSame ? 0 : rank; }

}  // namespace

uint64_t HashCoords(uint64_t seed, uint64_t call, uint32_t stream, uint32_t row, uint32_t col) {
  return HashAt(StreamKey(seed, call, stream), row, col);
}

float InputValue(Pattern p, DType t, uint64_t seed, uint64_t call, uint32_t rank, uint32_t row,
                 uint32_t col) {
  return StreamValue(p, t, seed, call, InputStream(p, rank), row, col);
}

float ResidualValue(Pattern p, DType t, uint64_t seed, uint64_t call, uint32_t row, uint32_t col) {
  return StreamValue(p, t, seed, call, kResidualStream, row, col);
}

float WeightValue(Pattern p, DType t, uint64_t seed, uint32_t col) {
  return WeightFromHash(p, t, HashAt(StreamKey(seed, 0, kWeightStream), 0, col));
}

void InputRow(Pattern p, DType t, uint64_t seed, uint64_t call, uint32_t rank, uint32_t row,
              uint32_t n, float* out) {
  StreamRow(p, t, seed, call, InputStream(p, rank), row, n, out);
}

void ResidualRow(Pattern p, DType t, uint64_t seed, uint64_t call, uint32_t row, uint32_t n,
                 float* out) {
  StreamRow(p, t, seed, call, kResidualStream, row, n, out);
}

void WeightRow(Pattern p, DType t, uint64_t seed, uint32_t n, float* out) {
  const uint64_t key = StreamKey(seed, 0, kWeightStream);
  for (uint32_t c = 0; c < n; ++c) out[c] = WeightFromHash(p, t, HashAt(key, 0, c));
}

}  // namespace colltest
