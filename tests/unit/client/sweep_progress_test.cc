#include "client/commands/sweep_progress.h"

#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "client/commands/progress.h"
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

// A clock the test moves by hand, so that elapsed times and ETAs are exact.
struct FakeClock {
  absl::Time now = absl::FromUnixSeconds(1000);
  std::function<absl::Time()> Fn() {
    return [this] { return now; };
  }
};

v1::SweepEvent Progress(v1::RunState state, uint32_t total, uint32_t queue_position = 0) {
  v1::SweepEvent event;
  event.set_run_id("r-9");
  event.mutable_progress()->set_state(state);
  event.mutable_progress()->set_queue_position(queue_position);
  event.mutable_progress()->set_total(total);
  return event;
}

v1::SweepEvent Result(const v1::CaseResult& c) {
  v1::SweepEvent event;
  event.set_run_id("r-9");
  *event.mutable_result() = c;
  return event;
}

TEST(SweepCollectorTest, PrintsProgressAndKeepsTheSummary) {
  std::ostringstream err;
  FakeClock clock;
  SweepCollector collector(&err, 0, {.now = clock.Fn()});

  collector.OnEvent(Progress(v1::RUN_STATE_QUEUED, 2, 2));
  collector.OnEvent(Progress(v1::RUN_STATE_QUEUED, 2, 2));  // repeated: printed once
  clock.now += absl::Seconds(30);  // the wait in the queue counts for neither elapsed nor ETA
  collector.OnEvent(Progress(v1::RUN_STATE_RUNNING, 2));

  v1::RunResult sample = testing::SampleRun();
  clock.now += absl::Seconds(12.34);
  collector.OnEvent(Result(sample.cases(0)));
  clock.now += absl::Seconds(12.34);
  collector.OnEvent(Result(sample.cases(2)));
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
            "[1/2] lamport eager m=64 n=7168: OK 12.3 us (elapsed 12.3s, ETA 13s)\n"
            "[2/2] one_stage eager m=1 n=7168: HANG (elapsed 24.7s, ETA 0s): rank 1 waited for "
            "rank 0 in start_sync\n");
}

TEST(SweepCollectorTest, EtaIsTheAveragePaceTimesTheCasesLeft) {
  std::ostringstream err;
  FakeClock clock;
  SweepCollector collector(&err, 4, {.now = clock.Fn()});
  const v1::CaseResult c = testing::MakeCase(v1::VARIANT_LAMPORT, v1::CASE_STATUS_OK);
  clock.now += absl::Seconds(10);
  collector.OnEvent(Result(c));
  EXPECT_THAT(err.str(), HasSubstr("[1/4] lamport eager m=1 n=7168: OK (elapsed 10.0s, ETA 30s)"));
  clock.now += absl::Seconds(50);
  collector.OnEvent(Result(c));
  EXPECT_THAT(err.str(),
              HasSubstr("[2/4] lamport eager m=1 n=7168: OK (elapsed 1m00s, ETA 1m00s)"));
}

// A spec of `m` x {n 7168} x `variants` x {eager, graph}.
v1::SweepSpec EtaSpec(std::vector<uint32_t> m, std::vector<v1::Variant> variants) {
  v1::SweepSpec spec;
  spec.mutable_m()->Add(m.begin(), m.end());
  spec.add_n(7168);
  for (v1::Variant v : variants) spec.add_variants(v);
  spec.add_modes(v1::MODE_EAGER);
  spec.add_modes(v1::MODE_GRAPH);
  return spec;
}

// The cases of `spec` in the server's order (n, m, variant, mode), each taking `seconds(m)`.
void RunCases(SweepCollector& collector, FakeClock& clock, const v1::SweepSpec& spec, size_t count,
              const std::function<double(uint32_t m)>& seconds) {
  size_t done = 0;
  for (uint32_t m : spec.m()) {
    for (int v : spec.variants()) {
      for (int mode : spec.modes().empty()
                          ? std::vector<int>{v1::MODE_EAGER}
                          : std::vector<int>(spec.modes().begin(), spec.modes().end())) {
        if (done++ == count) return;
        v1::CaseResult c = testing::MakeCase(static_cast<v1::Variant>(v), v1::CASE_STATUS_OK);
        c.set_m(m);
        c.set_mode(static_cast<v1::Mode>(mode));
        clock.now += absl::Seconds(seconds(m));
        collector.OnEvent(Result(c));
      }
    }
  }
}

