// End-to-end checks of the cuda backend on a 2-GPU box: every variant, dtype, mode and pattern
// over the shapes the kernels claim, and long stress loops of the Lamport variants. A variant that
// cannot run a shape must answer UNSUPPORTED with a reason, never WRONG or HANG.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/integration/daemon.h"

namespace colltest::testing {
namespace {

namespace v1 = ::colltest::v1;

class GpuTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // m = 2048 at n = 8192 in fp32 is 64 MiB per rank.
    daemon_ =
        Daemon::StartWithBackend("cuda", {"--max-case-bytes", "64MiB", "--allow-fault-injection"},
                                 {"NCCL_NVLS_ENABLE=0"})
            .release();
  }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }

  v1::RunResult Run(const v1::SweepSpec& spec) {
    auto stub = daemon_->Stub();
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(20));
    v1::RunRequest req;
    *req.mutable_spec() = spec;
    v1::RunResult result;
    const grpc::Status s = stub->Run(&ctx, req, &result);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return result;
  }

  static Daemon* daemon_;
};
Daemon* GpuTest::daemon_ = nullptr;

std::string Describe(const v1::CaseResult& c) {
  return std::string(v1::Variant_Name(c.variant())) + " " + v1::Mode_Name(c.mode()) + " " +
         v1::DType_Name(c.dtype()) + " " + v1::Pattern_Name(c.pattern()) +
         " m=" + std::to_string(c.m()) + " n=" + std::to_string(c.n()) + ": " +
         v1::CaseStatus_Name(c.status()) + " " + c.message();
}

struct MatrixParam {
  v1::DType dtype;
  v1::Pattern pattern;
};

class GpuMatrixTest : public GpuTest, public ::testing::WithParamInterface<MatrixParam> {};

TEST_P(GpuMatrixTest, EveryVariantModeAndShapeIsOkOrUnsupported) {
  ASSERT_NE(daemon_, nullptr) << "colltestd --backend cuda did not start";
  v1::SweepSpec spec;
  spec.set_world_size(2);
  for (uint32_t m : {1, 2, 3, 8, 16, 32, 64, 128, 256, 1024, 2048}) spec.add_m(m);
  for (uint32_t n : {2880, 4096, 7168, 8192}) spec.add_n(n);
  spec.set_dtype(GetParam().dtype);
  spec.set_pattern(GetParam().pattern);
  for (auto v : {v1::VARIANT_ONE_STAGE, v1::VARIANT_TWO_KERNEL, v1::VARIANT_LAMPORT,
                 v1::VARIANT_LAMPORT_TB}) {
    spec.add_variants(v);
  }
  spec.add_modes(v1::MODE_EAGER);
  spec.add_modes(v1::MODE_GRAPH);
  spec.set_warmup(2);
  spec.set_iters(4);
  spec.set_tolerance(v1::TOLERANCE_STRICT);
  spec.set_timeout_ms(5000);
  const v1::RunResult r = Run(spec);
  ASSERT_EQ(r.cases_size(), 11 * 4 * 4 * 2) << r.message();
  int ok = 0, unsupported = 0;
  for (const v1::CaseResult& c : r.cases()) {
    if (c.status() == v1::CASE_STATUS_UNSUPPORTED) {
      ++unsupported;
      EXPECT_FALSE(c.message().empty()) << Describe(c);
      continue;
    }
    EXPECT_EQ(c.status(), v1::CASE_STATUS_OK) << Describe(c);
    if (GetParam().pattern == v1::PATTERN_INTEGERS) {
      EXPECT_EQ(c.diff().mismatches(), 0u) << Describe(c);
    }
    ++ok;
  }
  EXPECT_GT(ok, 0);
  RecordProperty("ok_cases", ok);
  RecordProperty("unsupported_cases", unsupported);
}

INSTANTIATE_TEST_SUITE_P(Matrix, GpuMatrixTest,
                         ::testing::Values(MatrixParam{v1::DTYPE_BF16, v1::PATTERN_INTEGERS},
                                           MatrixParam{v1::DTYPE_BF16, v1::PATTERN_NORMAL},
                                           MatrixParam{v1::DTYPE_BF16, v1::PATTERN_NEG_ZERO},
                                           MatrixParam{v1::DTYPE_FP16, v1::PATTERN_INTEGERS},
                                           MatrixParam{v1::DTYPE_FP16, v1::PATTERN_NORMAL},
                                           MatrixParam{v1::DTYPE_FP16, v1::PATTERN_NEG_ZERO},
                                           MatrixParam{v1::DTYPE_FP32, v1::PATTERN_INTEGERS},
                                           MatrixParam{v1::DTYPE_FP32, v1::PATTERN_NORMAL},
                                           MatrixParam{v1::DTYPE_FP32, v1::PATTERN_NEG_ZERO}),
                         [](const ::testing::TestParamInfo<MatrixParam>& i) {
                           return v1::DType_Name(i.param.dtype) + "_" +
                                  v1::Pattern_Name(i.param.pattern);
                         });

