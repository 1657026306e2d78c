#include "worker/numerics/reference.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "worker/numerics/dtype.h"
#include "worker/numerics/input_hash.h"

namespace colltest {

ReferenceRows ComputeReference(const CaseShape& shape, uint64_t call, Progress progress) {
  const DType t = shape.dtype;
  const uint32_t m = shape.m;
  const uint32_t n = shape.n;
  ReferenceRows rows;
  rows.residual_out.resize(static_cast<size_t>(m) * n);
  rows.out.resize(static_cast<size_t>(m) * n);
  if (n == 0) return rows;

  std::vector<float> weight(n);
  WeightRow(shape.pattern, t, shape.seed, n, weight.data());
  std::vector<float> scratch(n);
  const double eps = static_cast<double>(shape.eps);

  for (uint32_t row = 0; row < m; ++row) {
    ReportProgress(progress);
    float* acc = rows.residual_out.data() + static_cast<size_t>(row) * n;
    // Start from rank 0's value rather than from +0.0, because +0.0 + -0.0 is +0.0: an element
    // that is -0.0 on every rank must sum to -0.0.
    if (shape.world > 0) {
      InputRow(shape.pattern, t, shape.seed, call, shape.world, 0, row, n, acc);
    } else {
      for (uint32_t c = 0; c < n; ++c) acc[c] = 0.0f;
    }
    for (uint32_t r = 1; r < shape.world; ++r) {
      InputRow(shape.pattern, t, shape.seed, call, shape.world, r, row, n, scratch.data());
      for (uint32_t c = 0; c < n; ++c) acc[c] += scratch[c];
    }
    for (uint32_t c = 0; c < n; ++c) acc[c] = RoundTo(t, acc[c]);
    if (shape.residual) {
      ResidualRow(shape.pattern, t, shape.seed, call, row, n, scratch.data());
      for (uint32_t c = 0; c < n; ++c) acc[c] = RoundTo(t, acc[c] + scratch[c]);
    }

    double sum_sq = 0;
    for (uint32_t c = 0; c < n; ++c) {
      const double v = acc[c];
      sum_sq += v * v;
    }
    const double inv_rms = 1.0 / std::sqrt(sum_sq / n + eps);
    float* out = rows.out.data() + static_cast<size_t>(row) * n;
    for (uint32_t c = 0; c < n; ++c) {
      const double v = static_cast<double>(acc[c]) * inv_rms * static_cast<double>(weight[c]);
      out[c] = RoundTo(t, static_cast<float>(v));
    }
  }
  return rows;
}

}  // namespace colltest
