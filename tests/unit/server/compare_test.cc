#include "server/runs/compare.h"

#include <string>
#include <utility>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;
using ::testing::HasSubstr;

// An OK lamport graph case, W=4 m=64 n=7168 bf16, timed at `median` with the spread [p10, p90].
v1::CaseResult Case(double median = 12.1, double p10 = 11.9, double p90 = 12.4) {
  v1::CaseResult c;
  c.set_variant(v1::VARIANT_LAMPORT);
  c.set_mode(v1::MODE_GRAPH);
  c.set_world_size(4);
  c.set_m(64);
  c.set_n(7168);
  c.set_dtype(v1::DTYPE_BF16);
  c.set_pattern(v1::PATTERN_NORMAL);
  c.set_status(v1::CASE_STATUS_OK);
  c.mutable_timing()->set_median_us(median);
  c.mutable_timing()->set_p10_us(p10);
  c.mutable_timing()->set_p90_us(p90);
  c.mutable_diff()->set_max_ulp(1);
  return c;
}

v1::CaseResult WithStatus(v1::CaseResult c, v1::CaseStatus status) {
  c.set_status(status);
  if (status != v1::CASE_STATUS_OK && status != v1::CASE_STATUS_WRONG) {
    c.clear_timing();
    c.clear_diff();
  }
  return c;
}

v1::RunResult MakeRun(const std::string& id, std::initializer_list<v1::CaseResult> cases) {
  v1::RunResult run;
  run.set_run_id(id);
  run.set_state(v1::RUN_STATE_DONE);
  for (const v1::CaseResult& c : cases) *run.add_cases() = c;
  return run;
}

// The one comparison of two one-case runs.
v1::CaseComparison CompareOne(const v1::CaseResult& a, const v1::CaseResult& b,
                              double threshold = 0) {
  const v1::CompareResponse r = CompareRuns(MakeRun("a", {a}), MakeRun("b", {b}), threshold);
  EXPECT_EQ(r.cases_size(), 1);
  return r.cases_size() == 1 ? r.cases(0) : v1::CaseComparison();
}

TEST(CompareTest, CopiesIdsMachinesAndTheDefaultThreshold) {
  v1::RunResult a = MakeRun("r-a", {Case()});
  v1::RunResult b = MakeRun("r-b", {Case()});
  a.mutable_machine()->set_key("k1");
  a.mutable_machine()->set_driver_version("12.4");
  b.mutable_machine()->set_key("k1");
  b.mutable_machine()->set_driver_version("13.0");
  const v1::CompareResponse r = CompareRuns(a, b, 0);
  EXPECT_EQ(r.run_a(), "r-a");
  EXPECT_EQ(r.run_b(), "r-b");
  EXPECT_DOUBLE_EQ(r.threshold(), 0.05);
  EXPECT_EQ(r.machine_a().driver_version(), "12.4");
  EXPECT_EQ(r.machine_b().driver_version(), "13.0");
  EXPECT_EQ(r.baseline(), "");
  EXPECT_DOUBLE_EQ(CompareRuns(a, b, -1).threshold(), 0.05);
  EXPECT_DOUBLE_EQ(CompareRuns(a, b, 0.1).threshold(), 0.1);
}

TEST(CompareTest, MatchesByShapeAndListsTheUnmatchedAsOnlyAThenOnlyB) {
  v1::CaseResult gone = Case();
  gone.set_m(1);
  v1::CaseResult fresh = Case();
  fresh.set_n(4096);
  v1::CaseResult other_world = Case();
  other_world.set_world_size(2);
  const v1::CompareResponse r =
      CompareRuns(MakeRun("a", {gone, Case()}), MakeRun("b", {fresh, Case(), other_world}), 0);
  ASSERT_EQ(r.cases_size(), 4);
  EXPECT_EQ(r.cases(0).verdict(), v1::COMPARE_VERDICT_ONLY_A);
  EXPECT_EQ(r.cases(0).m(), 1u);
  EXPECT_EQ(r.cases(0).reason(), "missing from run b");
  EXPECT_EQ(r.cases(0).status_a(), v1::CASE_STATUS_OK);
  EXPECT_EQ(r.cases(0).status_b(), v1::CASE_STATUS_UNSPECIFIED);
  EXPECT_EQ(r.cases(1).verdict(), v1::COMPARE_VERDICT_SAME);
  EXPECT_EQ(r.cases(1).m(), 64u);
  EXPECT_EQ(r.cases(2).verdict(), v1::COMPARE_VERDICT_ONLY_B);
  EXPECT_EQ(r.cases(2).n(), 4096u);
  EXPECT_EQ(r.cases(2).reason(), "new in run b");
  EXPECT_EQ(r.cases(3).verdict(), v1::COMPARE_VERDICT_ONLY_B);
  EXPECT_EQ(r.cases(3).world_size(), 2u);
  // A dropped case hides its results: it counts as a regression; a new one does not.
  EXPECT_EQ(r.regressions(), 1u);
  EXPECT_TRUE(r.regressed());
  EXPECT_EQ(r.message(),
            "1 of 4 cases regressed (worst: lamport graph w=4 m=1 n=7168 bf16 "
            "missing from run b)");
}

