// Sizes of one element by the API's dtype, for every room that turns a shape into bytes: the
// client's size flags and tune tables, colltestd's limits and the worker's buffers. The worker's
// numerics keep their own twin over their proto-free DType (worker/numerics/dtype.h);
// tests/unit/common/element_size_test.cc holds the two together.
#pragma once

#include <cstddef>
#include <cstdint>

#include "colltest/v1/colltest.pb.h"

namespace colltest::common {

// Bytes of one element; DTYPE_UNSPECIFIED counts as bf16, as the API defines.
constexpr size_t ElementBytes(v1::DType t) { return t == v1::DTYPE_FP32 ? 4 : 2; }

// Elements in one 16-byte pack, the unit every kernel loads, stores and polls: n must be a
// multiple of it.
constexpr uint32_t PackElems(v1::DType t) { return static_cast<uint32_t>(16 / ElementBytes(t)); }

}  // namespace colltest::common
