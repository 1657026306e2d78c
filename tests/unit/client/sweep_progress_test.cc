#include "client/sweep_progress.h"

#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/client/sample_run.h"

namespace colltest::client {
namespace {

using ::testing::HasSubstr;

TEST(ProgressLineTest, OkCaseShowsMedian) {
  v1::CaseResult c = testing::MakeCase(v1::VARIANT_LAMPORT, v1::CASE_STATUS_OK);
  c.set_m(64);
  c.mutable_timing()->set_median_us(12.34);
  EXPECT_EQ(ProgressLine(c, 3, 12), "[3/12] lamport eager m=64 n=7168: OK 12.3 us");
}

TEST(ProgressLineTest, FailureShowsMessageAndUnknownTotal) {
  v1::CaseResult c = testing::MakeCase(v1::VARIANT_LAMPORT_TB, v1::CASE_STATUS_HANG);
  c.set_mode(v1::MODE_GRAPH);
  c.set_message("rank 1 waited for rank 3 in lamport phase B");
  EXPECT_EQ(ProgressLine(c, 1, 0),
            "[1/?] lamport_tb graph m=1 n=7168: HANG: rank 1 waited for rank 3 in lamport phase B");
}

TEST(ExpectedCaseCountTest, CrossProduct) {
  v1::SweepSpec spec;
  spec.add_m(1);
  spec.add_m(8);
  spec.add_m(64);
  spec.add_n(7168);
  spec.add_variants(v1::VARIANT_LAMPORT);
  spec.add_variants(v1::VARIANT_NCCL);
  EXPECT_EQ(ExpectedCaseCount(spec), 6u);  // modes default to eager only
  spec.add_modes(v1::MODE_EAGER);
  spec.add_modes(v1::MODE_GRAPH);
  EXPECT_EQ(ExpectedCaseCount(spec), 12u);
  spec.clear_variants();
  EXPECT_EQ(ExpectedCaseCount(spec), 0u);  // the server picks the variants
}

TEST(SweepCollectorTest, PrintsProgressAndKeepsTheSummary) {
  std::ostringstream err;
  SweepCollector collector(&err, 0);

  v1::SweepEvent queued;
  queued.set_run_id("r-9");
  queued.mutable_progress()->set_state(v1::RUN_STATE_QUEUED);
  queued.mutable_progress()->set_queue_position(2);
  queued.mutable_progress()->set_total(2);
  collector.OnEvent(queued);
  collector.OnEvent(queued);  // repeated: printed once

  v1::SweepEvent running;
  running.set_run_id("r-9");
  running.mutable_progress()->set_state(v1::RUN_STATE_RUNNING);
  running.mutable_progress()->set_total(2);
  collector.OnEvent(running);

  v1::RunResult sample = testing::SampleRun();
  v1::SweepEvent result;
  result.set_run_id("r-9");
  *result.mutable_result() = sample.cases(0);
  collector.OnEvent(result);
  *result.mutable_result() = sample.cases(2);
  collector.OnEvent(result);
  EXPECT_FALSE(collector.has_summary());
  EXPECT_EQ(collector.Result().cases_size(), 2);
  EXPECT_EQ(collector.Result().run_id(), "r-9");

  v1::SweepEvent summary;
  summary.set_run_id("r-9");
  *summary.mutable_summary() = sample;
  collector.OnEvent(summary);
  ASSERT_TRUE(collector.has_summary());
  EXPECT_EQ(collector.Result().cases_size(), 4);

  EXPECT_EQ(err.str(),
            "run r-9\n"
            "queued: 2 run(s) ahead\n"
            "running\n"
            "[1/2] lamport eager m=64 n=7168: OK 12.3 us\n"
            "[2/2] one_stage eager m=1 n=7168: HANG: rank 1 waited for rank 0 in start_sync\n");
}

TEST(SweepCollectorTest, UsesExpectedTotalUntilTheServerSendsOne) {
  std::ostringstream err;
  SweepCollector collector(&err, 6);
  v1::SweepEvent result;
  *result.mutable_result() = testing::MakeCase(v1::VARIANT_NCCL, v1::CASE_STATUS_UNSUPPORTED);
  collector.OnEvent(result);
  EXPECT_THAT(err.str(), HasSubstr("[1/6] nccl eager m=1 n=7168: UNSUPPORTED"));
}

}  // namespace
}  // namespace colltest::client