TEST(CompareTest, EveryFieldOfTheKeyTellsCasesApart) {
  v1::CaseResult variant = Case(), mode = Case(), dtype = Case();
  variant.set_variant(v1::VARIANT_ONE_STAGE);
  mode.set_mode(v1::MODE_EAGER);
  dtype.set_dtype(v1::DTYPE_FP16);
  for (const v1::CaseResult& b : {variant, mode, dtype}) {
    const v1::CompareResponse r = CompareRuns(MakeRun("a", {Case()}), MakeRun("b", {b}), 0);
    ASSERT_EQ(r.cases_size(), 2) << b.ShortDebugString();
    EXPECT_EQ(r.cases(0).verdict(), v1::COMPARE_VERDICT_ONLY_A);
    EXPECT_EQ(r.cases(1).verdict(), v1::COMPARE_VERDICT_ONLY_B);
  }
}

v1::CaseResult WithEpilogue(v1::CaseResult c, v1::Epilogue epilogue,
                            v1::Fp8Format format = v1::FP8_FORMAT_UNSPECIFIED,
                            bool keep_normed = false) {
  c.set_epilogue(epilogue);
  c.set_fp8_format(format);
  c.set_keep_normed(keep_normed);
  return c;
}

// An fp8 case and the plain one of the same shape are different kernels, as are the two fp8
// formats, and a kernel that also writes the normed output.
TEST(CompareTest, EpilogueFormatAndKeepNormedTellCasesApart) {
  const v1::CaseResult none = WithEpilogue(Case(), v1::EPILOGUE_NONE);
  const v1::CaseResult token = WithEpilogue(Case(), v1::EPILOGUE_FP8_TOKEN, v1::FP8_FORMAT_E4M3FN);
  const v1::CaseResult fnuz = WithEpilogue(Case(), v1::EPILOGUE_FP8_TOKEN, v1::FP8_FORMAT_E4M3FNUZ);
  const v1::CaseResult kept =
      WithEpilogue(Case(), v1::EPILOGUE_FP8_TOKEN, v1::FP8_FORMAT_E4M3FN, true);
  const v1::CaseResult tensor =
      WithEpilogue(Case(), v1::EPILOGUE_FP8_TENSOR, v1::FP8_FORMAT_E4M3FN);
  const std::pair<v1::CaseResult, v1::CaseResult> apart[] = {
      {token, none}, {none, token}, {token, fnuz}, {token, kept}, {token, tensor}};
  for (const auto& [a, b] : apart) {
    const v1::CompareResponse r = CompareRuns(MakeRun("a", {a}), MakeRun("b", {b}), 0);
    ASSERT_EQ(r.cases_size(), 2) << a.ShortDebugString() << " vs " << b.ShortDebugString();
    EXPECT_EQ(r.cases(0).verdict(), v1::COMPARE_VERDICT_ONLY_A);
    EXPECT_EQ(r.cases(1).verdict(), v1::COMPARE_VERDICT_ONLY_B);
  }
  // With both in both runs, each finds its own partner.
  const v1::CompareResponse r =
      CompareRuns(MakeRun("a", {none, token}), MakeRun("b", {token, none}), 0);
  ASSERT_EQ(r.cases_size(), 2);
  EXPECT_EQ(r.cases(0).epilogue(), v1::EPILOGUE_NONE);
  EXPECT_EQ(r.cases(0).verdict(), v1::COMPARE_VERDICT_SAME);
  EXPECT_EQ(r.cases(1).epilogue(), v1::EPILOGUE_FP8_TOKEN);
  EXPECT_EQ(r.cases(1).fp8_format(), v1::FP8_FORMAT_E4M3FN);
  EXPECT_EQ(r.cases(1).verdict(), v1::COMPARE_VERDICT_SAME);
}

