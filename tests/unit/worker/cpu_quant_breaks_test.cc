// Each planted quantisation bug (the quant_* faults, worker/numerics/quant_breaks.h) must make the
// cpu specification's quantising epilogue WRONG, and the check must name the rule it breaks where
// the codes tell it. Named after the rule each one breaks, as the protocol mutation tests are.
#include <string>

#include "gtest/gtest.h"
#include "tests/unit/worker/cpu_group.h"

namespace colltest::cpu::testing {
namespace {

namespace v1 = ::colltest::v1;

struct Planted {
  const char* fault;
  v1::Epilogue epilogue;
  v1::Pattern pattern;  // the pattern aimed at the bug
  v1::QuantRule rule;   // the rule the check must name
};

// One case of the break at W = 4 (the last rank's chunk is a quarter of the row), bf16, every
// rank WRONG with the rule named in its quant stats and its message.
void ExpectCaught(const Planted& p, v1::Variant variant) {
  CpuGroup group(4);
  colltest::worker::v1::CaseRequest req = MakeCase(variant, 6, 256, p.pattern);
  req.set_epilogue(p.epilogue);
  req.set_fault(p.fault);
  const std::string what = std::string(p.fault) + " " + v1::Variant_Name(variant);
  for (const auto& r : group.Run(req)) {
    EXPECT_EQ(r.status(), v1::CASE_STATUS_WRONG) << what << ": " << r.message();
    EXPECT_EQ(r.diff().mismatches(), 0u) << what << ": the norm itself is right";
    EXPECT_GT(r.quant().code_mismatches() + r.quant().scale_mismatches(), 0u) << what;
    EXPECT_EQ(r.quant().rule(), p.rule)
        << what << ": named " << v1::QuantRule_Name(r.quant().rule()) << "; "
        << r.quant().first_bad();
  }
}

TEST(CpuQuantBreaks, AmaxBeforeTheLastRanksChunkBreaksTheScaleRule) {
  for (v1::Variant v : {v1::VARIANT_ONE_STAGE, v1::VARIANT_LAMPORT_TWO_SHOT}) {
    ExpectCaught({"quant_amax_before_last_rank", v1::EPILOGUE_FP8_TOKEN, v1::PATTERN_AMAX_LAST_RANK,
                  v1::QUANT_RULE_SCALE},
                 v);
  }
}

TEST(CpuQuantBreaks, TruncationBreaksTheRoundingRule) {
  for (v1::Epilogue e : {v1::EPILOGUE_FP8_TOKEN, v1::EPILOGUE_FP8_TENSOR, v1::EPILOGUE_NVFP4}) {
    ExpectCaught({"quant_truncate", e, v1::PATTERN_QUANT_TIES, v1::QUANT_RULE_ROUNDING},
                 v1::VARIANT_LAMPORT);
  }
}

TEST(CpuQuantBreaks, NoSaturationBreaksTheSaturationRule) {
  ExpectCaught({"quant_no_saturation", v1::EPILOGUE_FP8_TENSOR, v1::PATTERN_QUANT_SATURATE,
                v1::QUANT_RULE_SATURATION},
               v1::VARIANT_TWO_KERNEL);
}

TEST(CpuQuantBreaks, TheOtherFp8FormatBreaksTheFormatRule) {
  for (v1::Epilogue e : {v1::EPILOGUE_FP8_TOKEN, v1::EPILOGUE_FP8_TENSOR}) {
    ExpectCaught({"quant_swap_format", e, v1::PATTERN_NORMAL, v1::QUANT_RULE_FORMAT},
                 v1::VARIANT_LAMPORT_TB);
  }
}

// The block scales written are right; the codes were scaled with the previous block's.
TEST(CpuQuantBreaks, ThePreviousBlocksScaleIsCaught) {
  ExpectCaught(
      {"quant_block_offset", v1::EPILOGUE_NVFP4, v1::PATTERN_NORMAL, v1::QUANT_RULE_UNEXPLAINED},
      v1::VARIANT_ONE_STAGE);
}

// Without a quantising epilogue a quant fault changes nothing.
TEST(CpuQuantBreaks, ACaseWithoutEpilogueIgnoresThem) {
  CpuGroup group(2);
  for (const char* fault : {"quant_amax_before_last_rank", "quant_truncate", "quant_no_saturation",
                            "quant_swap_format", "quant_block_offset"}) {
    colltest::worker::v1::CaseRequest req =
        MakeCase(v1::VARIANT_ONE_STAGE, 4, 256, v1::PATTERN_NORMAL);
    req.set_fault(fault);
    for (const auto& r : group.Run(req)) {
      EXPECT_EQ(r.status(), v1::CASE_STATUS_OK) << fault << ": " << r.message();
    }
  }
}

}  // namespace
}  // namespace colltest::cpu::testing
