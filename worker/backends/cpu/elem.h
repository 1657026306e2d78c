// Storage types of the element types, as the cpu kernels see them.
#pragma once

#include <cstdint>

#include "worker/numerics/dtype.h"
#include "worker/protocol/pack.h"

namespace colltest::cpu {

using protocol::kPackElems;

template <DType D>
struct Elem;

template <>
struct Elem<DType::kBf16> {
  using Storage = uint16_t;
  static float ToFloat(Storage s) { return Bf16ToFloat(s); }
  static Storage FromFloat(float f) { return FloatToBf16(f); }
};

template <>
struct Elem<DType::kFp16> {
  using Storage = uint16_t;
  static float ToFloat(Storage s) { return Fp16ToFloat(s); }
  static Storage FromFloat(float f) { return FloatToFp16(f); }
};

template <>
struct Elem<DType::kFp32> {
  using Storage = float;
  static float ToFloat(Storage s) { return s; }
  static Storage FromFloat(float f) { return f; }
};

}  // namespace colltest::cpu