// A record older than the epilogues is a case without one; keep_normed means nothing without one.
TEST(CompareTest, UnsetEpilogueIsNone) {
  const v1::CaseComparison c =
      CompareOne(Case(), WithEpilogue(Case(), v1::EPILOGUE_NONE, v1::FP8_FORMAT_UNSPECIFIED, true));
  EXPECT_EQ(c.verdict(), v1::COMPARE_VERDICT_SAME);
  EXPECT_EQ(c.epilogue(), v1::EPILOGUE_NONE);
  EXPECT_FALSE(c.keep_normed());
}

// A case that never ran wrote no format: it still meets its partner, and its failure is a
// regression of that case rather than a case gone missing.
TEST(CompareTest, ACaseWithoutAFormatMatchesEither) {
  const v1::CaseResult ran = WithEpilogue(Case(), v1::EPILOGUE_FP8_TENSOR, v1::FP8_FORMAT_E4M3FNUZ);
  const v1::CaseResult died =
      WithStatus(WithEpilogue(Case(), v1::EPILOGUE_FP8_TENSOR), v1::CASE_STATUS_ERROR);
  const v1::CaseComparison c = CompareOne(ran, died);
  EXPECT_EQ(c.verdict(), v1::COMPARE_VERDICT_REGRESSION);
  EXPECT_EQ(c.reason(), "status OK -> ERROR");
  EXPECT_EQ(c.fp8_format(), v1::FP8_FORMAT_E4M3FNUZ);
  EXPECT_EQ(CompareOne(died, ran).fp8_format(), v1::FP8_FORMAT_E4M3FNUZ);
  // The same format first, whatever the order.
  const v1::CaseResult fn = WithEpilogue(Case(), v1::EPILOGUE_FP8_TENSOR, v1::FP8_FORMAT_E4M3FN);
  const v1::CompareResponse r = CompareRuns(MakeRun("a", {ran}), MakeRun("b", {died, fn, ran}), 0);
  ASSERT_EQ(r.cases_size(), 3);
  EXPECT_EQ(r.cases(0).verdict(), v1::COMPARE_VERDICT_SAME);
  EXPECT_EQ(r.cases(1).verdict(), v1::COMPARE_VERDICT_ONLY_B);
  EXPECT_EQ(r.cases(1).status_b(), v1::CASE_STATUS_ERROR);
}

TEST(CompareTest, GrowingQuantMismatchesAreRegressions) {
  v1::CaseResult a = WithEpilogue(Case(), v1::EPILOGUE_NVFP4);
  a.mutable_quant()->set_code_mismatches(2);
  v1::CaseResult b = WithStatus(a, v1::CASE_STATUS_WRONG);
  b.mutable_quant()->set_code_mismatches(5);
  v1::CaseComparison c = CompareOne(a, b);
  EXPECT_EQ(c.verdict(), v1::COMPARE_VERDICT_REGRESSION);
  EXPECT_EQ(c.reason(), "status OK -> WRONG, code mismatches 2 -> 5");
  EXPECT_EQ(c.quant_a().code_mismatches(), 2u);
  EXPECT_EQ(c.quant_b().code_mismatches(), 5u);
  // WRONG in both runs: the growth alone.
  a = WithStatus(a, v1::CASE_STATUS_WRONG);
  EXPECT_EQ(CompareOne(a, b).reason(), "code mismatches 2 -> 5");
  b = a;
  b.mutable_quant()->set_scale_mismatches(1);
  EXPECT_EQ(CompareOne(a, b).verdict(), v1::COMPARE_VERDICT_REGRESSION);
  EXPECT_EQ(CompareOne(a, b).reason(), "scale mismatches 0 -> 1");
  // Fewer are not; nor are the counts of a case that did not run its checks.
  EXPECT_EQ(CompareOne(b, a).verdict(), v1::COMPARE_VERDICT_SAME);
  EXPECT_EQ(CompareOne(WithStatus(a, v1::CASE_STATUS_HANG), b).verdict(),
            v1::COMPARE_VERDICT_IMPROVEMENT);
  // The summary names the epilogue.
  const v1::CompareResponse r = CompareRuns(MakeRun("a", {a}), MakeRun("b", {b}), 0);
  EXPECT_EQ(r.message(),
            "1 of 1 case regressed (worst: lamport graph w=4 m=64 n=7168 bf16 nvfp4 "
            "scale mismatches 0 -> 1)");
}

