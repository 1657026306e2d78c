#include "worker/numerics/diff.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "worker/numerics/dtype.h"
#include "worker/numerics/tolerance.h"

namespace colltest {

namespace {

// Relative errors divide by at least T's smallest normal: near zero the relative error means
// nothing, and this keeps it finite while still large for a wrong sign or a wrong magnitude.
double TinyFor(DType t) {
  return t == DType::kFp16 ? 0x1p-14 : static_cast<double>(std::numeric_limits<float>::min());
}

// Shortest text that reads back as the same float, so that "got 1.5 want 1.25" shows exactly the
// bits compared and two values that differ by one ulp never print the same.
void AppendFloat(std::string& s, float f) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, f);
  s.append(buf, r.ptr);
}

const char* TensorName(OutputTensor which) {
  return which == OutputTensor::kResidualOut ? "residual_out" : "out";
}

}  // namespace

void DiffChecker::Compare(OutputTensor which, int64_t call, uint32_t row, uint32_t col, float got,
                          float want) {
  ++s_.checked;
  bool bad;
  if (!std::isfinite(want)) {
    // Only reachable with inputs that overflow T; then the kernel must agree on the special value.
    bad = !(std::isnan(want) ? std::isnan(got) : got == want);
  } else if (!std::isfinite(got)) {
    // Kept out of the error maxima, which would otherwise read inf / nan and hide the finite
    // errors elsewhere; nan_inf reports it instead.
    ++s_.nan_inf;
    bad = true;
  } else {
    const double g = got;
    const double w = want;
    const double abs_err = std::fabs(g - w);
    const double rel_err = abs_err / std::fmax(std::fabs(w), TinyFor(dtype_));
    const uint64_t ulp = UlpDistance(dtype_, got, want);
    if (abs_err > s_.max_abs_err) s_.max_abs_err = abs_err;
    if (rel_err > s_.max_rel_err) s_.max_rel_err = rel_err;
    if (ulp > s_.max_ulp) s_.max_ulp = ulp;
    if (profile_.kind == ToleranceKind::kStrict) {
      const bool exact = which == OutputTensor::kResidualOut && profile_.exact_residual;
      bad = exact ? ulp != 0 : ulp > profile_.out_max_ulp;
    } else {
      bad = abs_err > profile_.atol + profile_.rtol * std::fabs(w);
    }
  }
  if (!bad) return;
  ++s_.mismatches;
  if (!s_.first_bad.empty()) return;
  s_.first_bad_call = call;
  std::string& msg = s_.first_bad;
  msg = TensorName(which);
  msg += '[';
  msg += std::to_string(row);
  msg += ',';
  msg += std::to_string(col);
  msg += "] got ";
  AppendFloat(msg, got);
  msg += " want ";
  AppendFloat(msg, want);
  msg += " (call ";
  msg += std::to_string(call);
  msg += ')';
}

void DiffChecker::CompareRows(int64_t call, uint32_t m, uint32_t n, const float* got_residual_out,
                              const float* got_out, const float* want_residual_out,
                              const float* want_out, Progress progress) {
  // residual_out first: a wrong all-reduce shows there, and the first bad element then names the
  // cause rather than its consequence in the norm.
  size_t i = 0;
  for (uint32_t row = 0; row < m; ++row) {
    ReportProgress(progress);
    for (uint32_t col = 0; col < n; ++col, ++i) {
      Compare(OutputTensor::kResidualOut, call, row, col, got_residual_out[i],
              want_residual_out[i]);
    }
  }
  if (got_out == nullptr) return;
  i = 0;
  for (uint32_t row = 0; row < m; ++row) {
    ReportProgress(progress);
    for (uint32_t col = 0; col < n; ++col, ++i) {
      Compare(OutputTensor::kOut, call, row, col, got_out[i], want_out[i]);
    }
  }
}

DiffSummary DiffChecker::Summary() const {
  DiffSummary s = s_;
  // The slack absorbs 1 - 0.99 not being exact in binary, so 1 bad in 100 counts as 1%.
  const double allowed =
      std::floor((1.0 - profile_.min_pass_fraction) * static_cast<double>(s.checked) + 1e-6);
  s.passed = static_cast<double>(s.mismatches) <= allowed;
  return s;
}

}  // namespace colltest
