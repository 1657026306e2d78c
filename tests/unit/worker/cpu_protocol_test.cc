// The cpu backend's protocols end to end inside one process: every variant, dtype, pattern and
// mode gives correct results; hangs are bounded and name the culprit.
#include <chrono>
#include <string>

#include "gtest/gtest.h"
#include "tests/unit/worker/cpu_group.h"

namespace colltest::cpu::testing {
namespace {

using colltest::v1::CASE_STATUS_HANG;
using colltest::v1::CASE_STATUS_OK;

const colltest::v1::Variant kVariants[] = {
    colltest::v1::VARIANT_ONE_STAGE, colltest::v1::VARIANT_TWO_KERNEL,
    colltest::v1::VARIANT_LAMPORT, colltest::v1::VARIANT_LAMPORT_TB};

void ExpectAllOk(const std::vector<colltest::v1::RankResult>& results, const std::string& what) {
  for (const auto& r : results) {
    EXPECT_EQ(r.status(), CASE_STATUS_OK) << what << " rank " << r.rank() << ": " << r.message();
    EXPECT_EQ(r.diff().mismatches(), 0u)
        << what << " rank " << r.rank() << ": " << r.diff().first_bad();
    EXPECT_GT(r.diff().checked(), 0u) << what;
  }
}

TEST(CpuProtocol, EveryVariantDtypeModeIsExact) {
  CpuGroup group(4);
  for (auto dtype :
       {colltest::v1::DTYPE_BF16, colltest::v1::DTYPE_FP16, colltest::v1::DTYPE_FP32}) {
    for (auto mode : {colltest::v1::MODE_EAGER, colltest::v1::MODE_GRAPH}) {
      for (auto v : kVariants) {
        for (uint32_t m : {1u, 3u, 64u}) {
          auto req = MakeCase(v, m, 256);
          req.set_dtype(dtype);
          req.set_mode(mode);
          ExpectAllOk(group.Run(req), req.ShortDebugString());
        }
      }
    }
  }
}

TEST(CpuProtocol, PatternsIncludingNegativeZero) {
  CpuGroup group(2);
  for (auto p :
       {colltest::v1::PATTERN_NORMAL, colltest::v1::PATTERN_NEG_ZERO, colltest::v1::PATTERN_LARGE,
        colltest::v1::PATTERN_DENORMAL, colltest::v1::PATTERN_SAME}) {
    for (auto v : kVariants) {
      auto req = MakeCase(v, 5, 128, p);
      ExpectAllOk(group.Run(req), req.ShortDebugString());
    }
  }
}

TEST(CpuProtocol, ShapeChangesBetweenCasesAndVariants) {
  CpuGroup group(4);
  // The stale-staging scenario: two_kernel stages through the general region between Lamport
  // cases of other shapes.
  for (uint32_t m : {64u, 3u, 257u, 1u, 17u}) {
    for (auto v : kVariants) {
      auto req = MakeCase(v, m, 512);
      ExpectAllOk(group.Run(req), req.ShortDebugString());
    }
  }
}

TEST(CpuProtocol, StressChangesShapeEveryCall) {
  CpuGroup group(4);
  for (auto v : {colltest::v1::VARIANT_LAMPORT, colltest::v1::VARIANT_LAMPORT_TB}) {
    auto req = MakeCase(v, 16, 256, colltest::v1::PATTERN_NEG_ZERO);
    req.set_stress_calls(300);
    auto results = group.Run(req);
    ExpectAllOk(results, req.ShortDebugString());
    EXPECT_GE(results[0].calls(), 300u);
  }
}

TEST(CpuProtocol, MissingRankIsAHangNamingItThenResetRecovers) {
  CpuGroup group(3);
  for (auto v : kVariants) {
    auto req = MakeCase(v, 8, 128);
    req.set_timeout_ms(300);
    const auto t0 = std::chrono::steady_clock::now();
    auto results = group.Run(req, /*absent=*/1);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(seconds, 0.3 + 1.0) << req.ShortDebugString();
    for (uint32_t r : {0u, 2u}) {
      EXPECT_EQ(results[r].status(), CASE_STATUS_HANG) << req.ShortDebugString();
      EXPECT_EQ(results[r].suspect_peer(), 1) << results[r].message();
      EXPECT_FALSE(results[r].phase().empty());
    }
    group.Reset();
    ExpectAllOk(group.Run(MakeCase(v, 8, 128)), "after reset");
  }
}

}  // namespace
}  // namespace colltest::cpu::testing