TEST(CompareTest, UnsetModeAndDtypeMatchWhatTheServerRuns) {
  v1::CaseResult a = Case();
  a.set_mode(v1::MODE_EAGER);
  a.set_dtype(v1::DTYPE_BF16);
  v1::CaseResult b = a;
  b.set_mode(v1::MODE_UNSPECIFIED);
  b.set_dtype(v1::DTYPE_UNSPECIFIED);
  const v1::CaseComparison c = CompareOne(a, b);
  EXPECT_EQ(c.verdict(), v1::COMPARE_VERDICT_SAME);
  EXPECT_EQ(c.mode(), v1::MODE_EAGER);
  EXPECT_EQ(c.dtype(), v1::DTYPE_BF16);
}

TEST(CompareTest, AutoIsMatchedAsAutoWhateverItDispatchedTo) {
  v1::CaseResult a = Case();
  a.set_variant(v1::VARIANT_AUTO);
  a.set_resolved_variant(v1::VARIANT_LAMPORT);
  v1::CaseResult b = a;
  b.set_resolved_variant(v1::VARIANT_ONE_STAGE);
  const v1::CompareResponse r = CompareRuns(MakeRun("a", {a}), MakeRun("b", {Case(), b}), 0);
  ASSERT_EQ(r.cases_size(), 2);
  EXPECT_EQ(r.cases(0).variant(), v1::VARIANT_AUTO);
  EXPECT_EQ(r.cases(0).verdict(), v1::COMPARE_VERDICT_SAME);
  EXPECT_THAT(r.cases(0).reason(), HasSubstr("; auto dispatched to one_stage (was lamport)"));
  // The explicit lamport case of b is not auto's partner, though auto ran lamport in a.
  EXPECT_EQ(r.cases(1).variant(), v1::VARIANT_LAMPORT);
  EXPECT_EQ(r.cases(1).verdict(), v1::COMPARE_VERDICT_ONLY_B);
}

TEST(CompareTest, CasesSharingAKeyAreMatchedInOrder) {
  // The same shape under two patterns, one fast and one slow, in both runs.
  v1::CaseResult fast = Case(10, 9.9, 10.1);
  v1::CaseResult slow = Case(20, 19.9, 20.1);
  slow.set_pattern(v1::PATTERN_NEG_ZERO);
  const v1::CompareResponse r =
      CompareRuns(MakeRun("a", {fast, slow}), MakeRun("b", {fast, slow}), 0);
  ASSERT_EQ(r.cases_size(), 2);
  EXPECT_EQ(r.cases(0).verdict(), v1::COMPARE_VERDICT_SAME);
  EXPECT_DOUBLE_EQ(r.cases(0).timing_a().median_us(), 10);
  EXPECT_EQ(r.cases(1).verdict(), v1::COMPARE_VERDICT_SAME);
  EXPECT_DOUBLE_EQ(r.cases(1).timing_b().median_us(), 20);
  EXPECT_FALSE(r.regressed());
}

TEST(CompareTest, WorseStatusIsARegression) {
  const v1::CaseComparison c = CompareOne(Case(), WithStatus(Case(), v1::CASE_STATUS_WRONG));
  EXPECT_EQ(c.verdict(), v1::COMPARE_VERDICT_REGRESSION);
  EXPECT_EQ(c.reason(), "status OK -> WRONG");
  EXPECT_EQ(c.status_a(), v1::CASE_STATUS_OK);
  EXPECT_EQ(c.status_b(), v1::CASE_STATUS_WRONG);
}

