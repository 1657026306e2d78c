// Inputs are a pure function of (seed, call, rank, row, column): every rank can regenerate every
// peer's input locally and build an independent reference with no communication, every call.
// The element generator itself is input_elements.h, shared with the GPU kernels.
#pragma once

#include <cstdint>

#include "worker/numerics/dtype.h"

namespace colltest {

enum class Pattern : uint8_t {
  kNormal,
  kIntegers,
  kNegZero,
  kLarge,
  kDenormal,
  kSame,
  // Aimed at the quantising epilogues (docs/input.md).
  kAmaxLastRank,
  kQuantTies,
  kQuantSaturate,
  kZeroRows,
};
const char* PatternName(Pattern p);

// Streams that are not a rank's input.
inline constexpr uint32_t kResidualStream = 0xfffffff0u;
inline constexpr uint32_t kWeightStream = 0xfffffff1u;
// neg_zero: which 16-byte packs are all -0.0 (shared by every rank, so not a rank's stream).
inline constexpr uint32_t kNegZeroPackStream = 0xfffffff2u;
// amax_last_rank: which column of a row holds the spike, and its sign (shared by every rank).
inline constexpr uint32_t kSpikeStream = 0xfffffff3u;

// amax_last_rank: the last rank's value at the spike column, larger than any sum of normal values.
inline constexpr float kAmaxSpike = 64.0f;
// quant_ties: rank 0's input, so that every row's rms is this value and the normed y is +-weight.
inline constexpr float kQuantTiesInput = 4096.0f;
// quant_saturate: the weight of every column with col % 16 == kSaturatedColumn.
inline constexpr float kSaturatingWeight = 64.0f;
inline constexpr uint32_t kSaturatedColumn = 5;

// Counter-based hash (splitmix64 finaliser over the packed coordinates).
uint64_t HashCoords(uint64_t seed, uint64_t call, uint32_t stream, uint32_t row, uint32_t col);

// `world` (the number of ranks) and `n` (the row's length) matter only to amax_last_rank, which
// puts its spike in the row's last eighth, on the last rank.

// The value of rank `rank`'s input at (row, col) for call `call`, representable in `t`.
float InputValue(Pattern p, DType t, uint64_t seed, uint64_t call, uint32_t world, uint32_t rank,
                 uint32_t row, uint32_t n, uint32_t col);
// The shared residual (identical on every rank), representable in `t`.
float ResidualValue(Pattern p, DType t, uint64_t seed, uint64_t call, uint32_t row, uint32_t n,
                    uint32_t col);
// RMSNorm weight, representable in `t`.
float WeightValue(Pattern p, DType t, uint64_t seed, uint32_t col);

// Bulk forms for references and host-side buffers: out[c] equals the single-element function at
// (row, c) for c in [0, n), with the per-stream hashing and the pattern dispatch hoisted.
void InputRow(Pattern p, DType t, uint64_t seed, uint64_t call, uint32_t world, uint32_t rank,
              uint32_t row, uint32_t n, float* out);
void ResidualRow(Pattern p, DType t, uint64_t seed, uint64_t call, uint32_t row, uint32_t n,
                 float* out);
void WeightRow(Pattern p, DType t, uint64_t seed, uint32_t n, float* out);

}  // namespace colltest
