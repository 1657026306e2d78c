#include "client/commands/exit_code.h"

#include <initializer_list>

#include "gtest/gtest.h"
#include "tests/unit/client/sample_compare.h"
#include "tests/unit/client/sample_health.h"
#include "tests/unit/client/sample_run.h"

namespace colltest::client {
namespace {

v1::RunResult RunWith(std::initializer_list<v1::CaseStatus> statuses,
                      v1::RunState state = v1::RUN_STATE_DONE) {
  v1::RunResult run;
  run.set_state(state);
  for (v1::CaseStatus status : statuses) {
    *run.add_cases() = testing::MakeCase(v1::VARIANT_LAMPORT, status);
  }
  return run;
}

TEST(ExitCodeForRunTest, DocumentedValues) {
  EXPECT_EQ(kExitOk, 0);
  EXPECT_EQ(kExitWrong, 1);
  EXPECT_EQ(kExitHang, 2);
  EXPECT_EQ(kExitError, 3);
  EXPECT_EQ(kExitRegressed, 4);
  EXPECT_EQ(kExitBusy, 5);
  EXPECT_EQ(kExitUnreachable, 6);
}

TEST(ExitCodeForRunTest, OkAndUnsupportedAreSuccess) {
  EXPECT_EQ(ExitCodeForRun(RunWith({})), kExitOk);
  EXPECT_EQ(ExitCodeForRun(RunWith({v1::CASE_STATUS_OK})), kExitOk);
  EXPECT_EQ(ExitCodeForRun(RunWith({v1::CASE_STATUS_OK, v1::CASE_STATUS_UNSUPPORTED})), kExitOk);
  EXPECT_EQ(ExitCodeForRun(RunWith({v1::CASE_STATUS_UNSUPPORTED})), kExitOk);
}

TEST(ExitCodeForRunTest, WrongIsOne) {
  EXPECT_EQ(ExitCodeForRun(RunWith({v1::CASE_STATUS_OK, v1::CASE_STATUS_WRONG})), kExitWrong);
}

TEST(ExitCodeForRunTest, HangWinsOverWrongInAnyOrder) {
  EXPECT_EQ(ExitCodeForRun(RunWith({v1::CASE_STATUS_WRONG, v1::CASE_STATUS_HANG})), kExitHang);
  EXPECT_EQ(ExitCodeForRun(RunWith({v1::CASE_STATUS_HANG, v1::CASE_STATUS_WRONG})), kExitHang);
}

TEST(ExitCodeForRunTest, ErrorCaseIsThreeEvenWithHangs) {
  EXPECT_EQ(ExitCodeForRun(RunWith({v1::CASE_STATUS_ERROR})), kExitError);
  EXPECT_EQ(
      ExitCodeForRun(RunWith({v1::CASE_STATUS_HANG, v1::CASE_STATUS_ERROR, v1::CASE_STATUS_WRONG})),
      kExitError);
}

TEST(ExitCodeForRunTest, UnsetCaseStatusIsAnErrorNotASuccess) {
  EXPECT_EQ(ExitCodeForRun(RunWith({v1::CASE_STATUS_UNSPECIFIED})), kExitError);
}

TEST(ExitCodeForRunTest, CancelledFailedOrInterruptedRunIsThree) {
  EXPECT_EQ(ExitCodeForRun(RunWith({v1::CASE_STATUS_OK}, v1::RUN_STATE_CANCELLED)), kExitError);
  EXPECT_EQ(ExitCodeForRun(RunWith({}, v1::RUN_STATE_FAILED)), kExitError);
  // colltestd stopped under it: the cases it kept may all be OK, the rest never ran.
  EXPECT_EQ(ExitCodeForRun(RunWith({v1::CASE_STATUS_OK}, v1::RUN_STATE_INTERRUPTED)), kExitError);
}

TEST(ExitCodeForRunTest, SampleRunIsAHang) {
  EXPECT_EQ(ExitCodeForRun(testing::SampleRun()), kExitHang);
}

TEST(ExitCodeForHealthTest, SlowWarnAloneIsHealthy) {
  const v1::HealthResponse health = testing::SampleHealthOk();
  ASSERT_TRUE(health.pairs(1).slow());
  EXPECT_EQ(ExitCodeForHealth(health), kExitOk);
}

TEST(ExitCodeForHealthTest, WrongIsOne) {
  v1::HealthResponse health = testing::SampleHealthOk();
  health.set_status(v1::CASE_STATUS_WRONG);
  health.mutable_pairs(0)->set_status(v1::CASE_STATUS_WRONG);
  EXPECT_EQ(ExitCodeForHealth(health), kExitWrong);
}

TEST(ExitCodeForHealthTest, HangIsTwo) {
  EXPECT_EQ(ExitCodeForHealth(testing::SampleHealthHang()), kExitHang);
}

TEST(ExitCodeForHealthTest, ErrorIsThree) {
  EXPECT_EQ(ExitCodeForHealth(testing::SampleHealthError()), kExitError);
}

TEST(ExitCodeForHealthTest, UnsetStatusIsAnErrorNotASuccess) {
  v1::HealthResponse health = testing::SampleHealthOk();
  health.clear_status();
  EXPECT_EQ(ExitCodeForHealth(health), kExitError);
}

TEST(ExitCodeForHealthTest, WorstDetailWinsOverAnOptimisticSummary) {
  v1::HealthResponse pair_hangs = testing::SampleHealthOk();
  pair_hangs.mutable_pairs(2)->set_status(v1::CASE_STATUS_HANG);
  EXPECT_EQ(ExitCodeForHealth(pair_hangs), kExitHang);

  v1::HealthResponse rank_wrong = testing::SampleHealthOk();
  rank_wrong.mutable_ranks(0)->set_status(v1::CASE_STATUS_WRONG);
  EXPECT_EQ(ExitCodeForHealth(rank_wrong), kExitWrong);

  v1::HealthResponse case_error = testing::SampleHealthOk();
  case_error.mutable_cases(0)->set_status(v1::CASE_STATUS_ERROR);
  EXPECT_EQ(ExitCodeForHealth(case_error), kExitError);
}

// The earlier verdict a BUSY answer carries is not a check made now, good or bad.
TEST(ExitCodeForHealthTest, BusyIsFiveWhateverTheEarlierVerdict) {
  v1::HealthResponse busy = testing::SampleHealthBusy();
  ASSERT_EQ(busy.status(), v1::CASE_STATUS_HANG);
  EXPECT_EQ(ExitCodeForHealth(busy), kExitBusy);

  v1::HealthResponse busy_ok = testing::SampleHealthOk();
  busy_ok.set_busy(true);
  EXPECT_EQ(ExitCodeForHealth(busy_ok), kExitBusy);

  v1::HealthResponse busy_without_verdict;
  busy_without_verdict.set_busy(true);
  busy_without_verdict.set_busy_reason("3 runs of other clients ahead");
  EXPECT_EQ(ExitCodeForHealth(busy_without_verdict), kExitBusy);
}

// A cached verdict is a real one (max_verdict_age_ms asked for it): it exits as when fresh.
TEST(ExitCodeForHealthTest, CachedVerdictKeepsItsCode) {
  v1::HealthResponse cached = testing::SampleHealthHang();
  cached.set_cached(true);
  EXPECT_EQ(ExitCodeForHealth(cached), kExitHang);
  v1::HealthResponse cached_ok = testing::SampleHealthOk();
  cached_ok.set_cached(true);
  EXPECT_EQ(ExitCodeForHealth(cached_ok), kExitOk);
}

TEST(ExitCodeForComparisonTest, RegressionIsFourCleanIsZero) {
  EXPECT_EQ(ExitCodeForComparison(testing::SampleComparison()), kExitRegressed);
  EXPECT_EQ(ExitCodeForComparison(testing::SampleCleanComparison()), kExitOk);
}

TEST(ExitCodeForComparisonTest, ARegressedCaseCountsWhateverTheSummarySays) {
  v1::CompareResponse regression = testing::SampleCleanComparison();
  regression.mutable_cases(1)->set_verdict(v1::COMPARE_VERDICT_REGRESSION);
  EXPECT_EQ(ExitCodeForComparison(regression), kExitRegressed);
  v1::CompareResponse missing = testing::SampleCleanComparison();
  missing.mutable_cases(0)->set_verdict(v1::COMPARE_VERDICT_ONLY_A);
  EXPECT_EQ(ExitCodeForComparison(missing), kExitRegressed);
  v1::CompareResponse flagged = testing::SampleCleanComparison();
  flagged.set_regressed(true);
  EXPECT_EQ(ExitCodeForComparison(flagged), kExitRegressed);
  // New cases and improvements are news, not failures.
  v1::CompareResponse news = testing::SampleCleanComparison();
  news.mutable_cases(0)->set_verdict(v1::COMPARE_VERDICT_ONLY_B);
  news.mutable_cases(1)->set_verdict(v1::COMPARE_VERDICT_IMPROVEMENT);
  EXPECT_EQ(ExitCodeForComparison(news), kExitOk);
}

TEST(ExitCodeForRunAndComparisonTest, TheRunsOwnFailureOutranksARegression) {
  const v1::CompareResponse regressed = testing::SampleComparison();
  const v1::CompareResponse clean = testing::SampleCleanComparison();
  EXPECT_EQ(ExitCodeForRunAndComparison(kExitOk, regressed), kExitRegressed);
  EXPECT_EQ(ExitCodeForRunAndComparison(kExitOk, clean), kExitOk);
  for (int run_code : {kExitWrong, kExitHang, kExitError}) {
    EXPECT_EQ(ExitCodeForRunAndComparison(run_code, regressed), run_code);
    EXPECT_EQ(ExitCodeForRunAndComparison(run_code, clean), run_code);
  }
}

}  // namespace
}  // namespace colltest::client
