// Inputs are a pure function of (seed, call, rank, row, column): every rank can regenerate every
// peer's input locally and build an independent reference with no communication, every call.
#pragma once

#include <cstdint>

#include "worker/numerics/dtype.h"

namespace colltest {

enum class Pattern : uint8_t { kNormal, kIntegers, kNegZero, kLarge, kDenormal, kSame };
const char* PatternName(Pattern p);

// Streams that are not a rank's input.
inline constexpr uint32_t kResidualStream = 0xfffffff0u;
inline constexpr uint32_t kWeightStream = 0xfffffff1u;
// neg_zero: which 16-byte packs are all -0.0 (shared by every rank, so not a rank's stream).
inline constexpr uint32_t kNegZeroPackStream = 0xfffffff2u;

// Counter-based hash (splitmix64 finaliser over the packed coordinates).
uint64_t HashCoords(uint64_t seed, uint64_t call, uint32_t stream, uint32_t row, uint32_t col);

// The value of rank `rank`'s input at (row, col) for call `call`, representable in `t`.
float InputValue(Pattern p, DType t, uint64_t seed, uint64_t call, uint32_t rank, uint32_t row,
                 uint32_t col);
// The shared residual (identical on every rank), representable in `t`.
float ResidualValue(Pattern p, DType t, uint64_t seed, uint64_t call, uint32_t row, uint32_t col);
// RMSNorm weight, representable in `t`.
float WeightValue(Pattern p, DType t, uint64_t seed, uint32_t col);

// Bulk forms for references and host-side buffers: out[c] equals the single-element function at
// (row, c) for c in [0, n), with the per-stream hashing and the pattern dispatch hoisted.
void InputRow(Pattern p, DType t, uint64_t seed, uint64_t call, uint32_t rank, uint32_t row,
              uint32_t n, float* out);
void ResidualRow(Pattern p, DType t, uint64_t seed, uint64_t call, uint32_t row, uint32_t n,
                 float* out);
void WeightRow(Pattern p, DType t, uint64_t seed, uint32_t n, float* out);

}  // namespace colltest
