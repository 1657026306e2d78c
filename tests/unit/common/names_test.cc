#include "common/names.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "gtest/gtest.h"

namespace colltest::common {
namespace {

using ::google::protobuf::EnumDescriptor;

// The short name of every value of `d` but UNSPECIFIED, in enum order: the proto name without the
// enum's prefix ("VARIANT_LAMPORT_TB" -> "LAMPORT_TB"). Read from the descriptor, so a value added
// to the proto is expected here before anyone names it.
std::vector<std::pair<int, std::string>> ShortNames(const EnumDescriptor* d,
                                                    absl::string_view prefix) {
  std::vector<std::pair<int, std::string>> out;
  for (int i = 0; i < d->value_count(); ++i) {
    if (d->value(i)->number() == 0) continue;  // UNSPECIFIED
    std::string name = d->value(i)->name();
    EXPECT_TRUE(absl::StartsWith(name, prefix)) << name;
    out.emplace_back(d->value(i)->number(), name.substr(prefix.size()));
  }
  return out;
}

// Every value prints as its lower-case short name, parses back from it in any case, and is listed
// by `names` in enum order; nothing else parses.
template <typename Enum>
void ExpectLowerCaseRoundTrip(const EnumDescriptor* d, absl::string_view prefix,
                              absl::string_view (*name)(Enum),
                              std::optional<Enum> (*parse)(absl::string_view),
                              std::vector<std::string> (*names)()) {
  SCOPED_TRACE(d->name());
  std::vector<std::string> expected_names;
  for (const auto& [number, upper] : ShortNames(d, prefix)) {
    const Enum value = static_cast<Enum>(number);
    const std::string lower = absl::AsciiStrToLower(upper);
    EXPECT_EQ(name(value), lower);
    EXPECT_EQ(parse(lower), value) << lower;
    EXPECT_EQ(parse(upper), value) << upper;
    expected_names.push_back(lower);
  }
  EXPECT_EQ(names(), expected_names);
  EXPECT_EQ(parse("unspecified"), std::nullopt);
  EXPECT_EQ(parse(""), std::nullopt);
}

template <typename Enum>
void ExpectUpperCaseNames(const EnumDescriptor* d, absl::string_view prefix,
                          absl::string_view (*name)(Enum)) {
  SCOPED_TRACE(d->name());
  for (const auto& [number, upper] : ShortNames(d, prefix)) {
    EXPECT_EQ(name(static_cast<Enum>(number)), upper);
  }
  EXPECT_EQ(name(static_cast<Enum>(0)), "UNSPECIFIED");
}

TEST(NamesTest, EveryLowerCaseNameRoundTrips) {
  ExpectLowerCaseRoundTrip(v1::Variant_descriptor(), "VARIANT_", &VariantName, &ParseVariantName,
                           &VariantNames);
  ExpectLowerCaseRoundTrip(v1::Mode_descriptor(), "MODE_", &ModeName, &ParseModeName, &ModeNames);
  ExpectLowerCaseRoundTrip(v1::DType_descriptor(), "DTYPE_", &DTypeName, &ParseDTypeName,
                           &DTypeNames);
  ExpectLowerCaseRoundTrip(v1::Pattern_descriptor(), "PATTERN_", &PatternName, &ParsePatternName,
                           &PatternNames);
  ExpectLowerCaseRoundTrip(v1::Tolerance_descriptor(), "TOLERANCE_", &ToleranceName,
                           &ParseToleranceName, &ToleranceNames);
  ExpectLowerCaseRoundTrip(v1::Epilogue_descriptor(), "EPILOGUE_", &EpilogueName,
                           &ParseEpilogueName, &EpilogueNames);
  ExpectLowerCaseRoundTrip(v1::Fp8Format_descriptor(), "FP8_FORMAT_", &Fp8FormatName,
                           &ParseFp8FormatName, &Fp8FormatNames);
  ExpectLowerCaseRoundTrip(v1::QuantTolerance_descriptor(), "QUANT_TOLERANCE_", &QuantToleranceName,
                           &ParseQuantToleranceName, &QuantToleranceNames);
  ExpectLowerCaseRoundTrip(v1::QuantRule_descriptor(), "QUANT_RULE_", &QuantRuleName,
                           &ParseQuantRuleName, &QuantRuleNames);
}

TEST(NamesTest, EveryUpperCaseNameIsTheProtoName) {
  ExpectUpperCaseNames(v1::CaseStatus_descriptor(), "CASE_STATUS_", &CaseStatusName);
  ExpectUpperCaseNames(v1::RunState_descriptor(), "RUN_STATE_", &RunStateName);
  ExpectUpperCaseNames(v1::GroupState_descriptor(), "GROUP_STATE_", &GroupStateName);
  ExpectUpperCaseNames(v1::CompareVerdict_descriptor(), "COMPARE_VERDICT_", &CompareVerdictName);
}

TEST(NamesTest, RunStatesParseInAnyCaseAndListInLowerCase) {
  for (const auto& [number, upper] : ShortNames(v1::RunState_descriptor(), "RUN_STATE_")) {
    const auto state = static_cast<v1::RunState>(number);
    EXPECT_EQ(ParseRunStateName(upper), state);
    EXPECT_EQ(ParseRunStateName(absl::AsciiStrToLower(upper)), state);
  }
  EXPECT_EQ(ParseRunStateName("Done"), v1::RUN_STATE_DONE);
  EXPECT_EQ(ParseRunStateName("unspecified"), std::nullopt);
  EXPECT_THAT(RunStateNames(), ::testing::Contains("interrupted"));
}

// The names are derived from the proto; these are the exact strings users type and outputs have
// printed (the JSON contract, golden outputs), which a change of the derivation must keep.
TEST(NamesTest, KeepsTheNamesOutputsPrint) {
  EXPECT_EQ(VariantName(v1::VARIANT_ONE_STAGE), "one_stage");
  EXPECT_EQ(VariantName(v1::VARIANT_TWO_KERNEL), "two_kernel");
  EXPECT_EQ(VariantName(v1::VARIANT_LAMPORT), "lamport");
  EXPECT_EQ(VariantName(v1::VARIANT_LAMPORT_TB), "lamport_tb");
  EXPECT_EQ(VariantName(v1::VARIANT_NCCL), "nccl");
  EXPECT_EQ(VariantName(v1::VARIANT_AUTO), "auto");
  EXPECT_EQ(VariantName(v1::VARIANT_LAMPORT_TWO_SHOT), "lamport_two_shot");
  EXPECT_EQ(ModeName(v1::MODE_GRAPH), "graph");
  EXPECT_EQ(DTypeName(v1::DTYPE_FP16), "fp16");
  EXPECT_EQ(DTypeName(v1::DTYPE_FP32), "fp32");
  EXPECT_EQ(PatternName(v1::PATTERN_NEG_ZERO), "neg_zero");
  EXPECT_EQ(PatternName(v1::PATTERN_DENORMAL), "denormal");
  EXPECT_EQ(ToleranceName(v1::TOLERANCE_TRTLLM), "trtllm");
  EXPECT_EQ(CaseStatusName(v1::CASE_STATUS_UNSUPPORTED), "UNSUPPORTED");
  EXPECT_EQ(RunStateName(v1::RUN_STATE_INTERRUPTED), "INTERRUPTED");
  EXPECT_EQ(GroupStateName(v1::GROUP_STATE_RECOVERING), "RECOVERING");
  EXPECT_EQ(CompareVerdictName(v1::COMPARE_VERDICT_ONLY_A), "ONLY_A");
  EXPECT_EQ(ParseVariantName("Lamport_TB"), v1::VARIANT_LAMPORT_TB);
  EXPECT_EQ(ParseRunStateName("cancelled"), v1::RUN_STATE_CANCELLED);
}

// The quantising epilogues' names as docs/quantisation.md and the CLI spell them.
TEST(NamesTest, KeepsTheQuantisationNames) {
  EXPECT_EQ(EpilogueNames(),
            (std::vector<std::string>{"none", "fp8_token", "fp8_tensor", "nvfp4"}));
  EXPECT_EQ(Fp8FormatNames(), (std::vector<std::string>{"e4m3fn", "e4m3fnuz"}));
  EXPECT_EQ(QuantToleranceNames(), (std::vector<std::string>{"strict", "ulp"}));
  EXPECT_EQ(QuantRuleNames(),
            (std::vector<std::string>{"scale", "format", "saturation", "rounding", "unexplained"}));
  EXPECT_EQ(ParseEpilogueName("FP8_Token"), v1::EPILOGUE_FP8_TOKEN);
  EXPECT_EQ(PatternName(v1::PATTERN_AMAX_LAST_RANK), "amax_last_rank");
  EXPECT_EQ(PatternName(v1::PATTERN_QUANT_TIES), "quant_ties");
  EXPECT_EQ(PatternName(v1::PATTERN_QUANT_SATURATE), "quant_saturate");
  EXPECT_EQ(PatternName(v1::PATTERN_ZERO_ROWS), "zero_rows");
}

// An UNSPECIFIED value prints as what the server treats it as, so it can be typed back in.
TEST(NamesTest, UnspecifiedPrintsAsItsDefault) {
  EXPECT_EQ(VariantName(v1::VARIANT_UNSPECIFIED), "unspecified");
  EXPECT_EQ(ModeName(v1::MODE_UNSPECIFIED), "eager");
  EXPECT_EQ(DTypeName(v1::DTYPE_UNSPECIFIED), "bf16");
  EXPECT_EQ(PatternName(v1::PATTERN_UNSPECIFIED), "normal");
  EXPECT_EQ(ToleranceName(v1::TOLERANCE_UNSPECIFIED), "strict");
  EXPECT_EQ(EpilogueName(v1::EPILOGUE_UNSPECIFIED), "none");
  EXPECT_EQ(QuantToleranceName(v1::QUANT_TOLERANCE_UNSPECIFIED), "strict");
  EXPECT_EQ(QuantRuleName(v1::QUANT_RULE_UNSPECIFIED), "none");
  // Which format that is depends on the device (e4m3fnuz on gfx942): only the worker knows.
  EXPECT_EQ(Fp8FormatName(v1::FP8_FORMAT_UNSPECIFIED), "device");
  EXPECT_EQ(DTypeName(static_cast<v1::DType>(99)), "bf16");
}

}  // namespace
}  // namespace colltest::common
