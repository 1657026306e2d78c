#include "worker/numerics/input_hash.h"

#include <cstdint>

#include "worker/numerics/dtype.h"
#include "worker/numerics/host_rounding.h"
#include "worker/numerics/input_elements.h"

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
    case Pattern::kAmaxLastRank:
      return "amax_last_rank";
    case Pattern::kQuantTies:
      return "quant_ties";
    case Pattern::kQuantSaturate:
      return "quant_saturate";
    case Pattern::kZeroRows:
      return "zero_rows";
  }
  return "unknown";
}

namespace {

using inputs::HashAt;
using inputs::kResidualRank;
using inputs::PlannedValue;
using inputs::PlanRow;
using inputs::PlanStream;
using inputs::RowPlan;
using inputs::StreamKey;
using inputs::StreamPlan;

// A row of one pattern's elements with the pattern a constant: flatten inlines ElementFromHash
// into the loop, where its pattern switch folds away. A cpu rank generates its inputs and the
// residual on the host every call, as many elements as the call sums.
template <Pattern P>
[[gnu::flatten]] void ElementsOfRowAs(DType t, uint64_t key, uint32_t row, uint32_t n, float* out) {
  for (uint32_t c = 0; c < n; ++c) {
    out[c] = inputs::ElementFromHash<HostRounding>(P, t, HashAt(key, row, c), 0);
  }
}

// The one dispatch from a pattern to its row loop (neg_zero, which hashes packs too, is not here).
void ElementsOfRow(Pattern p, DType t, uint64_t key, uint32_t row, uint32_t n, float* out) {
  switch (p) {
    case Pattern::kIntegers:
      return ElementsOfRowAs<Pattern::kIntegers>(t, key, row, n, out);
    case Pattern::kLarge:
      return ElementsOfRowAs<Pattern::kLarge>(t, key, row, n, out);
    case Pattern::kDenormal:
      return ElementsOfRowAs<Pattern::kDenormal>(t, key, row, n, out);
    case Pattern::kQuantTies:
      return ElementsOfRowAs<Pattern::kQuantTies>(t, key, row, n, out);
    default:  // normal, same, amax_last_rank, quant_saturate, zero_rows: the normal values
      return ElementsOfRowAs<Pattern::kNormal>(t, key, row, n, out);
  }
}

// The host's bulk form of PlannedValue: the pack hash of neg_zero once per pack, the spike placed
// after the row.
void PlannedRow(Pattern p, DType t, const StreamPlan& s, const RowPlan& r, uint32_t row, uint32_t n,
                float* out) {
  if (r.zero) {
    for (uint32_t c = 0; c < n; ++c) out[c] = 0.0f;
    return;
  }
  if (p == Pattern::kNegZero) {
    const uint32_t pe = PackElems(t);
    for (uint32_t c0 = 0; c0 < n; c0 += pe) {
      const uint64_t pack_h = inputs::PackHash(s.pack_key, t, row, c0);
      const uint32_t end = n - c0 < pe ? n : c0 + pe;
      for (uint32_t c = c0; c < end; ++c) {
        out[c] = inputs::ElementFromHash<HostRounding>(p, t, HashAt(s.key, row, c), pack_h);
      }
    }
  } else {
    ElementsOfRow(p, t, s.key, row, n, out);
  }
  if (r.spike_col < n) out[r.spike_col] = r.spike;
}

float StreamValue(Pattern p, DType t, const StreamPlan& s, uint32_t row, uint32_t n, uint32_t col) {
  return PlannedValue<HostRounding>(p, t, s, PlanRow(p, s, row, n), row, col);
}

void StreamRow(Pattern p, DType t, const StreamPlan& s, uint32_t row, uint32_t n, float* out) {
  PlannedRow(p, t, s, PlanRow(p, s, row, n), row, n, out);
}

}  // namespace

uint64_t HashCoords(uint64_t seed, uint64_t call, uint32_t stream, uint32_t row, uint32_t col) {
  return HashAt(StreamKey(seed, call, stream), row, col);
}

float InputValue(Pattern p, DType t, uint64_t seed, uint64_t call, uint32_t world, uint32_t rank,
                 uint32_t row, uint32_t n, uint32_t col) {
  return StreamValue(p, t, PlanStream(p, seed, call, world, rank), row, n, col);
}

float ResidualValue(Pattern p, DType t, uint64_t seed, uint64_t call, uint32_t row, uint32_t n,
                    uint32_t col) {
  return StreamValue(p, t, PlanStream(p, seed, call, 0, kResidualRank), row, n, col);
}

float WeightValue(Pattern p, DType t, uint64_t seed, uint32_t col) {
  return inputs::WeightAt<HostRounding>(p, t, inputs::WeightKey(seed), col);
}

void InputRow(Pattern p, DType t, uint64_t seed, uint64_t call, uint32_t world, uint32_t rank,
              uint32_t row, uint32_t n, float* out) {
  StreamRow(p, t, PlanStream(p, seed, call, world, rank), row, n, out);
}

void ResidualRow(Pattern p, DType t, uint64_t seed, uint64_t call, uint32_t row, uint32_t n,
                 float* out) {
  StreamRow(p, t, PlanStream(p, seed, call, 0, kResidualRank), row, n, out);
}

void WeightRow(Pattern p, DType t, uint64_t seed, uint32_t n, float* out) {
  const uint64_t key = inputs::WeightKey(seed);
  for (uint32_t c = 0; c < n; ++c) out[c] = inputs::WeightAt<HostRounding>(p, t, key, c);
}

}  // namespace colltest