TEST(CompareTest, StatusSeverityOrder) {
  const v1::CaseResult ok = Case();
  const v1::CaseResult unsupported = WithStatus(Case(), v1::CASE_STATUS_UNSUPPORTED);
  const v1::CaseResult wrong = WithStatus(Case(), v1::CASE_STATUS_WRONG);
  const v1::CaseResult error = WithStatus(Case(), v1::CASE_STATUS_ERROR);
  const v1::CaseResult hang = WithStatus(Case(), v1::CASE_STATUS_HANG);
  const v1::CaseResult unset = WithStatus(Case(), v1::CASE_STATUS_UNSPECIFIED);
  EXPECT_EQ(CompareOne(wrong, error).verdict(), v1::COMPARE_VERDICT_REGRESSION);
  EXPECT_EQ(CompareOne(error, hang).verdict(), v1::COMPARE_VERDICT_REGRESSION);
  EXPECT_EQ(CompareOne(ok, unset).verdict(), v1::COMPARE_VERDICT_REGRESSION);
  EXPECT_EQ(CompareOne(wrong, unset).reason(), "status WRONG -> UNSPECIFIED");
  // Not worse: the same severity, or better.
  EXPECT_EQ(CompareOne(ok, unsupported).verdict(), v1::COMPARE_VERDICT_SAME);
  EXPECT_EQ(CompareOne(unsupported, ok).verdict(), v1::COMPARE_VERDICT_SAME);
  EXPECT_EQ(CompareOne(unsupported, ok).reason(), "status UNSUPPORTED -> OK, no timing to compare");
  EXPECT_EQ(CompareOne(error, unset).verdict(), v1::COMPARE_VERDICT_SAME);
  EXPECT_EQ(CompareOne(hang, hang).reason(), "HANG in both runs, no timing to compare");
  EXPECT_EQ(CompareOne(hang, error).verdict(), v1::COMPARE_VERDICT_IMPROVEMENT);
  EXPECT_EQ(CompareOne(hang, ok).verdict(), v1::COMPARE_VERDICT_IMPROVEMENT);
  EXPECT_EQ(CompareOne(hang, ok).reason(), "status HANG -> OK");
}

TEST(CompareTest, GrowingErrorCountsAreRegressionsNamingWhatGrew) {
  v1::CaseResult a = WithStatus(Case(), v1::CASE_STATUS_WRONG);
  a.mutable_diff()->set_mismatches(3);
  v1::CaseResult b = a;
  b.mutable_diff()->set_mismatches(12);
  EXPECT_EQ(CompareOne(a, b).verdict(), v1::COMPARE_VERDICT_REGRESSION);
  EXPECT_EQ(CompareOne(a, b).reason(), "mismatches 3 -> 12");

  b = a;
  b.mutable_diff()->set_max_ulp(3);
  EXPECT_EQ(CompareOne(a, b).reason(), "max ulp 1 -> 3");
  b = a;
  b.mutable_diff()->set_nan_inf(4);
  EXPECT_EQ(CompareOne(a, b).reason(), "nan/inf 0 -> 4");

  b = WithStatus(Case(), v1::CASE_STATUS_WRONG);
  b.mutable_diff()->set_mismatches(12);
  b.mutable_diff()->set_max_ulp(3);
  EXPECT_EQ(CompareOne(Case(), b).reason(),
            "status OK -> WRONG, mismatches 0 -> 12, max ulp 1 -> 3");

  // Fewer errors are not a regression.
  EXPECT_EQ(CompareOne(b, a).verdict(), v1::COMPARE_VERDICT_SAME);
}

TEST(CompareTest, DiffsOfCasesThatDidNotRunTheirChecksAreNotCompared) {
  // A hang has no diff: the WRONG that follows its fix is better, not "mismatches 0 -> 12".
  v1::CaseResult wrong = WithStatus(Case(), v1::CASE_STATUS_WRONG);
  wrong.mutable_diff()->set_mismatches(12);
  const v1::CaseComparison c = CompareOne(WithStatus(Case(), v1::CASE_STATUS_HANG), wrong);
  EXPECT_EQ(c.verdict(), v1::COMPARE_VERDICT_IMPROVEMENT);
  EXPECT_EQ(c.reason(), "status HANG -> WRONG");
  // A case that was UNSUPPORTED has no max ulp to grow from.
  EXPECT_EQ(CompareOne(WithStatus(Case(), v1::CASE_STATUS_UNSUPPORTED), Case()).verdict(),
            v1::COMPARE_VERDICT_SAME);
}

TEST(CompareTest, SlowerBeyondThresholdAndSpreadIsARegression) {
  const v1::CaseComparison c = CompareOne(Case(12.1, 11.9, 12.4), Case(14.0, 13.8, 14.3));
  EXPECT_EQ(c.verdict(), v1::COMPARE_VERDICT_REGRESSION);
  EXPECT_EQ(c.reason(), "median 12.10 us -> 14.00 us (+15.7 %), p10 13.80 us > p90 12.40 us");
  EXPECT_NEAR(c.ratio(), 14.0 / 12.1, 1e-12);
  EXPECT_DOUBLE_EQ(c.timing_a().median_us(), 12.1);
  EXPECT_DOUBLE_EQ(c.timing_b().p10_us(), 13.8);
}

