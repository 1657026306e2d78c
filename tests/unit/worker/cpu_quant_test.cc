// The quantising epilogues end to end on the cpu backend (docs/quantisation.md): every variant,
// epilogue, dtype and fp8 format at W = 2, with and without keep_normed, passes the strict check,
// through the eager, stress and graph-stress loops; a planted break is WRONG naming the rule.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/unit/worker/cpu_group.h"

namespace colltest::cpu::testing {
namespace {

using colltest::v1::CASE_STATUS_OK;
using colltest::v1::CASE_STATUS_WRONG;

const colltest::v1::Variant kVariants[] = {
    colltest::v1::VARIANT_ONE_STAGE, colltest::v1::VARIANT_TWO_KERNEL,
    colltest::v1::VARIANT_LAMPORT, colltest::v1::VARIANT_LAMPORT_TB,
    colltest::v1::VARIANT_LAMPORT_TWO_SHOT};
const colltest::v1::Epilogue kEpilogues[] = {
    colltest::v1::EPILOGUE_NONE, colltest::v1::EPILOGUE_FP8_TOKEN,
    colltest::v1::EPILOGUE_FP8_TENSOR, colltest::v1::EPILOGUE_NVFP4};
constexpr uint32_t kRows = 5;
constexpr uint32_t kCols = 264;  // 16.5 nvfp4 blocks: a short last block

bool Quantises(colltest::v1::Epilogue e) { return e != colltest::v1::EPILOGUE_NONE; }
bool IsFp8(colltest::v1::Epilogue e) {
  return e == colltest::v1::EPILOGUE_FP8_TOKEN || e == colltest::v1::EPILOGUE_FP8_TENSOR;
}

colltest::worker::v1::CaseRequest QuantCase(colltest::v1::Variant v, colltest::v1::DType t,
                                            colltest::v1::Epilogue e, bool keep_normed) {
  colltest::worker::v1::CaseRequest req = MakeCase(v, kRows, kCols, colltest::v1::PATTERN_NORMAL);
  req.set_dtype(t);
  req.set_epilogue(e);
  req.set_keep_normed(keep_normed);
  req.set_quant_tolerance(colltest::v1::QUANT_TOLERANCE_STRICT);
  return req;
}

// Every rank OK, its quantised output checked code by code (the last call of an eager case), and
// `out` checked only where the kernel wrote it.
void ExpectQuantOk(const std::vector<colltest::v1::RankResult>& results,
                   const colltest::worker::v1::CaseRequest& req, colltest::v1::Fp8Format format) {
  const std::string what = req.ShortDebugString();
  const uint64_t elements = uint64_t{kRows} * kCols;
  const bool writes_out = !Quantises(req.epilogue()) || req.keep_normed();
  for (const auto& r : results) {
    EXPECT_EQ(r.status(), CASE_STATUS_OK) << what << " rank " << r.rank() << ": " << r.message();
    EXPECT_EQ(r.diff().mismatches(), 0u) << what;
    EXPECT_EQ(r.quant().code_mismatches(), 0u) << what << ": " << r.quant().first_bad();
    EXPECT_EQ(r.quant().scale_mismatches(), 0u) << what << ": " << r.quant().first_bad();
    EXPECT_EQ(r.quant().rule(), colltest::v1::QUANT_RULE_UNSPECIFIED) << what;
    if (req.stress_calls() > 0) continue;  // every call checked: counts grow with the calls
    EXPECT_EQ(r.diff().checked(), elements * (writes_out ? 2 : 1)) << what;
    EXPECT_EQ(r.quant().checked_codes(), Quantises(req.epilogue()) ? elements : 0) << what;
    EXPECT_EQ(r.fp8_format(), IsFp8(req.epilogue()) ? format : colltest::v1::FP8_FORMAT_UNSPECIFIED)
        << what;
  }
}

TEST(CpuQuant, EveryVariantEpilogueDtypeAndKeepNormedIsExact) {
  CpuGroup group(2);
  for (auto t : {colltest::v1::DTYPE_BF16, colltest::v1::DTYPE_FP16, colltest::v1::DTYPE_FP32}) {
    for (auto e : kEpilogues) {
      for (bool keep : {false, true}) {
        for (auto v : kVariants) {
          const auto req = QuantCase(v, t, e, keep);
          // fp8_format left to the device: e4m3fn on the cpu backend.
          ExpectQuantOk(group.Run(req), req, colltest::v1::FP8_FORMAT_E4M3FN);
        }
      }
    }
  }
}

TEST(CpuQuant, E4m3fnuzIsExactToo) {
  CpuGroup group(2);
  for (auto t : {colltest::v1::DTYPE_BF16, colltest::v1::DTYPE_FP16, colltest::v1::DTYPE_FP32}) {
    for (auto e : {colltest::v1::EPILOGUE_FP8_TOKEN, colltest::v1::EPILOGUE_FP8_TENSOR}) {
      for (bool keep : {false, true}) {
        for (auto v : kVariants) {
          auto req = QuantCase(v, t, e, keep);
          req.set_fp8_format(colltest::v1::FP8_FORMAT_E4M3FNUZ);
          ExpectQuantOk(group.Run(req), req, colltest::v1::FP8_FORMAT_E4M3FNUZ);
        }
      }
    }
  }
}

// Every call checked into the case's tally (eager stress), and every captured call of every
// replay into its own accumulator (graph stress), then folded.
TEST(CpuQuant, StressAndGraphStressFoldEveryCall) {
  CpuGroup group(2);
  for (auto mode : {colltest::v1::MODE_EAGER, colltest::v1::MODE_GRAPH}) {
    for (auto v : {colltest::v1::VARIANT_LAMPORT, colltest::v1::VARIANT_LAMPORT_TB}) {
      for (auto e : {colltest::v1::EPILOGUE_FP8_TOKEN, colltest::v1::EPILOGUE_NVFP4}) {
        auto req = QuantCase(v, colltest::v1::DTYPE_BF16, e, false);
        req.set_mode(mode);
        req.set_stress_calls(40);
        const auto results = group.Run(req);
        ExpectQuantOk(results, req, colltest::v1::FP8_FORMAT_E4M3FN);
        for (const auto& r : results) EXPECT_GE(r.quant().checked_codes(), 40u * kCols);
      }
    }
  }
}

// The planted break (fault quant_truncate): encoders that truncate. The check must see it and
// name the rule.
TEST(CpuQuant, TruncatingEncodersAreWrongNamingTheRoundingRule) {
  CpuGroup group(2);
  for (auto e : {colltest::v1::EPILOGUE_FP8_TOKEN, colltest::v1::EPILOGUE_FP8_TENSOR,
                 colltest::v1::EPILOGUE_NVFP4}) {
    for (bool keep : {false, true}) {
      auto req = QuantCase(colltest::v1::VARIANT_ONE_STAGE, colltest::v1::DTYPE_BF16, e, keep);
      req.set_fault("quant_truncate");
      for (const auto& r : group.Run(req)) {
        const std::string what = req.ShortDebugString();
        EXPECT_EQ(r.status(), CASE_STATUS_WRONG) << what;
        EXPECT_EQ(r.diff().mismatches(), 0u) << what;  // the norm itself is right
        EXPECT_GT(r.quant().code_mismatches(), 0u) << what;
        EXPECT_EQ(r.quant().rule(), colltest::v1::QUANT_RULE_ROUNDING) << what;
        EXPECT_NE(r.message().find("breaks the rounding rule"), std::string::npos) << r.message();
        EXPECT_NE(r.message().find("first row "), std::string::npos) << r.message();
        EXPECT_NE(r.quant().first_bad().find("code["), std::string::npos) << r.quant().first_bad();
        EXPECT_NE(r.quant().first_bad().find("(call 6)"), std::string::npos)
            << r.quant().first_bad();  // MakeCase: warmup 2 + iters 5, the last call checked
        EXPECT_EQ(r.quant().first_bad_call(), 6);
      }
    }
  }
}

// A quant failure is a failing call like a diff's: eager stress stops at it, and graph stress
// stops replaying once a replay's accumulators count it.
TEST(CpuQuant, AQuantFailureEndsStressAtTheFirstFailingCall) {
  CpuGroup group(2);
  for (auto mode : {colltest::v1::MODE_EAGER, colltest::v1::MODE_GRAPH}) {
    auto req = QuantCase(colltest::v1::VARIANT_ONE_STAGE, colltest::v1::DTYPE_BF16,
                         colltest::v1::EPILOGUE_FP8_TENSOR, false);
    req.set_mode(mode);
    req.set_stress_calls(128);
    req.set_fault("quant_truncate");
    for (const auto& r : group.Run(req)) {
      EXPECT_EQ(r.status(), CASE_STATUS_WRONG) << r.message();
      EXPECT_EQ(r.calls(), mode == colltest::v1::MODE_EAGER ? 1u : 64u) << r.message();
      EXPECT_EQ(r.quant().first_bad_call(), 0) << r.quant().first_bad();
    }
    group.Reset();
  }
}

// The break touches only the quantised output: without an epilogue the same group is OK.
TEST(CpuQuant, TheTruncateBreakLeavesCasesWithoutEpilogueAlone) {
  CpuGroup group(2);
  auto req = QuantCase(colltest::v1::VARIANT_ONE_STAGE, colltest::v1::DTYPE_BF16,
                       colltest::v1::EPILOGUE_NONE, false);
  req.set_fault("quant_truncate");
  ExpectQuantOk(group.Run(req), req, colltest::v1::FP8_FORMAT_UNSPECIFIED);
}

}  // namespace
}  // namespace colltest::cpu::testing
