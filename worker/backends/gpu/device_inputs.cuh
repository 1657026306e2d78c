// Device generation of the input patterns of worker/numerics/input_hash.cc: the same counter hash
// of (seed, call, stream, row, column) and the same constants, so every rank produces identical
// values for the same coordinates and can regenerate any peer's input without communication.
#pragma once

#include <cstdint>

#include "worker/backends/gpu/elem_bits.h"
#include "worker/backends/gpu/gpu_runtime.h"
#include "worker/numerics/dtype.h"
#include "worker/numerics/input_hash.h"

namespace colltest::gpu {

inline constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ull;

__device__ __forceinline__ uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
__device__ __forceinline__ uint64_t StreamKey(uint64_t seed, uint64_t call, uint32_t stream) {
  uint64_t k = Mix64(seed + kGamma);
  k = Mix64(k + call * kGamma);
  return Mix64(k + static_cast<uint64_t>(stream) * kGamma);
}
__device__ __forceinline__ uint64_t HashAt(uint64_t key, uint32_t row, uint32_t col) {
  const uint64_t packed = (static_cast<uint64_t>(row) << 32) | col;
  return Mix64(key + packed * kGamma);
}
__device__ __forceinline__ uint32_t Below(uint32_t bits, uint32_t count) {
  return static_cast<uint32_t>((static_cast<uint64_t>(bits) * count) >> 32);
}

__device__ __forceinline__ uint32_t DevStoredBits(DType t, float f) {
  switch (t) {
    case DType::kBf16:
      return FloatToBf16(f);
    case DType::kFp16:
      return FloatToHalfBits(f);
    default:
      return __float_as_uint(f);
  }
}
__device__ __forceinline__ float DevRoundTo(DType t, float f) {
  return t == DType::kFp32 ? f : ElemFromBits(t, DevStoredBits(t, f));
}

__device__ __forceinline__ float NormalFromHash(uint64_t h) {
  const int32_t c =
      static_cast<int32_t>((h & 0xffff) + ((h >> 16) & 0xffff) + ((h >> 32) & 0xffff) + (h >> 48));
  constexpr float kScale = 1.7320508075688772f / 65536.0f;
  return __fmul_rn(static_cast<float>(c - 131070), kScale);
}

__device__ __forceinline__ float ElementFromHash(Pattern p, DType t, uint64_t h, uint64_t pack_h) {
  switch (p) {
    case Pattern::kNormal:
    case Pattern::kSame:
      return DevRoundTo(t, NormalFromHash(h));
    case Pattern::kIntegers:
      return static_cast<float>(static_cast<int32_t>(Below(static_cast<uint32_t>(h >> 32), 7)) - 3);
    case Pattern::kNegZero: {
      if (pack_h & 1) return -0.0f;
      if (h & 1) return 0.0f;
      const float mag = static_cast<float>(1 + Below(static_cast<uint32_t>(h >> 32), 3));
      return (h & 2) ? -mag : mag;
    }
    case Pattern::kLarge: {
      const uint32_t sign = static_cast<uint32_t>(h >> 32) & 0x80000000u;
      const uint32_t exp = 127u + 8u + static_cast<uint32_t>((h >> 40) & 3u);
      const uint32_t mant = static_cast<uint32_t>(h) & 0x7fffffu;
      return DevRoundTo(t, __uint_as_float(sign | (exp << 23) | mant));
    }
    case Pattern::kDenormal: {
      const uint32_t neg = static_cast<uint32_t>(h >> 63);
      const uint32_t bits = static_cast<uint32_t>(h);
      switch (t) {
        case DType::kBf16:
          return ElemFromBits(t, (neg ? 0x8000u : 0u) | (1u + Below(bits, 127)));
        case DType::kFp16:
          return ElemFromBits(t, (neg ? 0x8000u : 0u) | (1u + Below(bits, 1023)));
        default:
          return __uint_as_float((neg ? 0x80000000u : 0u) | (1u + Below(bits, 0x7fffffu)));
      }
    }
    // Not generated on the device yet: the backend answers UNSUPPORTED for them before any
    // kernel runs (gpu_case_runner.cc, RefuseQuant).
    case Pattern::kAmaxLastRank:
    case Pattern::kQuantTies:
    case Pattern::kQuantSaturate:
    case Pattern::kZeroRows:
      break;
  }
  return 0.0f;
}

// The keys of one (call, stream), computed once per thread and reused along a row.
struct StreamKeys {
  uint64_t key;
  uint64_t pack_key;  // neg_zero only
};
__device__ __forceinline__ StreamKeys KeysFor(Pattern p, uint64_t seed, uint64_t call,
                                              uint32_t stream) {
  return {StreamKey(seed, call, stream),
          p == Pattern::kNegZero ? StreamKey(seed, call, kNegZeroPackStream) : 0};
}
__device__ __forceinline__ uint32_t InputStream(Pattern p, uint32_t rank) {
  return p == Pattern::kSame ? 0 : rank;
}
__device__ __forceinline__ float ValueAt(Pattern p, DType t, const StreamKeys& k, uint32_t row,
                                         uint32_t col) {
  const uint64_t h = HashAt(k.key, row, col);
  const uint64_t pack_h =
      p == Pattern::kNegZero ? HashAt(k.pack_key, row, col / (t == DType::kFp32 ? 4u : 8u)) : 0;
  return ElementFromHash(p, t, h, pack_h);
}
__device__ __forceinline__ float WeightAt(Pattern p, DType t, uint64_t key, uint32_t col) {
  const uint64_t h = HashAt(key, 0, col);
  if (p == Pattern::kIntegers) {
    return static_cast<float>(1 + Below(static_cast<uint32_t>(h >> 32), 3));
  }
  return DevRoundTo(t, 0.5f + static_cast<float>(h >> 48) * 0x1p-16f);
}

}  // namespace colltest::gpu