TEST(CompareTest, SlowerWithinTheSpreadIsTheSame) {
  // +7 %, beyond the threshold, but b's p10 is not above a's p90: the runs' noise overlaps.
  const v1::CaseComparison c = CompareOne(Case(12.1, 11.0, 12.4), Case(12.947, 12.0, 14.0));
  EXPECT_EQ(c.verdict(), v1::COMPARE_VERDICT_SAME);
  EXPECT_EQ(c.reason(),
            "median 12.10 us -> 12.95 us (+7.0 %), within the spread: p10 12.00 us <= "
            "p90 12.40 us");
}

TEST(CompareTest, SlowerWithinTheThresholdIsTheSame) {
  // +4 %, and the spreads do not overlap: the threshold alone keeps it SAME.
  const v1::CaseComparison c = CompareOne(Case(10, 9.9, 10.1), Case(10.4, 10.3, 10.5));
  EXPECT_EQ(c.verdict(), v1::COMPARE_VERDICT_SAME);
  EXPECT_EQ(c.reason(), "median 10.00 us -> 10.40 us (+4.0 %), within the 5 % threshold");
  EXPECT_EQ(CompareOne(Case(10, 9.9, 10.1), Case(10.4, 10.3, 10.5), 0.02).verdict(),
            v1::COMPARE_VERDICT_REGRESSION);
}

TEST(CompareTest, FasterBeyondThresholdAndSpreadIsAnImprovement) {
  const v1::CaseComparison c = CompareOne(Case(14.0, 13.8, 14.3), Case(12.1, 11.9, 12.4));
  EXPECT_EQ(c.verdict(), v1::COMPARE_VERDICT_IMPROVEMENT);
  EXPECT_EQ(c.reason(), "median 14.00 us -> 12.10 us (-13.6 %), p90 12.40 us < p10 13.80 us");
  // Overlapping spreads, or within the threshold: the same.
  EXPECT_EQ(CompareOne(Case(14.0, 12.0, 14.3), Case(12.1, 11.9, 12.4)).verdict(),
            v1::COMPARE_VERDICT_SAME);
  EXPECT_EQ(CompareOne(Case(10.4, 10.3, 10.5), Case(10, 9.9, 10.1)).verdict(),
            v1::COMPARE_VERDICT_SAME);
}

TEST(CompareTest, MissingPercentilesAreReadAsTheMedian) {
  const v1::CaseComparison c = CompareOne(Case(10, 0, 0), Case(11, 0, 0));
  EXPECT_EQ(c.verdict(), v1::COMPARE_VERDICT_REGRESSION);
  EXPECT_EQ(c.reason(), "median 10.00 us -> 11.00 us (+10.0 %), p10 11.00 us > p90 10.00 us");
}

TEST(CompareTest, WrongCasesWithTimingAreTimed) {
  const v1::CaseComparison c =
      CompareOne(WithStatus(Case(12.1, 11.9, 12.4), v1::CASE_STATUS_WRONG),
                 WithStatus(Case(14.0, 13.8, 14.3), v1::CASE_STATUS_WRONG));
  EXPECT_EQ(c.verdict(), v1::COMPARE_VERDICT_REGRESSION);
  EXPECT_THAT(c.reason(), HasSubstr("(+15.7 %)"));
  // Fixed and slower: still slower.
  const v1::CaseComparison fixed =
      CompareOne(WithStatus(Case(12.1, 11.9, 12.4), v1::CASE_STATUS_WRONG), Case(14.0, 13.8, 14.3));
  EXPECT_EQ(fixed.verdict(), v1::COMPARE_VERDICT_REGRESSION);
  EXPECT_THAT(fixed.reason(), HasSubstr("status WRONG -> OK, median 12.10 us -> 14.00 us"));
}

TEST(CompareTest, RatioIsZeroWhenEitherCaseWasNotTimed) {
  EXPECT_EQ(CompareOne(Case(), WithStatus(Case(), v1::CASE_STATUS_HANG)).ratio(), 0);
  EXPECT_EQ(CompareOne(WithStatus(Case(), v1::CASE_STATUS_UNSUPPORTED), Case()).ratio(), 0);
  EXPECT_EQ(CompareOne(Case(0, 0, 0), Case()).ratio(), 0);
}