// The case lines of a sweep of `spec` the server says has `total` cases, after `count` of them.
std::string CaseLines(const v1::SweepSpec& spec, uint32_t total, size_t count,
                      const std::function<double(uint32_t m)>& seconds) {
  std::ostringstream err;
  FakeClock clock;
  SweepCollector collector(&err, total, {.now = clock.Fn(), .plan = spec});
  RunCases(collector, clock, spec, count, seconds);
  return err.str();
}

TEST(SweepCollectorTest, EtaWeighsTheRemainingCasesBySize) {
  // [4/8]: the four cases of m = 64 took 2 s each; the four left are m = 256, 4 x the elements.
  // Counting cases would say 8 s.
  const std::string lines =
      CaseLines(EtaSpec({64, 256}, {v1::VARIANT_LAMPORT, v1::VARIANT_ONE_STAGE}), 8, 4,
                [](uint32_t) { return 2.0; });
  EXPECT_THAT(lines, HasSubstr("[4/8] one_stage graph m=64 n=7168: OK (elapsed 8.0s, ETA 32s)"));
  EXPECT_THAT(lines, HasSubstr("[1/8] lamport eager m=64 n=7168: OK (elapsed 2.0s, ETA 38s)"));
}

TEST(SweepCollectorTest, EtaFitsAFixedCostAndACostPerElement) {
  // 1.1 s per case plus 0.5 s per row (the pace so far would say 8 s).
  const v1::SweepSpec spec = EtaSpec({1, 2, 4, 8}, {v1::VARIANT_LAMPORT});
  std::ostringstream err;
  FakeClock clock;
  SweepCollector collector(
      &err, 0, {.style = SweepProgressStyle::kStatusLine, .now = clock.Fn(), .plan = spec});
  collector.OnEvent(Progress(v1::RUN_STATE_RUNNING, 8));
  RunCases(collector, clock, spec, 4, [](uint32_t m) { return 1.1 + 0.5 * m; });
  // Eager and graph of m = 1 and 2 done (1.6 + 1.6 + 2.1 + 2.1 s); left: 2 x 3.1 s + 2 x 5.1 s.
  EXPECT_THAT(err.str(), HasSubstr("[4/8] 50% elapsed 7.4s ETA 17s"));
}

TEST(SweepCollectorTest, EtaTakesEachKernelsOwnPace) {
  // Eager only: lamport m = 64 (1 s), one_stage m = 64 (3 s), lamport m = 256 (4 s) done; left
  // one_stage m = 256. Every kernel's fit (2 s at 64 rows, 4 s at 256) scaled to one_stage's 3 s
  // at 64 rows says 6 s; one pace for both kernels would say 4 s.
  v1::SweepSpec spec = EtaSpec({64, 256}, {v1::VARIANT_LAMPORT, v1::VARIANT_ONE_STAGE});
  spec.clear_modes();
  const double seconds[] = {1, 3, 4};
  int call = 0;
  EXPECT_THAT(CaseLines(spec, 4, 3, [&](uint32_t) { return seconds[call++]; }),
              HasSubstr("[3/4] lamport eager m=256 n=7168: OK (elapsed 8.0s, ETA 6s)"));
}

TEST(SweepCollectorTest, EtaCountsCasesWhenThePlanIsNotTheServers) {
  // The server runs 6 cases where the spec expands to 8 (its own variants): the pace so far.
  EXPECT_THAT(CaseLines(EtaSpec({64, 256}, {v1::VARIANT_LAMPORT, v1::VARIANT_ONE_STAGE}), 6, 2,
                        [](uint32_t) { return 2.0; }),
              HasSubstr("[2/6] lamport graph m=64 n=7168: OK (elapsed 4.0s, ETA 8s)"));
}

