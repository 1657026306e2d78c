// QuantChecker (worker/numerics/quant_checker.h): the tally of a check's quantised rows, the
// first bad row's rule and text, the ulp tolerance, and merging checks into a case's tally.
#include "worker/numerics/quant_checker.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "random_rows.h"
#include "worker/numerics/dtype.h"
#include "worker/numerics/fp4.h"
#include "worker/numerics/fp8.h"
#include "worker/numerics/quant_epilogue.h"
#include "worker/numerics/quant_plan.h"

namespace colltest {
namespace {

QuantPlan Plan(QuantScheme scheme, QuantTolerance tolerance = QuantTolerance::kStrict) {
  QuantPlan plan;
  plan.scheme = scheme;
  plan.fp8_scale = 0.03125f;
  plan.nvfp4_global_scale = 256.0f;
  plan.tolerance = tolerance;
  return plan;
}

// Every row of `rows` (m rows of n) checked against its own reference quantisation, with
// `tamper` applied to the kernel's row `bad_row` first.
template <class Tamper>
QuantCheckSummary CheckRows(const QuantPlan& plan, const std::vector<float>& y, uint32_t n,
                            int64_t call, uint32_t bad_row, Tamper tamper) {
  QuantChecker checker(plan, DType::kBf16);
  for (uint32_t row = 0; row * n < y.size(); ++row) {
    QuantizedRow got = QuantizeReferenceRow(plan, y.data() + row * n, n);
    if (row == bad_row) tamper(got);
    checker.CompareRow(call, row, y.data() + row * n, n, got);
  }
  return checker.Summary();
}

TEST(QuantChecker, ExactRowsPassAndCountWhatTheKernelWrote) {
  const std::vector<float> y = RandomBf16Row(4 * 40, 1);
  const auto keep = [](QuantizedRow&) {};
  const QuantCheckSummary token = CheckRows(Plan(QuantScheme::kFp8Token), y, 40, 0, 0, keep);
  EXPECT_TRUE(token.passed);
  EXPECT_EQ(token.rule, QuantRule::kNone);
  EXPECT_EQ(token.checked_codes, 160u);
  EXPECT_EQ(token.checked_scales, 4u);  // one dynamic scale a row
  EXPECT_EQ(token.failures(), 0u);
  EXPECT_EQ(token.first_bad_call, -1);
  EXPECT_GT(token.expected_dequant_err, 0.0);
  EXPECT_EQ(token.max_dequant_err, token.expected_dequant_err);
  const QuantCheckSummary tensor = CheckRows(Plan(QuantScheme::kFp8Tensor), y, 40, 0, 0, keep);
  EXPECT_TRUE(tensor.passed);
  EXPECT_EQ(tensor.checked_scales, 0u);  // the scale is given, not written
  const QuantCheckSummary nvfp4 = CheckRows(Plan(QuantScheme::kNvfp4), y, 40, 0, 0, keep);
  EXPECT_TRUE(nvfp4.passed);
  EXPECT_EQ(nvfp4.checked_scales, 4u * 3);  // blocks of 16, 16 and 8
}

TEST(QuantChecker, AFlippedCodeNamesTheRowTheCodeAndTheCall) {
  const std::vector<float> y = RandomBf16Row(3 * 64, 2);
  const QuantCheckSummary s =
      CheckRows(Plan(QuantScheme::kFp8Tensor), y, 64, 7, 2, [](QuantizedRow& r) {
        r.codes[5] ^= 0x01;  // one step in value order: the other neighbour or further
      });
  EXPECT_FALSE(s.passed);
  EXPECT_EQ(s.code_mismatches, 1u);
  EXPECT_EQ(s.failures(), 1u);
  EXPECT_NE(s.rule, QuantRule::kNone);
  EXPECT_EQ(s.first_bad.rfind("row 2: code[5] got 0x", 0), 0u) << s.first_bad;
  EXPECT_NE(s.first_bad.find("(call 7)"), std::string::npos) << s.first_bad;
  EXPECT_EQ(s.first_bad_call, 7);
}

TEST(QuantChecker, AWrongDynamicScaleIsTheScaleRule) {
  const std::vector<float> y = RandomBf16Row(2 * 32, 3);
  const QuantCheckSummary s = CheckRows(Plan(QuantScheme::kFp8Token), y, 32, 0, 1,
                                        [](QuantizedRow& r) { r.scale *= 2.0f; });
  EXPECT_FALSE(s.passed);
  EXPECT_EQ(s.rule, QuantRule::kScale);
  EXPECT_EQ(s.scale_mismatches, 1u);
  EXPECT_EQ(s.checked_scales, 2u);
  EXPECT_DOUBLE_EQ(s.max_scale_rel_err, 1.0);
  EXPECT_EQ(s.first_bad.rfind("row 1: scale got", 0), 0u) << s.first_bad;
}

TEST(QuantChecker, AWrongBlockScaleIsTheScaleRule) {
  const std::vector<float> y = RandomBf16Row(48, 4);
  const QuantCheckSummary s = CheckRows(Plan(QuantScheme::kNvfp4), y, 48, 0, 0,
                                        [](QuantizedRow& r) { r.block_scales[2] += 1; });
  EXPECT_EQ(s.rule, QuantRule::kScale);
  EXPECT_EQ(s.first_bad.rfind("row 0: block_scale[2]", 0), 0u) << s.first_bad;
}

// 1.0625 is the midpoint of e4m3fn's 1 and 1.125 and a bf16 value: a tie in T, which the ulp
// tolerance accepts on either side and strict does not.
TEST(QuantChecker, UlpToleratesATieInTStrictDoesNot) {
  const std::vector<float> y = {1.0625f, 0.5f};
  QuantPlan strict = Plan(QuantScheme::kFp8Tensor);
  strict.fp8_scale = 1.0f;
  QuantPlan ulp = strict;
  ulp.tolerance = QuantTolerance::kUlp;
  const auto other_side = [](QuantizedRow& r) {
    ASSERT_EQ(r.codes[0], 0x38);  // RNE: 1.0, the even code
    r.codes[0] = 0x39;            // 1.125
  };
  const QuantCheckSummary s = CheckRows(strict, y, 2, 0, 0, other_side);
  EXPECT_FALSE(s.passed);
  EXPECT_EQ(s.rule, QuantRule::kRounding);
  const QuantCheckSummary u = CheckRows(ulp, y, 2, 0, 0, other_side);
  EXPECT_TRUE(u.passed) << u.first_bad;
  EXPECT_EQ(u.tolerated, 1u);
  EXPECT_EQ(u.code_mismatches, 0u);
  EXPECT_EQ(u.max_code_distance, 1u);
}

TEST(QuantChecker, ReadQuantizedRowUnpacksNvfp4AndTakesTheGivenScales) {
  const QuantPlan nvfp4 = Plan(QuantScheme::kNvfp4);
  const uint8_t packed[3] = {0x21, 0x43, 0x05};
  const uint8_t block_scale = 0x38;
  const QuantizedRow row = ReadQuantizedRow(nvfp4, 5, packed, nullptr, &block_scale);
  EXPECT_EQ(row.codes, (std::vector<uint8_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(row.block_scales, (std::vector<uint8_t>{0x38}));
  EXPECT_EQ(row.scale, 256.0f);
  QuantPlan tensor = Plan(QuantScheme::kFp8Tensor);
  tensor.format = Fp8Format::kE4m3fnuz;
  const QuantizedRow t = ReadQuantizedRow(tensor, 3, packed, nullptr, nullptr);
  EXPECT_EQ(t.codes, (std::vector<uint8_t>{0x21, 0x43, 0x05}));
  EXPECT_EQ(t.scale, 0.03125f);
  EXPECT_EQ(t.format, Fp8Format::kE4m3fnuz);
  const float scale = 0.5f;
  EXPECT_EQ(ReadQuantizedRow(Plan(QuantScheme::kFp8Token), 3, packed, &scale, nullptr).scale, 0.5f);
}

TEST(QuantChecker, ARowOfTheWrongShapeFailsWithAtLeastOneFailure) {
  const std::vector<float> y = RandomBf16Row(16, 5);
  const QuantCheckSummary s = CheckRows(Plan(QuantScheme::kFp8Token), y, 16, 0, 0,
                                        [](QuantizedRow& r) { r.codes.pop_back(); });
  EXPECT_FALSE(s.passed);
  EXPECT_EQ(s.rule, QuantRule::kUnexplained);
  EXPECT_EQ(s.failures(), 1u);
}

TEST(QuantChecker, MergeSumsCountsKeepsMaximaAndTheFirstBadCheck) {
  const std::vector<float> y = RandomBf16Row(2 * 32, 6);
  const QuantPlan plan = Plan(QuantScheme::kFp8Token);
  const QuantCheckSummary good = CheckRows(plan, y, 32, 1, 0, [](QuantizedRow&) {});
  const QuantCheckSummary bad_scale =
      CheckRows(plan, y, 32, 2, 1, [](QuantizedRow& r) { r.scale *= 4.0f; });
  const QuantCheckSummary bad_code =
      CheckRows(plan, y, 32, 3, 0, [](QuantizedRow& r) { r.codes[0] ^= 0x7f; });
  QuantCheckSummary all;
  MergeQuantCheck(good, &all);
  EXPECT_TRUE(all.passed);
  MergeQuantCheck(bad_scale, &all);
  MergeQuantCheck(bad_code, &all);
  EXPECT_FALSE(all.passed);
  EXPECT_EQ(all.checked_codes, 3u * 64);
  EXPECT_EQ(all.checked_scales, 3u * 2);
  EXPECT_EQ(all.scale_mismatches, 1u);
  EXPECT_EQ(all.code_mismatches, bad_scale.code_mismatches + 1);
  EXPECT_EQ(all.rule, QuantRule::kScale);
  EXPECT_EQ(all.first_bad, bad_scale.first_bad);
  EXPECT_EQ(all.first_bad_call, 2);
  EXPECT_DOUBLE_EQ(all.max_scale_rel_err, 3.0);
  EXPECT_GE(all.max_code_distance, bad_code.max_code_distance);
}

}  // namespace
}  // namespace colltest