TEST(CompareTest, MessageNamesTheWorstRegression) {
  v1::CaseResult slower_a = Case(10, 9.9, 10.1), slower_b = Case(12, 11.9, 12.1);
  v1::CaseResult slowest_a = Case(10, 9.9, 10.1), slowest_b = Case(20, 19.9, 20.1);
  slower_a.set_m(1);
  slower_b.set_m(1);
  slowest_a.set_m(8);
  slowest_b.set_m(8);
  v1::CaseResult same = Case();
  same.set_m(16);
  const v1::CompareResponse timing = CompareRuns(MakeRun("a", {slower_a, slowest_a, same}),
                                                 MakeRun("b", {slower_b, slowest_b, same}), 0);
  EXPECT_EQ(timing.regressions(), 2u);
  EXPECT_EQ(timing.message(),
            "2 of 3 cases regressed (worst: lamport graph w=4 m=8 n=7168 bf16 +100.0 %)");

  // A slowdown outranks a case missing from b (most often a narrower sweep).
  v1::CaseResult gone = Case();
  gone.set_m(32);
  const v1::CompareResponse missing =
      CompareRuns(MakeRun("a", {gone, slower_a}), MakeRun("b", {slower_b}), 0);
  EXPECT_EQ(missing.message(),
            "2 of 2 cases regressed (worst: lamport graph w=4 m=1 n=7168 bf16 +20.0 %)");

  // A case that broke outranks any slowdown.
  v1::CaseResult broke = WithStatus(same, v1::CASE_STATUS_HANG);
  const v1::CompareResponse errors = CompareRuns(MakeRun("a", {slower_a, slowest_a, same}),
                                                 MakeRun("b", {slower_b, slowest_b, broke}), 0);
  EXPECT_EQ(errors.message(),
            "3 of 3 cases regressed (worst: lamport graph w=4 m=16 n=7168 bf16 status OK -> HANG)");

  // A new failure outranks more errors in a case that failed already.
  v1::CaseResult wrong_a = WithStatus(slower_a, v1::CASE_STATUS_WRONG);
  wrong_a.mutable_diff()->set_mismatches(3);
  v1::CaseResult wrong_b = wrong_a;
  wrong_b.mutable_diff()->set_mismatches(30);
  const v1::CompareResponse failures =
      CompareRuns(MakeRun("a", {wrong_a, same}),
                  MakeRun("b", {wrong_b, WithStatus(same, v1::CASE_STATUS_WRONG)}), 0);
  EXPECT_EQ(
      failures.message(),
      "2 of 2 cases regressed (worst: lamport graph w=4 m=16 n=7168 bf16 status OK -> WRONG)");
}

TEST(CompareTest, MessageWithoutRegression) {
  v1::CaseResult faster_a = Case(14.0, 13.8, 14.3), faster_b = Case(12.1, 11.9, 12.4);
  faster_a.set_m(1);
  faster_b.set_m(1);
  v1::CaseResult fresh = Case();
  fresh.set_m(2);
  const v1::CompareResponse r =
      CompareRuns(MakeRun("a", {faster_a, Case()}), MakeRun("b", {faster_b, Case(), fresh}), 0);
  EXPECT_FALSE(r.regressed());
  EXPECT_EQ(r.regressions(), 0u);
  EXPECT_EQ(r.improvements(), 1u);
  EXPECT_EQ(r.message(), "no regression in 3 cases (1 improved, 1 only in run b)");
  EXPECT_EQ(CompareRuns(MakeRun("a", {Case()}), MakeRun("b", {Case()}), 0).message(),
            "no regression in 1 case");
  EXPECT_EQ(CompareRuns(MakeRun("a", {}), MakeRun("b", {}), 0).message(),
            "no regression in 0 cases");
}

v1::RunResult Placed(const std::string& id, uint32_t ranks_per_gpu, bool time_sliced = false) {
  v1::RunResult run = MakeRun(id, {Case()});
  run.set_ranks_per_gpu(ranks_per_gpu);
  run.set_time_sliced(time_sliced);
  return run;
}

