// Compares a rank's outputs with the reference and keeps the docs/design.md section 5 statistics.
#pragma once

#include <cstdint>
#include <string>

#include "worker/numerics/dtype.h"
#include "worker/numerics/progress.h"
#include "worker/numerics/tolerance.h"

namespace colltest {

enum class OutputTensor : uint8_t { kResidualOut, kOut };

struct DiffSummary {
  uint64_t mismatches = 0;  // elements outside the profile
  uint64_t checked = 0;
  double max_abs_err = 0;
  double max_rel_err = 0;
  uint64_t max_ulp = 0;
  uint64_t nan_inf = 0;   // NaN/Inf got where want is finite
  std::string first_bad;  // "out[3,17] got 1.5 want 1.25 (call 7)"
  int64_t first_bad_call = -1;
  // True when the profile accepts the outputs (trtllm: mismatches <= 1% of checked).
  bool passed = true;
};

class DiffChecker {
 public:
  DiffChecker(DType t, const ToleranceProfile& profile) : dtype_(t), profile_(profile) {}

  // Compares one element of call `call`.
  void Compare(OutputTensor which, int64_t call, uint32_t row, uint32_t col, float got, float want);
  // Compares m * n elements of both outputs against a reference laid out the same way, calling
  // `progress` once per row of each output. `got_out` null: the kernel did not write out (a
  // quantising epilogue without keep_normed), so only residual_out is compared.
  void CompareRows(int64_t call, uint32_t m, uint32_t n, const float* got_residual_out,
                   const float* got_out, const float* want_residual_out, const float* want_out,
                   Progress progress = nullptr);
  DiffSummary Summary() const;

 private:
  DType dtype_;
  ToleranceProfile profile_;
  DiffSummary s_;
};

}  // namespace colltest
