#include "worker/numerics/diff.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "worker/numerics/dtype.h"
#include "worker/numerics/tolerance.h"

namespace colltest {
namespace {

constexpr float kBf16OneUlpAboveOne = 1.0078125f;  // 1 + 2^-7
constexpr float kBf16TwoUlpAboveOne = 1.015625f;   // 1 + 2^-6

DiffChecker Checker(ToleranceKind k, DType t = DType::kBf16) {
  return DiffChecker(t, ProfileFor(k, t));
}

TEST(DiffTest, EmptyCheckerPasses) {
  const DiffSummary s = Checker(ToleranceKind::kStrict).Summary();
  EXPECT_TRUE(s.passed);
  EXPECT_EQ(s.checked, 0u);
  EXPECT_EQ(s.mismatches, 0u);
  EXPECT_EQ(s.first_bad_call, -1);
  EXPECT_TRUE(s.first_bad.empty());
}

TEST(DiffTest, Statistics) {
  DiffChecker d = Checker(ToleranceKind::kTrtllm);
  d.Compare(OutputTensor::kOut, 0, 0, 0, 1.0f, 1.0f);
  d.Compare(OutputTensor::kOut, 0, 0, 1, 2.0f, 2.0625f);  // abs 0.0625, rel 0.0303, 2 ulp
  d.Compare(OutputTensor::kOut, 0, 0, 2, 0.25f, 0.5f);    // abs 0.25, rel 0.5, 128 ulp
  d.Compare(OutputTensor::kResidualOut, 0, 0, 3, -4.0f, -4.0f);
  const DiffSummary s = d.Summary();
  EXPECT_EQ(s.checked, 4u);
  EXPECT_DOUBLE_EQ(s.max_abs_err, 0.25);
  EXPECT_DOUBLE_EQ(s.max_rel_err, 0.5);
  EXPECT_EQ(s.max_ulp, 128u);
  EXPECT_EQ(s.nan_inf, 0u);
  // Only 0.25 vs 0.5 is outside 0.05 + 0.15 * |want|.
  EXPECT_EQ(s.mismatches, 1u);
  EXPECT_EQ(s.first_bad, "out[0,2] got 0.25 want 0.5 (call 0)");
}

TEST(DiffTest, RelativeErrorNearZeroStaysFinite) {
  DiffChecker d = Checker(ToleranceKind::kAiter);
  d.Compare(OutputTensor::kOut, 0, 0, 0, 0.001f, 0.0f);
  const DiffSummary s = d.Summary();
  EXPECT_TRUE(std::isfinite(s.max_rel_err));
  EXPECT_GT(s.max_rel_err, 1.0);
  EXPECT_TRUE(s.passed);  // within atol
}

TEST(DiffTest, StrictAcceptsOneUlpOnOutOnly) {
  {
    DiffChecker d = Checker(ToleranceKind::kStrict);
    d.Compare(OutputTensor::kOut, 0, 0, 0, kBf16OneUlpAboveOne, 1.0f);
    EXPECT_TRUE(d.Summary().passed);
    EXPECT_EQ(d.Summary().max_ulp, 1u);
  }
  {
    DiffChecker d = Checker(ToleranceKind::kStrict);
    d.Compare(OutputTensor::kOut, 0, 0, 0, kBf16TwoUlpAboveOne, 1.0f);
    EXPECT_FALSE(d.Summary().passed);
    EXPECT_EQ(d.Summary().mismatches, 1u);
  }
  {
    DiffChecker d = Checker(ToleranceKind::kStrict);
    d.Compare(OutputTensor::kResidualOut, 2, 1, 5, kBf16OneUlpAboveOne, 1.0f);
    const DiffSummary s = d.Summary();
    EXPECT_FALSE(s.passed);
    EXPECT_EQ(s.mismatches, 1u);
    EXPECT_EQ(s.first_bad, "residual_out[1,5] got 1.0078125 want 1 (call 2)");
    EXPECT_EQ(s.first_bad_call, 2);
  }
  {
    // +0 and -0 are the same value: the Lamport producers canonicalise -0.0 to +0.0.
    DiffChecker d = Checker(ToleranceKind::kStrict);
    d.Compare(OutputTensor::kResidualOut, 0, 0, 0, 0.0f, -0.0f);
    d.Compare(OutputTensor::kOut, 0, 0, 0, -0.0f, 0.0f);
    EXPECT_TRUE(d.Summary().passed);
  }
}

TEST(DiffTest, StrictFp32AllowsTheNormReductionOrder) {
  DiffChecker d = Checker(ToleranceKind::kStrict, DType::kFp32);
  d.Compare(OutputTensor::kOut, 0, 0, 0, 1.0f + 64 * 0x1p-23f, 1.0f);
  EXPECT_TRUE(d.Summary().passed);
  d.Compare(OutputTensor::kOut, 0, 0, 1, 1.0f + 65 * 0x1p-23f, 1.0f);
  EXPECT_FALSE(d.Summary().passed);
  d.Compare(OutputTensor::kResidualOut, 0, 0, 2, std::nextafter(1.0f, 2.0f), 1.0f);
  EXPECT_EQ(d.Summary().mismatches, 2u);
}

TEST(DiffTest, Aiter) {
  DiffChecker d = Checker(ToleranceKind::kAiter, DType::kFp32);
  // Bound at want = 1 is 0.01 + 0.01 * 1 = 0.02; at want = 100 it is 1.01.
  d.Compare(OutputTensor::kOut, 0, 0, 0, 1.019f, 1.0f);
  d.Compare(OutputTensor::kResidualOut, 0, 0, 0, 100.9f, 100.0f);
  d.Compare(OutputTensor::kOut, 0, 0, 1, -0.005f, 0.0f);
  EXPECT_TRUE(d.Summary().passed);
  d.Compare(OutputTensor::kOut, 1, 0, 2, 1.03f, 1.0f);
  EXPECT_FALSE(d.Summary().passed);
  d.Compare(OutputTensor::kResidualOut, 1, 0, 3, 101.2f, 100.0f);
  const DiffSummary s = d.Summary();
  EXPECT_EQ(s.mismatches, 2u);
  EXPECT_EQ(s.first_bad_call, 1);
  EXPECT_EQ(s.first_bad.rfind("out[0,2] got 1.03 want 1", 0), 0u) << s.first_bad;
}

TEST(DiffTest, TrtllmNinetyNinePercentRule) {
  DiffChecker d = Checker(ToleranceKind::kTrtllm, DType::kFp32);
  // Bound at want = 1 is 0.05 + 0.15 = 0.2.
  for (uint32_t c = 0; c < 99; ++c) d.Compare(OutputTensor::kOut, 0, 0, c, 1.19f, 1.0f);
  d.Compare(OutputTensor::kOut, 0, 0, 99, 1.5f, 1.0f);
  DiffSummary s = d.Summary();
  EXPECT_EQ(s.checked, 100u);
  EXPECT_EQ(s.mismatches, 1u);
  EXPECT_TRUE(s.passed);  // 1 of 100 is within the 1% allowance
  d.Compare(OutputTensor::kOut, 0, 1, 0, 1.5f, 1.0f);
  s = d.Summary();
  EXPECT_EQ(s.mismatches, 2u);
  EXPECT_FALSE(s.passed);  // 2 of 101 is not
  // Strict and aiter allow none.
  DiffChecker a = Checker(ToleranceKind::kAiter, DType::kFp32);
  for (uint32_t c = 0; c < 999; ++c) a.Compare(OutputTensor::kOut, 0, 0, c, 1.0f, 1.0f);
  a.Compare(OutputTensor::kOut, 0, 0, 999, 1.5f, 1.0f);
  EXPECT_FALSE(a.Summary().passed);
}

TEST(DiffTest, NanAndInfAreCountedAsMismatches) {
  for (ToleranceKind k : {ToleranceKind::kStrict, ToleranceKind::kAiter, ToleranceKind::kTrtllm}) {
    SCOPED_TRACE(ToleranceName(k));
    DiffChecker d = Checker(k);
    d.Compare(OutputTensor::kOut, 4, 2, 3, std::numeric_limits<float>::quiet_NaN(), 1.0f);
    d.Compare(OutputTensor::kResidualOut, 5, 0, 0, std::numeric_limits<float>::infinity(), 1.0f);
    d.Compare(OutputTensor::kOut, 5, 0, 1, 1.0f, 1.0f);
    const DiffSummary s = d.Summary();
    EXPECT_EQ(s.nan_inf, 2u);
    EXPECT_EQ(s.mismatches, 2u);
    EXPECT_FALSE(s.passed);
    EXPECT_EQ(s.first_bad, "out[2,3] got nan want 1 (call 4)");
    EXPECT_EQ(s.first_bad_call, 4);
    // The maxima describe the finite elements only.
    EXPECT_EQ(s.max_abs_err, 0.0);
    EXPECT_EQ(s.max_ulp, 0u);
  }
}

TEST(DiffTest, FirstBadIsTheFirstOnly) {
  DiffChecker d = Checker(ToleranceKind::kStrict);
  d.Compare(OutputTensor::kOut, 7, 3, 17, 1.5f, 1.25f);
  d.Compare(OutputTensor::kOut, 8, 0, 0, 4.0f, 1.0f);
  const DiffSummary s = d.Summary();
  EXPECT_EQ(s.first_bad, "out[3,17] got 1.5 want 1.25 (call 7)");
  EXPECT_EQ(s.first_bad_call, 7);
  EXPECT_EQ(s.mismatches, 2u);
}

TEST(DiffTest, CompareRowsChecksBothTensorsRowMajor) {
  constexpr uint32_t kM = 2, kN = 3;
  const std::vector<float> want_ro = {1, 2, 3, 4, 5, 6};
  const std::vector<float> want_out = {0.5f, 1, 1.5f, 2, 2.5f, 3};
  std::vector<float> got_ro = want_ro, got_out = want_out;
  {
    DiffChecker d = Checker(ToleranceKind::kStrict);
    d.CompareRows(0, kM, kN, got_ro.data(), got_out.data(), want_ro.data(), want_out.data());
    const DiffSummary s = d.Summary();
    EXPECT_EQ(s.checked, 12u);
    EXPECT_TRUE(s.passed);
  }
  got_out[4] = 2.75f;  // row 1, col 1
  {
    DiffChecker d = Checker(ToleranceKind::kStrict);
    d.CompareRows(9, kM, kN, got_ro.data(), got_out.data(), want_ro.data(), want_out.data());
    const DiffSummary s = d.Summary();
    EXPECT_EQ(s.mismatches, 1u);
    EXPECT_EQ(s.first_bad, "out[1,1] got 2.75 want 2.5 (call 9)");
  }
  got_ro[5] = 7;  // row 1, col 2: the all-reduce error is named before its effect on out
  {
    DiffChecker d = Checker(ToleranceKind::kStrict);
    d.CompareRows(9, kM, kN, got_ro.data(), got_out.data(), want_ro.data(), want_out.data());
    const DiffSummary s = d.Summary();
    EXPECT_EQ(s.mismatches, 2u);
    EXPECT_EQ(s.first_bad, "residual_out[1,2] got 7 want 6 (call 9)");
  }
}

// A quantising epilogue without keep_normed leaves out unwritten: only residual_out is compared.
TEST(DiffTest, CompareRowsWithoutOutChecksResidualOutOnly) {
  constexpr uint32_t kM = 2, kN = 2;
  const std::vector<float> want_ro = {1, 2, 3, 4};
  const std::vector<float> want_out = {9, 9, 9, 9};
  DiffChecker d = Checker(ToleranceKind::kStrict);
  d.CompareRows(0, kM, kN, want_ro.data(), nullptr, want_ro.data(), want_out.data());
  EXPECT_EQ(d.Summary().checked, 4u);
  EXPECT_TRUE(d.Summary().passed);
}

int progress_calls = 0;
void CountProgress() { ++progress_calls; }

// The worker's watchdog sees a long check advance only through this hook: one call per row of
// each output, so a check of many rows never looks stuck.
TEST(DiffTest, CompareRowsReportsProgressPerRow) {
  constexpr uint32_t kM = 3, kN = 2;
  const std::vector<float> want(kM * kN, 1.0f);
  DiffChecker d = Checker(ToleranceKind::kStrict);
  progress_calls = 0;
  d.CompareRows(0, kM, kN, want.data(), want.data(), want.data(), want.data(), &CountProgress);
  EXPECT_EQ(progress_calls, 2 * static_cast<int>(kM));
  d.CompareRows(0, kM, kN, want.data(), want.data(), want.data(), want.data());  // nobody watches
  EXPECT_EQ(progress_calls, 2 * static_cast<int>(kM));
}

}  // namespace
}  // namespace colltest