// Ranks sharing a GPU time kernel overhead, ranks on separate GPUs a link: never judged against
// each other, whichever side shared.
TEST(CheckPlacedAlikeTest, RefusesASharedGpuRunAgainstOneOnSeparateGpusBothWays) {
  const absl::Status shared_first =
      CheckPlacedAlike(Placed("r-2", 4), "run r-2", Placed("r-1", 1), "baseline nightly (run r-1)");
  EXPECT_EQ(shared_first.code(), absl::StatusCode::kFailedPrecondition) << shared_first;
  EXPECT_EQ(shared_first.message(),
            "run r-2 shared GPUs (4 ranks per GPU) and baseline nightly (run r-1) ran on separate "
            "GPUs: their timings measure different things; compare runs placed alike");
  const absl::Status separate_first =
      CheckPlacedAlike(Placed("r-1", 0), "run r-1", Placed("r-2", 4), "run r-2");
  EXPECT_EQ(separate_first.code(), absl::StatusCode::kFailedPrecondition) << separate_first;
  EXPECT_EQ(separate_first.message(),
            "run r-1 ran on separate GPUs and run r-2 shared GPUs (4 ranks per GPU): their "
            "timings measure different things; compare runs placed alike");
}

TEST(CheckPlacedAlikeTest, RefusesDifferentSharesAndTimeSlicing) {
  const absl::Status shares = CheckPlacedAlike(Placed("a", 2), "run a", Placed("b", 4), "run b");
  EXPECT_EQ(shares.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(shares.message(), HasSubstr("run a shared GPUs (2 ranks per GPU) and run b shared "
                                          "GPUs (4 ranks per GPU)"));
  const absl::Status sliced =
      CheckPlacedAlike(Placed("a", 4), "run a", Placed("b", 4, true), "run b");
  EXPECT_EQ(sliced.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(sliced.message(), HasSubstr("run b shared time-sliced GPUs (4 ranks per GPU)"));
}

// 0 is a record older than the field: one rank per GPU, as 1 says.
TEST(CheckPlacedAlikeTest, RunsPlacedAlikeCompareNormally) {
  EXPECT_TRUE(CheckPlacedAlike(Placed("a", 1), "run a", Placed("b", 0), "run b").ok());
  EXPECT_TRUE(CheckPlacedAlike(Placed("a", 0), "run a", Placed("b", 1), "run b").ok());
  EXPECT_TRUE(CheckPlacedAlike(Placed("a", 4), "run a", Placed("b", 4), "run b").ok());
  EXPECT_TRUE(CheckPlacedAlike(Placed("a", 4, true), "run a", Placed("b", 4, true), "run b").ok());
  EXPECT_EQ(EffectiveRanksPerGpu(Placed("a", 0)), 1u);
  const v1::CompareResponse r = CompareRuns(Placed("a", 1), Placed("b", 0), 0);
  EXPECT_FALSE(r.regressed());
  EXPECT_EQ(r.message(), "no regression in 1 case");
}

// Rule (docs/plugins.md): a kernel plugin's cases match by its name, so two builds of one plugin
// are one case, and a slower second build is a regression naming both builds; two plugins are
// two cases.
TEST(CompareTest, TwoBuildsOfAPluginAreOneCaseAndTheRegressionNamesBoth) {
  auto build = [](const std::string& name, const std::string& version, const std::string& sha,
                  double median) {
    v1::CaseResult c = Case(median, median * 0.99, median * 1.01);
    c.set_variant(v1::VARIANT_PLUGIN);
    c.mutable_plugin()->set_name(name);
    c.mutable_plugin()->set_version(version);
    c.mutable_plugin()->set_sha256(sha);
    return c;
  };
  const std::string sha_a(64, 'a'), sha_b(64, 'b');
  const v1::CaseComparison c =
      CompareOne(build("theirs", "1.0", sha_a, 10), build("theirs", "1.1", sha_b, 20));
  EXPECT_EQ(c.verdict(), v1::COMPARE_VERDICT_REGRESSION);
  EXPECT_EQ(c.plugin(), "theirs");
  EXPECT_EQ(c.plugin_a().sha256(), sha_a);
  EXPECT_EQ(c.plugin_b().version(), "1.1");
  EXPECT_THAT(c.reason(), HasSubstr("plugin:theirs 1.0 (sha256 aaaaaaaaaaaa) -> 1.1 (sha256 "
                                    "bbbbbbbbbbbb)"));
  const v1::CompareResponse two = CompareRuns(MakeRun("a", {build("theirs", "1.0", sha_a, 10)}),
                                              MakeRun("b", {build("other", "1.0", sha_a, 10)}), 0);
  ASSERT_EQ(two.cases_size(), 2);
  EXPECT_EQ(two.cases(0).verdict(), v1::COMPARE_VERDICT_ONLY_A);
}

}  // namespace
}  // namespace colltest::server