TEST(SweepCollectorTest, UnknownTotalHasNoEta) {
  std::ostringstream err;
  FakeClock clock;
  SweepCollector collector(&err, 0, {.now = clock.Fn()});
  clock.now += absl::Seconds(1);
  collector.OnEvent(Result(testing::MakeCase(v1::VARIANT_LAMPORT, v1::CASE_STATUS_OK)));
  EXPECT_THAT(err.str(), HasSubstr("[1/?] lamport eager m=1 n=7168: OK (elapsed 1.0s, ETA ?)"));
}

TEST(SweepCollectorTest, OffPrintsNothingButStillCollects) {
  std::ostringstream err;
  SweepCollector collector(&err, 2, {.mode = ProgressMode::kOff});
  collector.OnEvent(Progress(v1::RUN_STATE_QUEUED, 2, 1));
  collector.OnEvent(Progress(v1::RUN_STATE_RUNNING, 2));
  collector.OnEvent(Result(testing::MakeCase(v1::VARIANT_LAMPORT, v1::CASE_STATUS_OK)));
  collector.Finish();
  EXPECT_EQ(err.str(), "");
  EXPECT_EQ(collector.Result().cases_size(), 1);
  EXPECT_EQ(collector.Result().run_id(), "r-9");
}

// `run` on a terminal: the run id stays on a line of its own, then one line is redrawn in place
// and ended with a newline when the stream ends.
TEST(SweepCollectorTest, StatusLineIsRedrawnInPlaceOnATerminal) {
  std::ostringstream err;
  FakeClock clock;
  SweepCollector collector(&err, 0,
                           {.mode = ProgressMode::kTerminal,
                            .style = SweepProgressStyle::kStatusLine,
                            .now = clock.Fn()});
  collector.OnEvent(Progress(v1::RUN_STATE_QUEUED, 4, 1));
  collector.OnEvent(Progress(v1::RUN_STATE_RUNNING, 4));
  const v1::CaseResult c = testing::MakeCase(v1::VARIANT_LAMPORT, v1::CASE_STATUS_OK);
  clock.now += absl::Seconds(4.1);
  collector.OnEvent(Result(c));
  clock.now += absl::Seconds(4.1);
  collector.OnEvent(Result(c));
  collector.Finish();
  EXPECT_EQ(err.str(),
            "run r-9\n"
            "\rqueued: 1 run(s) ahead"
            "\rrunning               "  // spaces over the rest of the longer line
            "\r[1/4] 25% elapsed 4.1s ETA 13s"
            "\r[2/4] 50% elapsed 8.2s ETA 9s "
            "\n");
}

// `run --progress` into a log: the same status, a line per update.
TEST(SweepCollectorTest, StatusLinesInALog) {
  std::ostringstream err;
  FakeClock clock;
  SweepCollector collector(&err, 2, {.style = SweepProgressStyle::kStatusLine, .now = clock.Fn()});
  collector.OnEvent(Progress(v1::RUN_STATE_RUNNING, 0));
  clock.now += absl::Seconds(2);
  collector.OnEvent(Result(testing::MakeCase(v1::VARIANT_LAMPORT, v1::CASE_STATUS_OK)));
  collector.Finish();
  EXPECT_EQ(err.str(), "run r-9\nrunning\n[1/2] 50% elapsed 2.0s ETA 2s\n");
}

TEST(RunStatusLineTest, CountsPercentElapsedAndEta) {
  EXPECT_EQ(RunStatusLine(3, 12, absl::Seconds(4.1)), "[3/12] 25% elapsed 4.1s ETA 13s");
  EXPECT_EQ(RunStatusLine(0, 12, absl::Seconds(1)), "[0/12] 0% elapsed 1.0s ETA ?");
  EXPECT_EQ(RunStatusLine(3, 0, absl::Seconds(4.1)), "[3/?] elapsed 4.1s ETA ?");
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
