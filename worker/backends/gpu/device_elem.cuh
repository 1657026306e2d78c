// Element types and 16-byte packs as the kernels see them, and the Lamport flag-in-data rules of
// worker/protocol/lamport_word.h applied to a uint4, one 32-bit word at a time, exactly as the cpu
// backend applies them to its Pack.
#pragma once

#include <cstdint>

#include "worker/backends/gpu/gpu_runtime.h"
#include "worker/numerics/dtype.h"
#include "worker/protocol/lamport_word.h"
#include "worker/protocol/pack.h"

namespace colltest::gpu {

template <DType D>
struct DevElem;

template <>
struct DevElem<DType::kBf16> {
  static constexpr uint32_t kBits = 16;
  __device__ static float ToFloat(uint32_t s) { return Bf16ToFloat(static_cast<uint16_t>(s)); }
  __device__ static uint32_t FromFloat(float f) { return FloatToBf16(f); }
};
template <>
struct DevElem<DType::kFp16> {
  static constexpr uint32_t kBits = 16;
  __device__ static float ToFloat(uint32_t s) { return HalfBitsToFloat(static_cast<uint16_t>(s)); }
  __device__ static uint32_t FromFloat(float f) { return FloatToHalfBits(f); }
};
template <>
struct DevElem<DType::kFp32> {
  static constexpr uint32_t kBits = 32;
  __device__ static float ToFloat(uint32_t s) { return __uint_as_float(s); }
  __device__ static uint32_t FromFloat(float f) { return __float_as_uint(f); }
};

using protocol::kPackElems;

template <DType D>
__device__ __forceinline__ void Unpack(const uint4& p, float (&f)[kPackElems<D>]) {
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
__device__ __forceinline__ uint4 PackOf(const float (&f)[kPackElems<D>]) {
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
__device__ __forceinline__ uint4 SentinelPack() {
  constexpr uint32_t w = protocol::SentinelWord<D>();
  return make_uint4(w, w, w, w);
}

// Producer side: no lane may leave holding -0.0.
template <DType D>
__device__ __forceinline__ uint4 Canonicalize(uint4 p) {
  return make_uint4(protocol::CanonicalWord<D>(p.x), protocol::CanonicalWord<D>(p.y),
                    protocol::CanonicalWord<D>(p.z), protocol::CanonicalWord<D>(p.w));
}

// Consumer side: arrived when every 32-bit word has.
template <DType D>
__device__ __forceinline__ bool Arrived(const uint4& p) {
  return protocol::WordArrived<D>(p.x) && protocol::WordArrived<D>(p.y) &&
         protocol::WordArrived<D>(p.z) && protocol::WordArrived<D>(p.w);
}

}  // namespace colltest::gpu
