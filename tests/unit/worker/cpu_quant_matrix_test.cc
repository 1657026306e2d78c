// The quantising epilogues' whole matrix on the cpu specification: every epilogue x variant x
// dtype with every input pattern, at W = 2, 4 and 8, exact in strict mode (docs/quantisation.md).
// One call per case (no warm-up, one timed call, checked): what is checked is the result, and a
// group of 8 ranks on a 2-core machine must stay cheap. n = 264 ends each row in a short nvfp4
// block and leaves room for amax_last_rank's last eighth and quant_ties' FP8 block.
#include <string>

#include "gtest/gtest.h"
#include "tests/unit/worker/cpu_group.h"

namespace colltest::cpu::testing {
namespace {

namespace v1 = ::colltest::v1;

constexpr uint32_t kRows = 4;  // zero_rows: two zero rows, two normal
constexpr uint32_t kCols = 264;

class CpuQuantMatrix : public ::testing::TestWithParam<uint32_t> {};

TEST_P(CpuQuantMatrix, EveryEpilogueVariantDtypeAndPatternIsExact) {
  const uint32_t world = GetParam();
  CpuGroup group(world);
  int cases = 0;
  for (int p = v1::Pattern_MIN + 1; p <= v1::Pattern_MAX; ++p) {
    for (v1::Variant v : {v1::VARIANT_ONE_STAGE, v1::VARIANT_TWO_KERNEL, v1::VARIANT_LAMPORT,
                          v1::VARIANT_LAMPORT_TB, v1::VARIANT_LAMPORT_TWO_SHOT}) {
      for (v1::Epilogue e : {v1::EPILOGUE_NONE, v1::EPILOGUE_FP8_TOKEN, v1::EPILOGUE_FP8_TENSOR,
                             v1::EPILOGUE_NVFP4}) {
        for (v1::DType t : {v1::DTYPE_BF16, v1::DTYPE_FP16, v1::DTYPE_FP32}) {
          colltest::worker::v1::CaseRequest req =
              MakeCase(v, kRows, kCols, static_cast<v1::Pattern>(p));
          req.set_dtype(t);
          req.set_epilogue(e);
          req.set_warmup(0);
          req.set_iters(1);
          const std::string what = req.ShortDebugString();
          for (const auto& r : group.Run(req)) {
            ASSERT_EQ(r.status(), v1::CASE_STATUS_OK) << what << ": " << r.message();
            if (e == v1::EPILOGUE_NONE) continue;
            ASSERT_EQ(r.quant().checked_codes(), uint64_t{kRows} * kCols) << what;
            ASSERT_EQ(r.quant().code_mismatches() + r.quant().scale_mismatches(), 0u) << what;
          }
          ++cases;
        }
      }
    }
  }
  EXPECT_EQ(cases, 10 * 5 * 4 * 3);
}

INSTANTIATE_TEST_SUITE_P(Worlds, CpuQuantMatrix, ::testing::Values(2u, 4u, 8u),
                         [](const auto& info) { return "W" + std::to_string(info.param); });

}  // namespace
}  // namespace colltest::cpu::testing
