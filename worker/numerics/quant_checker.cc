#include "worker/numerics/quant_checker.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "worker/numerics/fp4.h"
#include "worker/numerics/quant_diff.h"
#include "worker/numerics/quant_epilogue.h"
#include "worker/numerics/quant_plan.h"

namespace colltest {

QuantizedRow QuantizeReferenceRow(const QuantPlan& plan, const float* y, uint32_t n) {
  switch (plan.scheme.value_or(QuantScheme::kFp8Token)) {
    case QuantScheme::kFp8Token:
      return QuantizeFp8TokenRow(y, n, plan.format);
    case QuantScheme::kFp8Tensor:
      return QuantizeFp8TensorRow(y, n, plan.format, plan.fp8_scale);
    case QuantScheme::kNvfp4:
      return QuantizeNvfp4Row(y, n, plan.nvfp4_global_scale);
  }
  return QuantizedRow{};
}

QuantizedRow ReadQuantizedRow(const QuantPlan& plan, uint32_t n, const uint8_t* codes,
                              const float* row_scale, const uint8_t* block_scales) {
  QuantizedRow row;
  row.scheme = plan.scheme.value_or(QuantScheme::kFp8Token);
  row.format = plan.format;
  if (row.scheme == QuantScheme::kNvfp4) {
    row.scale = plan.nvfp4_global_scale;
    row.codes.resize(n);
    for (uint32_t i = 0; i < n; ++i) row.codes[i] = PackedE2m1At(codes, i);
    row.block_scales.assign(block_scales, block_scales + QuantBlockScalesPerRow(plan, n));
    return row;
  }
  row.scale = row.scheme == QuantScheme::kFp8Token ? *row_scale : plan.fp8_scale;
  row.codes.assign(codes, codes + n);
  return row;
}

void QuantChecker::CompareRow(int64_t call, uint32_t row, const float* y, uint32_t n,
                              const QuantizedRow& got) {
  const QuantizedRow want = QuantizeReferenceRow(plan_, y, n);
  const QuantDiffSummary d = CompareQuantizedRow(want, got, y, n, dtype_, plan_.tolerance);
  // The row as a check of its own, added like any other check's tally.
  QuantCheckSummary r;
  r.checked_codes = d.checked;
  r.code_mismatches = d.code_mismatches - d.tolerated;
  r.tolerated = d.tolerated;
  r.max_code_distance = d.max_code_distance;
  r.nan_codes = d.nan_codes;
  r.checked_scales = QuantRowScalesPerRow(plan_) + QuantBlockScalesPerRow(plan_, n);
  r.scale_mismatches = d.scale_mismatches;
  r.max_scale_rel_err = d.max_scale_rel_err;
  r.max_dequant_err = d.max_dequant_err;
  r.expected_dequant_err = d.expected_dequant_err;
  r.passed = d.passed;
  if (!d.passed) {
    r.rule = d.rule;
    r.first_bad =
        "row " + std::to_string(row) + ": " + d.first_bad + " (call " + std::to_string(call) + ")";
    r.first_bad_call = call;
  }
  MergeQuantCheck(r, &s_);
}

void MergeQuantCheck(const QuantCheckSummary& from, QuantCheckSummary* into) {
  QuantCheckSummary& s = *into;
  s.checked_codes += from.checked_codes;
  s.code_mismatches += from.code_mismatches;
  s.tolerated += from.tolerated;
  s.max_code_distance = std::max(s.max_code_distance, from.max_code_distance);
  s.nan_codes += from.nan_codes;
  s.checked_scales += from.checked_scales;
  s.scale_mismatches += from.scale_mismatches;
  s.max_scale_rel_err = std::max(s.max_scale_rel_err, from.max_scale_rel_err);
  s.max_dequant_err = std::max(s.max_dequant_err, from.max_dequant_err);
  s.expected_dequant_err = std::max(s.expected_dequant_err, from.expected_dequant_err);
  s.passed = s.passed && from.passed;
  if (from.first_bad.empty() || !s.first_bad.empty()) return;
  s.rule = from.rule;
  s.first_bad = from.first_bad;
  s.first_bad_call = from.first_bad_call;
}

}  // namespace colltest
