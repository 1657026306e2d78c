// colltestd as a good neighbour on a node that runs jobs (docs/neighbours.md), through a real
// daemon on the cpu backend: idle workers exit and come back for the next run; a health check
// does not wait behind another client's sweep, which still finishes every case; a recent verdict
// is answered from memory; a check that cannot start before its deadline answers busy with the
// last verdict.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/daemon.h"

namespace colltest::testing {
namespace {

namespace v1 = ::colltest::v1;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

grpc::Status CallHealth(const Daemon& daemon, const v1::HealthRequest& request,
                        v1::HealthResponse* response, int deadline_s = 120) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(deadline_s));
  return daemon.Stub()->Health(&ctx, request, response);
}

grpc::Status CallRun(const Daemon& daemon, const v1::RunRequest& request, v1::RunResult* result) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
  return daemon.Stub()->Run(&ctx, request, result);
}

v1::HealthRequest HealthOf(std::vector<uint32_t> devices) {
  v1::HealthRequest request;
  for (uint32_t d : devices) request.add_devices(d);
  return request;
}

// Waits (bounded) until some run is in `state`; returns its id, "" if none showed up.
std::string RunIn(const Daemon& daemon, v1::RunState state) {
  for (int i = 0; i < 3000; ++i) {
    grpc::ClientContext ctx;
    v1::ListRunsResponse runs;
    if (daemon.Stub()->ListRuns(&ctx, v1::ListRunsRequest(), &runs).ok()) {
      for (const auto& r : runs.runs()) {
        if (r.state() == state) return r.run_id();
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return "";
}

size_t RunCount(const Daemon& daemon) {
  grpc::ClientContext ctx;
  v1::ListRunsResponse runs;
  EXPECT_TRUE(daemon.Stub()->ListRuns(&ctx, v1::ListRunsRequest(), &runs).ok());
  return static_cast<size_t>(runs.runs_size());
}

TEST(Neighbour, IdleWorkersExitAndTheNextRunStartsThemAgain) {
  auto daemon = Daemon::Start(2, {"--idle-timeout", "1s"});
  ASSERT_NE(daemon, nullptr);
  v1::RunResult run;
  Clock::time_point t0 = Clock::now();
  ASSERT_TRUE(CallRun(*daemon, LamportRun(2, 4, 256), &run).ok());
  const double cold = SecondsSince(t0);
  ASSERT_EQ(run.state(), v1::RUN_STATE_DONE) << run.message();
  t0 = Clock::now();
  ASSERT_TRUE(CallRun(*daemon, LamportRun(2, 4, 256), &run).ok());
  const double warm = SecondsSince(t0);
  const std::vector<pid_t> workers = daemon->WorkerPids();
  EXPECT_EQ(workers.size(), 2u);

  // Gone (and reaped: no zombie child) within the timeout plus a little.
  t0 = Clock::now();
  while ((!daemon->WorkerPids().empty() || !daemon->ChildPids().empty()) && SecondsSince(t0) < 10) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_LT(SecondsSince(t0), 3.0);
  EXPECT_TRUE(daemon->ChildPids().empty());
  EXPECT_TRUE(daemon->ShmSegments().empty());

  t0 = Clock::now();
  ASSERT_TRUE(CallRun(*daemon, LamportRun(2, 4, 256), &run).ok());
  const double respawned = SecondsSince(t0);
  EXPECT_EQ(run.state(), v1::RUN_STATE_DONE) << run.message();
  EXPECT_EQ(run.cases(0).status(), v1::CASE_STATUS_OK) << run.cases(0).message();
  const std::vector<pid_t> again = daemon->WorkerPids();
  EXPECT_EQ(again.size(), 2u);
  for (pid_t pid : again) EXPECT_THAT(workers, ::testing::Not(::testing::Contains(pid)));
  // The cost of an idle exit is the difference: printed for docs/neighbours.md.
  std::printf("run on new workers %.3f s, on warm workers %.3f s, after an idle exit %.3f s\n",
              cold, warm, respawned);

  grpc::ClientContext ctx;
  v1::ListDevicesResponse devices;
  ASSERT_TRUE(daemon->Stub()->ListDevices(&ctx, v1::ListDevicesRequest(), &devices).ok());
  ASSERT_EQ(devices.groups_size(), 1);
  EXPECT_EQ(devices.groups(0).state(), v1::GROUP_STATE_SERVING) << devices.groups(0).message();
  EXPECT_EQ(devices.groups(0).recoveries(), 0u);
}

// Many short cases, each made about 0.3 s long by a planted delay of 0.1 s per call.
v1::SweepSpec LongSweep(uint32_t cases) {
  v1::SweepSpec spec;
  spec.set_world_size(2);
  for (uint32_t m = 1; m <= cases; ++m) spec.add_m(m);
  spec.add_n(256);
  spec.add_variants(v1::VARIANT_LAMPORT);
  spec.set_pattern(v1::PATTERN_INTEGERS);
  spec.set_warmup(1);
  spec.set_iters(2);
  spec.set_fault("delay_rank:0:100000");
  return spec;
}

TEST(Neighbour, HealthIsAnsweredBetweenTwoCasesOfAnotherClientsSweep) {
  auto daemon = Daemon::Start(2, {"--allow-fault-injection"});
  ASSERT_NE(daemon, nullptr);
  v1::HealthResponse alone;
  Clock::time_point t0 = Clock::now();
  ASSERT_TRUE(CallHealth(*daemon, HealthOf({0, 1}), &alone).ok());
  const double health_alone = SecondsSince(t0);
  ASSERT_EQ(alone.status(), v1::CASE_STATUS_OK) << alone.message();

  constexpr uint32_t kCases = 30;
  v1::RunRequest request;
  *request.mutable_spec() = LongSweep(kCases);
  grpc::ClientContext sweep_ctx;
  sweep_ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(300));
  auto sweep_stub = daemon->Stub();
  auto reader = sweep_stub->Sweep(&sweep_ctx, request);
  v1::SweepEvent event;
  double longest_case = 0;
  // Under way: its first case is done.
  while (reader->Read(&event) && !event.has_result()) {
  }
  ASSERT_TRUE(event.has_result());
  longest_case = event.result().wall_ms() / 1000.0;

  v1::HealthResponse health;
  grpc::Status health_status;
  double health_during = 0;
  std::atomic<bool> health_done{false};
  std::thread checker([&] {
    const Clock::time_point start = Clock::now();
    health_status = CallHealth(*daemon, HealthOf({0, 1}), &health);
    health_during = SecondsSince(start);
    health_done = true;
  });
  v1::RunResult summary;
  uint32_t cases_before_verdict = 1;
  while (reader->Read(&event)) {
    if (event.has_result()) {
      longest_case = std::max(longest_case, event.result().wall_ms() / 1000.0);
      if (!health_done.load()) ++cases_before_verdict;
    }
    if (event.has_summary()) summary = event.summary();
  }
  const grpc::Status sweep_status = reader->Finish();
  checker.join();

  ASSERT_TRUE(health_status.ok()) << health_status.error_message();
  EXPECT_EQ(health.status(), v1::CASE_STATUS_OK) << health.message();
  EXPECT_FALSE(health.busy());
  std::printf("health alone %.2f s, during the sweep %.2f s; longest sweep case %.2f s\n",
              health_alone, health_during, longest_case);
  // Its own duration plus the case it found running, with room for a loaded 2-core machine; the
  // rest of the sweep (about 8 s) is far more.
  EXPECT_LT(health_during, health_alone + longest_case + 3.0);
  // However loaded the machine: the sweep stood still while the check ran, so the verdict came
  // after the case that was running when it asked (one more when its answer is read late).
  EXPECT_LE(cases_before_verdict, 4u);

  ASSERT_TRUE(sweep_status.ok()) << sweep_status.error_message();
  EXPECT_EQ(summary.state(), v1::RUN_STATE_DONE) << summary.message();
  EXPECT_EQ(summary.cases_size(), static_cast<int>(kCases));
  for (const v1::CaseResult& c : summary.cases()) {
    EXPECT_EQ(c.status(), v1::CASE_STATUS_OK) << c.message();
  }
}

TEST(Neighbour, RecentVerdictIsAnsweredWithoutRunningAnything) {
  auto daemon = Daemon::Start(2);
  ASSERT_NE(daemon, nullptr);
  v1::HealthResponse fresh;
  ASSERT_TRUE(CallHealth(*daemon, {}, &fresh).ok());
  EXPECT_FALSE(fresh.cached());
  EXPECT_GT(fresh.verdict_unix_ms(), 0);
  EXPECT_FALSE(fresh.machine().hostname().empty());
  EXPECT_EQ(fresh.level(), v1::HEALTH_LEVEL_QUICK);
  const size_t runs = RunCount(*daemon);

  v1::HealthRequest periodic;
  periodic.set_max_verdict_age_ms(60000);
  v1::HealthResponse cached;
  ASSERT_TRUE(CallHealth(*daemon, periodic, &cached).ok());
  EXPECT_TRUE(cached.cached());
  EXPECT_EQ(cached.verdict_unix_ms(), fresh.verdict_unix_ms());
  EXPECT_EQ(cached.status(), fresh.status());
  EXPECT_EQ(cached.message(), fresh.message());
  EXPECT_EQ(cached.machine().key(), fresh.machine().key());
  EXPECT_EQ(RunCount(*daemon), runs) << "a cached verdict ran something";
}

TEST(Neighbour, CheckThatCannotStartBeforeItsDeadlineAnswersBusyWithTheLastVerdict) {
  auto daemon = Daemon::Start(2, {"--allow-fault-injection"});
  ASSERT_NE(daemon, nullptr);
  v1::HealthResponse last;
  ASSERT_TRUE(CallHealth(*daemon, {}, &last).ok());
  ASSERT_EQ(last.status(), v1::CASE_STATUS_OK) << last.message();

  // One case of three calls, each 1.5 s late on rank 0: a health check waits for it to end.
  v1::RunRequest request = LamportRun(2, 4, 256);
  request.mutable_spec()->set_warmup(1);
  request.mutable_spec()->set_iters(2);
  request.mutable_spec()->set_timeout_ms(10000);
  request.mutable_spec()->set_fault("delay_rank:0:1500000");
  v1::RunResult long_run;
  grpc::Status run_status;
  std::thread runner([&] { run_status = CallRun(*daemon, request, &long_run); });
  const std::string run_id = RunIn(*daemon, v1::RUN_STATE_RUNNING);
  ASSERT_FALSE(run_id.empty());

  v1::HealthResponse busy;
  const Clock::time_point t0 = Clock::now();
  const grpc::Status status = CallHealth(*daemon, {}, &busy, /*deadline_s=*/3);
  const double waited = SecondsSince(t0);
  runner.join();

  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_LT(waited, 2.9) << "answered after its deadline's margin";
  EXPECT_TRUE(busy.busy());
  EXPECT_THAT(busy.busy_reason(), HasSubstr("devices 0,1 busy with run " + run_id));
  EXPECT_EQ(busy.status(), v1::CASE_STATUS_OK);
  EXPECT_EQ(busy.message(), last.message());
  EXPECT_EQ(busy.verdict_unix_ms(), last.verdict_unix_ms());
  EXPECT_FALSE(busy.machine().hostname().empty());
  ASSERT_TRUE(run_status.ok()) << run_status.error_message();
  EXPECT_EQ(long_run.state(), v1::RUN_STATE_DONE) << long_run.message();
}

}  // namespace
}  // namespace colltest::testing