// The nccl variant: NCCL's all-reduce then our residual + RMSNorm kernel, checked by the same
// device reference. The reference sums in fp32 in rank order and rounds once; NCCL sums in its own
// order and may round to T between steps, so non-integer patterns are judged with the aiter
// profile (atol = rtol = 1e-2). Integer patterns are exact either way, so they stay strict.
class GpuNcclTest : public GpuTest, public ::testing::WithParamInterface<MatrixParam> {};

TEST_P(GpuNcclTest, NcclThenFusedNormIsOkInBothModes) {
  ASSERT_NE(daemon_, nullptr);
  v1::SweepSpec spec;
  spec.set_world_size(2);
  for (uint32_t m : {1, 3, 64, 1024}) spec.add_m(m);
  for (uint32_t n : {2880, 7168}) spec.add_n(n);
  spec.set_dtype(GetParam().dtype);
  spec.set_pattern(GetParam().pattern);
  spec.add_variants(v1::VARIANT_NCCL);
  spec.add_modes(v1::MODE_EAGER);
  spec.add_modes(v1::MODE_GRAPH);
  spec.set_warmup(2);
  spec.set_iters(4);
  const bool exact = GetParam().pattern == v1::PATTERN_INTEGERS;
  spec.set_tolerance(exact ? v1::TOLERANCE_STRICT : v1::TOLERANCE_AITER);
  spec.set_timeout_ms(5000);
  const v1::RunResult r = Run(spec);
  ASSERT_EQ(r.cases_size(), 4 * 2 * 2) << r.message();
  for (const v1::CaseResult& c : r.cases()) {
    EXPECT_EQ(c.status(), v1::CASE_STATUS_OK) << Describe(c);
    if (exact) {
      EXPECT_EQ(c.diff().mismatches(), 0u) << Describe(c);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Nccl, GpuNcclTest,
                         ::testing::Values(MatrixParam{v1::DTYPE_BF16, v1::PATTERN_INTEGERS},
                                           MatrixParam{v1::DTYPE_BF16, v1::PATTERN_NORMAL},
                                           MatrixParam{v1::DTYPE_FP16, v1::PATTERN_NORMAL},
                                           MatrixParam{v1::DTYPE_FP32, v1::PATTERN_NORMAL}),
                         [](const ::testing::TestParamInfo<MatrixParam>& i) {
                           return v1::DType_Name(i.param.dtype) + "_" +
                                  v1::Pattern_Name(i.param.pattern);
                         });

// NCCL cannot time out a wait: a never-arriving rank must be refused up front, not hang the group.
TEST_F(GpuTest, NcclRefusesFaultInjection) {
  ASSERT_NE(daemon_, nullptr);
  v1::SweepSpec spec;
  spec.set_world_size(2);
  spec.add_m(8);
  spec.add_n(7168);
  spec.add_variants(v1::VARIANT_NCCL);
  spec.set_warmup(1);
  spec.set_iters(2);
  spec.set_timeout_ms(1000);
  spec.set_fault("never_arrive:1");
  const v1::RunResult r = Run(spec);
  ASSERT_EQ(r.cases_size(), 1) << r.message();
  EXPECT_EQ(r.cases(0).status(), v1::CASE_STATUS_UNSUPPORTED) << Describe(r.cases(0));
}

struct StressParam {
  v1::Variant variant;
  v1::Mode mode;
};

class GpuStressTest : public GpuTest, public ::testing::WithParamInterface<StressParam> {};

// 5000 calls with m changing every call, two_kernel and one_stage calls with other m and other data
// interleaved, every call checked: stale staging, lost re-arms and rotation bugs show here. Graph
// mode captures up to 64 such calls, each with its check, and replays them until 5000 have run.
TEST_P(GpuStressTest, FiveThousandCallsAllCorrect) {
  ASSERT_NE(daemon_, nullptr);
  v1::SweepSpec spec;
  spec.set_world_size(2);
  spec.add_m(256);
  spec.add_n(7168);
  spec.set_dtype(v1::DTYPE_BF16);
  spec.set_pattern(v1::PATTERN_NEG_ZERO);
  spec.add_variants(GetParam().variant);
  spec.add_modes(GetParam().mode);
  spec.set_stress_calls(5000);
  spec.set_timeout_ms(5000);
  const v1::RunResult r = Run(spec);
  ASSERT_EQ(r.cases_size(), 1) << r.message();
  const v1::CaseResult& c = r.cases(0);
  EXPECT_EQ(c.mode(), GetParam().mode) << Describe(c);
  EXPECT_EQ(c.status(), v1::CASE_STATUS_OK) << Describe(c);
  EXPECT_EQ(c.diff().mismatches(), 0u) << Describe(c);
  ASSERT_GT(c.ranks_size(), 0);
  for (const v1::RankResult& rank : c.ranks()) {
    // Every call counts, the interleaved ones too: at least the 5000 of the variant.
    EXPECT_GE(rank.calls(), 5000u) << rank.message();
    EXPECT_EQ(rank.diff().mismatches(), 0u) << rank.message();
    EXPECT_GT(rank.diff().checked(), 0u) << rank.message();
  }
  RecordProperty("calls", static_cast<int>(c.ranks(0).calls()));
  RecordProperty("checked", std::to_string(c.ranks(0).diff().checked()));
}

// A rank that never arrives: every spinning variant must give up at the deadline and name it, and
// the group must run correctly again after the controller's Reset.
TEST_F(GpuTest, NeverArrivingRankIsReportedAsHangThenGroupRecovers) {
  ASSERT_NE(daemon_, nullptr);
  for (auto variant : {v1::VARIANT_ONE_STAGE, v1::VARIANT_TWO_KERNEL, v1::VARIANT_LAMPORT,
                       v1::VARIANT_LAMPORT_TB}) {
    v1::SweepSpec spec;
    spec.set_world_size(2);
    spec.add_m(64);
    spec.add_n(7168);
    spec.add_variants(variant);
    spec.set_warmup(1);
    spec.set_iters(2);
    spec.set_timeout_ms(1000);
    spec.set_fault("never_arrive:1");
    const auto t0 = std::chrono::steady_clock::now();
    const v1::RunResult r = Run(spec);
    const double wall_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_EQ(r.cases_size(), 1) << r.message();
    const v1::CaseResult& c = r.cases(0);
    EXPECT_EQ(c.status(), v1::CASE_STATUS_HANG) << Describe(c);
    // The HANG must arrive within the timeout plus one second of wall time.
    EXPECT_LE(wall_ms, 1000.0 + 1000.0) << Describe(c);
    RecordProperty(std::string("hang_wall_ms_") + v1::Variant_Name(variant),
                   std::to_string(wall_ms));
    bool named = false;
    for (const v1::RankResult& rank : c.ranks()) {
      if (rank.rank() == 0) {
        EXPECT_EQ(rank.status(), v1::CASE_STATUS_HANG) << rank.message();
        EXPECT_EQ(rank.suspect_peer(), 1) << rank.message();
        EXPECT_FALSE(rank.phase().empty());
        named = rank.suspect_peer() == 1;
      }
    }
    EXPECT_TRUE(named) << Describe(c);
    spec.clear_fault();
    const v1::RunResult again = Run(spec);
    ASSERT_EQ(again.cases_size(), 1);
    EXPECT_EQ(again.cases(0).status(), v1::CASE_STATUS_OK) << Describe(again.cases(0));
    EXPECT_EQ(again.cases(0).diff().mismatches(), 0u) << Describe(again.cases(0));
  }
}

INSTANTIATE_TEST_SUITE_P(Lamport, GpuStressTest,
                         ::testing::Values(StressParam{v1::VARIANT_LAMPORT, v1::MODE_EAGER},
                                           StressParam{v1::VARIANT_LAMPORT, v1::MODE_GRAPH},
                                           StressParam{v1::VARIANT_LAMPORT_TB, v1::MODE_EAGER},
                                           StressParam{v1::VARIANT_LAMPORT_TB, v1::MODE_GRAPH}),
                         [](const ::testing::TestParamInfo<StressParam>& i) {
                           return v1::Variant_Name(i.param.variant) + "_" +
                                  v1::Mode_Name(i.param.mode);
                         });

}  // namespace
}  // namespace colltest::testing
