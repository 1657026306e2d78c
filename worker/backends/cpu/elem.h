// Storage types of the element types, as the kernels see them.
#pragma once

#include <cstdint>

#include "worker/numerics/dtype.h"

namespace colltest::cpu {

template <DType D>
struct Elem;

template <>
struct Elem<DType::kBf16> {
  using Storage = uint16_t;
  static constexpr uint32_t kNegZero = 0x8000u;
  static float ToFloat(Storage s) { return Bf16ToFloat(s); }
  static Storage FromFloat(float f) { return FloatToBf16(f); }
};

template <>
struct Elem<DType::kFp16> {
  using Storage = uint16_t;
  static constexpr uint32_t kNegZero = 0x8000u;
  static float ToFloat(Storage s) { return Fp16ToFloat(s); }
  static Storage FromFloat(float f) { return FloatToFp16(f); }
};

template <>
struct Elem<DType::kFp32> {
  using Storage = float;
  static constexpr uint32_t kNegZero = 0x80000000u;
  static float ToFloat(Storage s) { return s; }
  static Storage FromFloat(float f) { return f; }
};

template <DType D>
inline constexpr uint32_t kPackElems = 16 / sizeof(typename Elem<D>::Storage);

}  // namespace colltest::cpu
