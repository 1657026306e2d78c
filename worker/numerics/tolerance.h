// Tolerance profiles by name (docs/design.md section 5).
#pragma once

#include <cstdint>

#include "worker/numerics/dtype.h"

namespace colltest {

enum class ToleranceKind : uint8_t { kStrict, kAiter, kTrtllm };
const char* ToleranceName(ToleranceKind k);

struct ToleranceProfile {
  ToleranceKind kind = ToleranceKind::kStrict;
  // strict: residual_out must match bit for bit (+0 == -0) and out within out_max_ulp ulps.
  bool exact_residual = true;
  uint64_t out_max_ulp = 1;
  // aiter / trtllm: |got - want| <= atol + rtol * |want|.
  double atol = 0;
  double rtol = 0;
  // Fraction of elements that must be within tolerance (trtllm: 0.99; others 1.0).
  double min_pass_fraction = 1.0;
};

ToleranceProfile ProfileFor(ToleranceKind kind, DType t);

}  // namespace colltest
