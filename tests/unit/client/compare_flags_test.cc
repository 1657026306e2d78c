#include "client/flags/compare_flags.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::client {
namespace {

using ::testing::HasSubstr;

TEST(BuildCompareRequestTest, TwoRunsAreTheReferenceThenTheCandidate) {
  CompareFlags flags;
  flags.runs = {"r-1", "r-2"};
  absl::StatusOr<v1::CompareRequest> request = BuildCompareRequest(flags);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->run_a(), "r-1");
  EXPECT_EQ(request->run_b(), "r-2");
  EXPECT_EQ(request->baseline(), "");
  EXPECT_EQ(request->threshold(), 0);
}

TEST(BuildCompareRequestTest, OneRunWithABaseline) {
  CompareFlags flags;
  flags.runs = {"r-2"};
  flags.baseline = "nightly";
  flags.threshold = "10%";
  absl::StatusOr<v1::CompareRequest> request = BuildCompareRequest(flags);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->run_a(), "");
  EXPECT_EQ(request->run_b(), "r-2");
  EXPECT_EQ(request->baseline(), "nightly");
  EXPECT_DOUBLE_EQ(request->threshold(), 0.1);
  flags.baseline = "";  // --baseline without a name: the server's "default"
  ASSERT_TRUE(BuildCompareRequest(flags).ok());
  EXPECT_EQ(BuildCompareRequest(flags)->baseline(), "");
}

TEST(BuildCompareRequestTest, WrongNumberOfRunsIsRefused) {
  CompareFlags one;
  one.runs = {"r-1"};
  EXPECT_THAT(BuildCompareRequest(one).status().message(), HasSubstr("name two runs"));
  CompareFlags two_and_baseline;
  two_and_baseline.runs = {"r-1", "r-2"};
  two_and_baseline.baseline = "";
  EXPECT_THAT(BuildCompareRequest(two_and_baseline).status().message(),
              HasSubstr("with --baseline, name one run"));
}

TEST(ParseThresholdTest, FractionOrPercentage) {
  EXPECT_DOUBLE_EQ(*ParseThresholdFlag("--threshold", "0.05"), 0.05);
  EXPECT_DOUBLE_EQ(*ParseThresholdFlag("--threshold", " 5% "), 0.05);
  EXPECT_DOUBLE_EQ(*ParseThresholdFlag("--threshold", "150%"), 1.5);
  EXPECT_DOUBLE_EQ(*ParseThresholdFlag("--threshold", "0"), 0);
}

TEST(ParseThresholdTest, BareNumberOfOneOrMoreIsRefusedAsAMistypedPercentage) {
  absl::StatusOr<double> five = ParseThresholdFlag("--threshold", "5");
  ASSERT_FALSE(five.ok());
  EXPECT_EQ(five.status().message(), "--threshold: '5' would be 500 %: write 0.05 or 5% for 5 %");
}

TEST(ParseThresholdTest, GarbageAndNegativesAreRefused) {
  for (const char* text : {"abc", "-0.1", "nan", "inf", "%", ""}) {
    absl::StatusOr<double> threshold = ParseThresholdFlag("--threshold", text);
    ASSERT_FALSE(threshold.ok()) << text;
    EXPECT_THAT(threshold.status().message(), HasSubstr("--threshold: cannot parse")) << text;
  }
}

TEST(BuildRunComparisonTest, NoneWithoutCompareBaseline) {
  absl::StatusOr<std::optional<v1::CompareRequest>> none = BuildRunComparison(CompareFlags());
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST(BuildRunComparisonTest, BaselineAndThresholdRunLeftForTheRun) {
  CompareFlags flags;
  flags.baseline = "";
  flags.threshold = "0.1";
  absl::StatusOr<std::optional<v1::CompareRequest>> request = BuildRunComparison(flags);
  ASSERT_TRUE(request.ok() && request->has_value());
  EXPECT_EQ((*request)->baseline(), "");
  EXPECT_EQ((*request)->run_a(), "");
  EXPECT_EQ((*request)->run_b(), "");
  EXPECT_DOUBLE_EQ((*request)->threshold(), 0.1);
}

TEST(BuildRunComparisonTest, ThresholdWithoutBaselineIsRefused) {
  CompareFlags flags;
  flags.threshold = "0.1";
  EXPECT_THAT(BuildRunComparison(flags).status().message(),
              HasSubstr("--compare-threshold: only with --compare-baseline"));
  flags.baseline = "x";
  flags.threshold = "7";
  EXPECT_THAT(BuildRunComparison(flags).status().message(),
              HasSubstr("--compare-threshold: '7' would be 700 %"));
}

}  // namespace
}  // namespace colltest::client
