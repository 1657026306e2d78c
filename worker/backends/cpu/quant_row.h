// The cpu kernels' quantising epilogue (docs/quantisation.md): one normed row, already rounded to
// T, into codes and scales by the COLLTEST_HD formulas of worker/numerics/quant_epilogue.h, the
// same fp32 operations in the same order as a GPU kernel evaluates them. The last stage of every
// variant (the one that writes `out`) calls it right after its norm.
#pragma once

#include <cstdint>

#include "worker/numerics/quant_plan.h"

namespace colltest::cpu {

// A call's quantised outputs: private to the rank, row-major, m rows each.
struct QuantOutputs {
  const QuantPlan* plan = nullptr;  // null, or no scheme: no quantising epilogue
  uint8_t* codes = nullptr;         // QuantCodeBytesPerRow bytes a row (nvfp4 packed)
  float* row_scales = nullptr;      // fp8_token: one a row
  uint8_t* block_scales = nullptr;  // nvfp4: QuantBlockScalesPerRow e4m3fn codes a row
  uint32_t world = 2;  // ranks of the case: where the last rank's chunk starts (plan->breaks)

  bool active() const { return plan != nullptr && plan->scheme.has_value(); }
  bool writes_out() const { return plan == nullptr || plan->writes_out(); }
};

// Quantises row `row` of the normed output (`y`, n values already rounded to T) into `out`.
void QuantizeRow(const QuantOutputs& out, uint32_t row, const float* y, uint32_t n);

}  // namespace colltest::cpu
