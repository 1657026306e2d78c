// The flags of the quantising epilogues (client/flags/quant_flags.h) through BuildSweepSpec.
#include "client/flags/quant_flags.h"

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "client/flags/flags.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::client {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(QuantFlagsTest, UnsetFlagsLeaveTheServersDefaults) {
  absl::StatusOr<v1::SweepSpec> spec = BuildSweepSpec(SweepFlags{});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->epilogues_size(), 0);  // the server's [none]
  EXPECT_FALSE(spec->keep_normed());
  EXPECT_EQ(spec->fp8_format(), v1::FP8_FORMAT_UNSPECIFIED);
  EXPECT_EQ(spec->fp8_scale(), 0.0f);
  EXPECT_EQ(spec->nvfp4_global_scale(), 0.0f);
  EXPECT_EQ(spec->quant_tolerance(), v1::QUANT_TOLERANCE_UNSPECIFIED);
}

TEST(QuantFlagsTest, TranslatesEveryFlag) {
  SweepFlags flags;
  flags.epilogue = "fp8_token, NVFP4";
  flags.keep_normed = true;
  flags.fp8_format = "e4m3fnuz";
  flags.fp8_scale = "0.0625";
  flags.nvfp4_global_scale = "512";
  flags.quant_tolerance = "ulp";
  flags.pattern = "quant_ties";
  absl::StatusOr<v1::SweepSpec> spec = BuildSweepSpec(flags);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(spec->epilogues(), ElementsAre(v1::EPILOGUE_FP8_TOKEN, v1::EPILOGUE_NVFP4));
  EXPECT_TRUE(spec->keep_normed());
  EXPECT_EQ(spec->fp8_format(), v1::FP8_FORMAT_E4M3FNUZ);
  EXPECT_EQ(spec->fp8_scale(), 0.0625f);
  EXPECT_EQ(spec->nvfp4_global_scale(), 512.0f);
  EXPECT_EQ(spec->quant_tolerance(), v1::QUANT_TOLERANCE_ULP);
  EXPECT_EQ(spec->pattern(), v1::PATTERN_QUANT_TIES);
}

TEST(QuantFlagsTest, TheNewPatternsAreAcceptedAndListedWhenOneIsNot) {
  for (const auto& [name, pattern] : {std::pair{"amax_last_rank", v1::PATTERN_AMAX_LAST_RANK},
                                      std::pair{"quant_ties", v1::PATTERN_QUANT_TIES},
                                      std::pair{"quant_saturate", v1::PATTERN_QUANT_SATURATE},
                                      std::pair{"zero_rows", v1::PATTERN_ZERO_ROWS}}) {
    SweepFlags flags;
    flags.pattern = name;
    absl::StatusOr<v1::SweepSpec> spec = BuildSweepSpec(flags);
    ASSERT_TRUE(spec.ok()) << spec.status();
    EXPECT_EQ(spec->pattern(), pattern) << name;
  }
  SweepFlags bad;
  bad.pattern = "ties";
  EXPECT_THAT(BuildSweepSpec(bad).status().message(),
              HasSubstr("expected normal, integers, neg_zero, large, denormal, same, "
                        "amax_last_rank, quant_ties, quant_saturate or zero_rows"));
}

TEST(QuantFlagsTest, AllIsEveryEpilogueOnceInEnumOrder) {
  EXPECT_THAT(*ParseEpiloguesFlag("--epilogue", "all"),
              ElementsAre(v1::EPILOGUE_NONE, v1::EPILOGUE_FP8_TOKEN, v1::EPILOGUE_FP8_TENSOR,
                          v1::EPILOGUE_NVFP4));
  // Each epilogue is a dimension of the sweep: a repeat would only run its cases twice.
  EXPECT_THAT(*ParseEpiloguesFlag("--epilogue", "nvfp4,all,nvfp4"),
              ElementsAre(v1::EPILOGUE_NVFP4, v1::EPILOGUE_NONE, v1::EPILOGUE_FP8_TOKEN,
                          v1::EPILOGUE_FP8_TENSOR));
}

