// Element types and 16-byte packs as the kernels see them, and the Lamport flag-in-data rules
// (DESIGN section 4): the sentinel is -0.0 in every lane, producers canonicalise -0.0 to +0.0,
// consumers compare every 32-bit word's BITS with the sentinel (never as floats: +0.0 == -0.0).
#pragma once

#include <cstdint>

#include "worker/backends/gpu/gpu_runtime.h"
#include "worker/numerics/dtype.h"

namespace colltest::gpu {

template <DType D>
struct DevElem;

template <>
struct DevElem<DType::kBf16> {
  static constexpr uint32_t kBits = 16;
  static constexpr uint32_t kNegZero = 0x8000u;
  __device__ static float ToFloat(uint32_t s) { return Bf16ToFloat(static_cast<uint16_t>(s)); }
  __device__ static uint32_t FromFloat(float f) { return FloatToBf16(f); }
};
template <>
struct DevElem<DType::kFp16> {
  static constexpr uint32_t kBits = 16;
  static constexpr uint32_t kNegZero = 0x8000u;
  __device__ static float ToFloat(uint32_t s) { return HalfBitsToFloat(static_cast<uint16_t>(s)); }
  __device__ static uint32_t FromFloat(float f) { return FloatToHalfBits(f); }
};
template <>
struct DevElem<DType::kFp32> {
  static constexpr uint32_t kBits = 32;
  static constexpr uint32_t kNegZero = 0x80000000u;
  __device__ static float ToFloat(uint32_t s) { return __uint_as_float(s); }
  __device__ static uint32_t FromFloat(float f) { return __float_as_uint(f); }
};

template <DType D>
inline constexpr uint32_t kElems = D == DType::kFp32 ? 4 : 8;

__device__ __forceinline__ uint32_t Word(const uint4& p, int i) {
  return i == 0 ? p.x : i == 1 ? p.y : i == 2 ? p.z : p.w;
}

template <DType D>
__device__ __forceinline__ void Unpack(const uint4& p, float (&f)[kElems<D>]) {
  const uint32_t w[4] = {p.x, p.y, p.z, p.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (D == DType::kFp32) {
      f[i] = __uint_as_float(w[i]);
    } else {
      f[2 * i] = DevElem<D>::ToFloat(w[i] & 0xffffu);  // little-endian: low half first
      f[2 * i + 1] = DevElem<D>::ToFloat(w[i] >> 16);
    }
  }
}

// Rounds every lane to T.
template <DType D>
__device__ __forceinline__ uint4 PackOf(const float (&f)[kElems<D>]) {
  uint32_t w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (D == DType::kFp32) {
      w[i] = __float_as_uint(f[i]);
    } else {
      w[i] = DevElem<D>::FromFloat(f[2 * i]) | (DevElem<D>::FromFloat(f[2 * i + 1]) << 16);
    }
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

template <DType D>
__device__ __forceinline__ constexpr uint32_t SentinelWord() {
  return D == DType::kFp32 ? DevElem<D>::kNegZero
                           : (DevElem<D>::kNegZero << 16) | DevElem<D>::kNegZero;
}

template <DType D>
__device__ __forceinline__ uint4 SentinelPack() {
  constexpr uint32_t w = SentinelWord<D>();
  return make_uint4(w, w, w, w);
}

template <DType D>
__device__ __forceinline__ uint32_t CanonicalWord(uint32_t w) {
  if constexpr (D == DType::kFp32) {
    return w == 0x80000000u ? 0u : w;
  } else {
    if ((w & 0xffffu) == 0x8000u) w &= 0xffff0000u;
    if ((w >> 16) == 0x8000u) w &= 0x0000ffffu;
    return w;
  }
}

// Producer side: no lane may leave holding -0.0.
template <DType D>
__device__ __forceinline__ uint4 Canonicalize(uint4 p) {
  return make_uint4(CanonicalWord<D>(p.x), CanonicalWord<D>(p.y), CanonicalWord<D>(p.z),
                    CanonicalWord<D>(p.w));
}

// Consumer side: arrived when no 32-bit word holds the sentinel bits.
template <DType D>
__device__ __forceinline__ bool Arrived(const uint4& p) {
  constexpr uint32_t s = SentinelWord<D>();
  return p.x != s && p.y != s && p.z != s && p.w != s;
}

}  // namespace colltest::gpu
