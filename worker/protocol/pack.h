// The 16-byte pack: the unit every kernel of either backend loads, stores and polls.
#pragma once

#include <cstddef>
#include <cstdint>

#include "worker/numerics/dtype.h"

namespace colltest::protocol {

inline constexpr size_t kPackBytes = 16;
// Elements of T in one pack, as a compile-time constant that device code may use.
template <DType D>
inline constexpr uint32_t kPackElems = PackElems(D);
static_assert(kPackElems<DType::kBf16> * ElemBytes(DType::kBf16) == kPackBytes);

}  // namespace colltest::protocol
