#include "worker/numerics/tolerance.h"

#include "gtest/gtest.h"
#include "worker/numerics/dtype.h"

namespace colltest {
namespace {

TEST(ToleranceTest, Names) {
  EXPECT_STREQ(ToleranceName(ToleranceKind::kStrict), "strict");
  EXPECT_STREQ(ToleranceName(ToleranceKind::kAiter), "aiter");
  EXPECT_STREQ(ToleranceName(ToleranceKind::kTrtllm), "trtllm");
}

TEST(ToleranceTest, Strict) {
  for (DType t : {DType::kBf16, DType::kFp16, DType::kFp32}) {
    const ToleranceProfile p = ProfileFor(ToleranceKind::kStrict, t);
    EXPECT_EQ(p.kind, ToleranceKind::kStrict);
    EXPECT_TRUE(p.exact_residual);
    EXPECT_EQ(p.out_max_ulp, t == DType::kFp32 ? 64u : 1u);
    EXPECT_EQ(p.min_pass_fraction, 1.0);
  }
}

TEST(ToleranceTest, AiterAndTrtllm) {
  for (DType t : {DType::kBf16, DType::kFp16, DType::kFp32}) {
    const ToleranceProfile a = ProfileFor(ToleranceKind::kAiter, t);
    EXPECT_EQ(a.kind, ToleranceKind::kAiter);
    EXPECT_EQ(a.atol, 1e-2);
    EXPECT_EQ(a.rtol, 1e-2);
    EXPECT_EQ(a.min_pass_fraction, 1.0);
    const ToleranceProfile r = ProfileFor(ToleranceKind::kTrtllm, t);
    EXPECT_EQ(r.kind, ToleranceKind::kTrtllm);
    EXPECT_EQ(r.atol, 0.05);
    EXPECT_EQ(r.rtol, 0.15);
    EXPECT_EQ(r.min_pass_fraction, 0.99);
  }
}

}  // namespace
}  // namespace colltest