TEST(QuantFlagsTest, ScaleLimitsAreInclusive) {
  EXPECT_EQ(*ParseQuantScaleFlag("--fp8-scale", "18446744073709551616"), 18446744073709551616.0f);
  EXPECT_GT(*ParseQuantScaleFlag("--fp8-scale", "1.5e-45"), 0.0f);  // fp32's smallest subnormal
  EXPECT_EQ(*ParseQuantScaleFlag("--fp8-scale", " 1e-3 "), 1e-3f);
}

struct Refusal {
  std::string flag;
  std::string value;
  std::string why;
};

void Set(SweepFlags& flags, const Refusal& r) {
  if (r.flag == "--epilogue") flags.epilogue = r.value;
  if (r.flag == "--fp8-format") flags.fp8_format = r.value;
  if (r.flag == "--fp8-scale") flags.fp8_scale = r.value;
  if (r.flag == "--nvfp4-global-scale") flags.nvfp4_global_scale = r.value;
  if (r.flag == "--quant-tolerance") flags.quant_tolerance = r.value;
}

TEST(QuantFlagsTest, RefusalsNameTheFlagAndWhatItTakes) {
  const std::string limit = "a positive finite number, at most 2^64 (18446744073709551616)";
  for (const Refusal& r : {
           Refusal{"--epilogue", "fp8", "unknown epilogue 'fp8'"},
           Refusal{"--epilogue", "fp8", "did you mean 'fp8_token'?"},
           Refusal{"--epilogue", "none,,nvfp4", "cannot parse 'none,,nvfp4'"},
           Refusal{"--epilogue", "nvfp4", ""},  // accepted: checked below
           Refusal{"--fp8-format", "e5m2", "expected e4m3fn or e4m3fnuz"},
           Refusal{"--fp8-format", "e4m3fz", "did you mean 'e4m3fn'?"},
           Refusal{"--quant-tolerance", "loose", "expected strict or ulp"},
           Refusal{"--fp8-scale", "0", "'0' is not above 0 (0 would mean the default)"},
           Refusal{"--fp8-scale", "-0.5", "'-0.5' is not above 0"},
           Refusal{"--fp8-scale", "1e20", "'1e20' is above the limit 2^64"},
           Refusal{"--fp8-scale", "1e-50", "'1e-50' is 0 in fp32"},
           Refusal{"--fp8-scale", "inf", "cannot parse 'inf'"},
           Refusal{"--fp8-scale", "nan", "cannot parse 'nan'"},
           Refusal{"--nvfp4-global-scale", "0", "'0' is not above 0"},
           Refusal{"--nvfp4-global-scale", "1/256", "cannot parse '1/256'"},
       }) {
    SweepFlags flags;
    Set(flags, r);
    absl::StatusOr<v1::SweepSpec> spec = BuildSweepSpec(flags);
    if (r.why.empty()) {
      EXPECT_TRUE(spec.ok()) << r.flag << " " << r.value << ": " << spec.status();
      continue;
    }
    ASSERT_FALSE(spec.ok()) << r.flag << " " << r.value;
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(spec.status().message()), StartsWith(r.flag + ": "));
    EXPECT_THAT(spec.status().message(), HasSubstr(r.why)) << r.flag << " " << r.value;
    if (r.flag == "--fp8-scale" || r.flag == "--nvfp4-global-scale") {
      EXPECT_THAT(spec.status().message(), HasSubstr(limit)) << r.value;
    }
  }
}

TEST(QuantFlagsTest, EveryBadQuantFlagIsReportedWithTheOthersInHelpOrder) {
  SweepFlags flags;
  flags.tolerance = "loose";
  flags.epilogue = "fp4";
  flags.fp8_format = "fn";
  flags.fp8_scale = "0";
  flags.nvfp4_global_scale = "-1";
  flags.quant_tolerance = "exact";
  flags.warmup = "x";
  absl::StatusOr<v1::SweepSpec> spec = BuildSweepSpec(flags);
  ASSERT_FALSE(spec.ok());
  const std::vector<std::string> lines = absl::StrSplit(spec.status().message(), '\n');
  std::vector<std::string> flags_named;
  for (const std::string& line : lines) flags_named.push_back(line.substr(0, line.find(':')));
  EXPECT_THAT(flags_named, ElementsAre("--tolerance", "--epilogue", "--fp8-format", "--fp8-scale",
                                       "--nvfp4-global-scale", "--quant-tolerance", "--warmup"));
}

}  // namespace
}  // namespace colltest::client
