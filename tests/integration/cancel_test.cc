// Every long wait has an owner and an end, through a real colltestd (cpu backend, 4 ranks): a
// running case of 100,000 calls stops within max(timeout, 1 s) + 1 s of a Cancel, of its client
// going away, or of SIGTERM; SIGTERM answers queued runs UNAVAILABLE and exits within 10 s; after
// SIGKILL the workers remove their own segments and the next start removes the runtime directory.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/integration/daemon.h"

namespace colltest::testing {
namespace {

namespace v1 = ::colltest::v1;

// The case of the report: hours of Lamport calls at W = 4 unless something stops it.
v1::RunRequest EndlessCase(uint32_t timeout_ms = 2000) {
  v1::RunRequest req;
  v1::SweepSpec* s = req.mutable_spec();
  s->set_world_size(4);
  s->add_m(64);
  s->add_n(4096);
  s->add_variants(v1::VARIANT_LAMPORT);
  s->set_iters(100000);
  s->set_timeout_ms(timeout_ms);
  s->set_label("endless");
  return req;
}

v1::RunRequest SmallCase() {
  v1::RunRequest req = LamportRun(4, 8, 256);
  req.mutable_spec()->set_warmup(1);
  req.mutable_spec()->set_iters(3);
  return req;
}

std::unique_ptr<grpc::ClientContext> Context(int seconds = 30) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
  return ctx;
}

// The newest run with `label`, once one is RUNNING (waits up to 20 s).
std::string WaitUntilRunning(const Daemon& daemon, const std::string& label) {
  const absl::Time give_up = absl::Now() + absl::Seconds(20);
  while (absl::Now() < give_up) {
    v1::ListRunsResponse runs;
    if (daemon.Stub()->ListRuns(Context().get(), v1::ListRunsRequest(), &runs).ok()) {
      for (const v1::RunSummary& r : runs.runs()) {
        if (r.label() == label && r.state() == v1::RUN_STATE_RUNNING) return r.run_id();
      }
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return "";
}

// Polls GetRun until the run leaves RUNNING; returns its final state and when it got there.
v1::RunResult WaitUntilFinished(const Daemon& daemon, const std::string& id, absl::Duration limit) {
  const absl::Time give_up = absl::Now() + limit;
  v1::GetRunRequest get;
  get.set_run_id(id);
  v1::RunResult run;
  while (absl::Now() < give_up) {
    if (daemon.Stub()->GetRun(Context().get(), get, &run).ok() &&
        run.state() != v1::RUN_STATE_RUNNING && run.state() != v1::RUN_STATE_QUEUED) {
      return run;
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  return run;
}

// The case's stop bound from the issue: max(timeout, 1 s) + 1 s.
absl::Duration StopBound(uint32_t timeout_ms) {
  return std::max(absl::Milliseconds(timeout_ms), absl::Seconds(1)) + absl::Seconds(1);
}

TEST(CancelTest, CancelStopsARunningCaseOfAHundredThousandCalls) {
  auto daemon = Daemon::Start(4);
  v1::RunResult endless;
  grpc::Status endless_status;
  std::thread runner(
      [&] { endless_status = daemon->Stub()->Run(Context(120).get(), EndlessCase(), &endless); });
  const std::string id = WaitUntilRunning(*daemon, "endless");
  ASSERT_FALSE(id.empty());
  absl::SleepFor(absl::Milliseconds(300));  // well inside the case's calls

  v1::CancelRequest cancel;
  cancel.set_run_id(id);
  v1::CancelResponse cancelled;
  const absl::Time asked = absl::Now();
  ASSERT_TRUE(daemon->Stub()->Cancel(Context().get(), cancel, &cancelled).ok());
  EXPECT_EQ(cancelled.state(), v1::RUN_STATE_RUNNING);
  const v1::RunResult run = WaitUntilFinished(*daemon, id, absl::Seconds(30));
  const absl::Duration took = absl::Now() - asked;
  std::printf("[ cancel ] Cancel -> CANCELLED in %.0f ms\n", absl::ToDoubleMilliseconds(took));
  EXPECT_EQ(run.state(), v1::RUN_STATE_CANCELLED) << run.message();
  EXPECT_LT(took, StopBound(2000));
  EXPECT_EQ(run.cases_size(), 0) << "the stopped case has no verdict";
  EXPECT_TRUE(absl::StrContains(run.message(), "cancelled by request")) << run.message();
  runner.join();
  EXPECT_TRUE(endless_status.ok()) << endless_status.error_message();
  EXPECT_EQ(endless.state(), v1::RUN_STATE_CANCELLED);

  // The devices are free and the group serves: the next run on them is OK.
  v1::RunResult next;
  ASSERT_TRUE(daemon->Stub()->Run(Context().get(), SmallCase(), &next).ok());
  ASSERT_EQ(next.cases_size(), 1);
  EXPECT_EQ(next.cases(0).status(), v1::CASE_STATUS_OK) << next.cases(0).message();
}

TEST(CancelTest, ClientThatGoesAwayStopsItsRunningCase) {
  auto daemon = Daemon::Start(4);
  std::thread runner([&] {
    // The client gives up after 1.5 s, as a CI job that is killed would.
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(1500));
    v1::RunResult ignored;
    (void)daemon->Stub()->Run(ctx.get(), EndlessCase(), &ignored);
  });
  const std::string id = WaitUntilRunning(*daemon, "endless");
  ASSERT_FALSE(id.empty());
  runner.join();  // the client is gone now
  const absl::Time gone = absl::Now();
  const v1::RunResult run = WaitUntilFinished(*daemon, id, absl::Seconds(30));
  const absl::Duration took = absl::Now() - gone;
  std::printf("[ cancel ] client gone -> CANCELLED in %.0f ms\n", absl::ToDoubleMilliseconds(took));
  EXPECT_EQ(run.state(), v1::RUN_STATE_CANCELLED) << run.message();
  EXPECT_TRUE(absl::StrContains(run.message(), "the client went away")) << run.message();
  EXPECT_LT(took, StopBound(2000));
}

TEST(CancelTest, SigtermStopsTheRunningCaseRefusesQueuedRunsAndLeavesNothing) {
  auto daemon = Daemon::Start(4);
  const std::vector<std::string> before = daemon->ShmSegments();
  grpc::Status running_status, queued_status;
  v1::RunResult running, queued;
  std::thread runner(
      [&] { running_status = daemon->Stub()->Run(Context(120).get(), EndlessCase(), &running); });
  ASSERT_FALSE(WaitUntilRunning(*daemon, "endless").empty());
  std::thread waiter(
      [&] { queued_status = daemon->Stub()->Run(Context(120).get(), SmallCase(), &queued); });
  absl::SleepFor(absl::Milliseconds(300));  // queued behind the endless run
  const std::vector<pid_t> workers = daemon->WorkerPids();
  EXPECT_EQ(workers.size(), 4u);

  const absl::Time asked = absl::Now();
  kill(daemon->pid(), SIGTERM);
  const int status = daemon->Stop();
  const absl::Duration took = absl::Now() - asked;
  std::printf("[ cancel ] SIGTERM -> exit in %.0f ms\n", absl::ToDoubleMilliseconds(took));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_LT(took, absl::Seconds(10));
  runner.join();
  waiter.join();
  EXPECT_EQ(queued_status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << queued_status.error_message();
  EXPECT_TRUE(absl::StrContains(queued_status.error_message(), "shutting down"))
      << queued_status.error_message();
  if (running_status.ok()) {
    EXPECT_EQ(running.state(), v1::RUN_STATE_CANCELLED);
  }
  for (pid_t pid : workers) EXPECT_NE(kill(pid, 0), 0) << "worker " << pid << " outlived colltestd";
  EXPECT_TRUE(daemon->ShmSegments().empty());
}

std::vector<std::string> ListDir(const std::string& path) {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(path, error)) {
    names.push_back(entry.path().filename().string());
  }
  return names;
}

TEST(CancelTest, AfterSigkillWorkersRemoveTheirSegmentsAndTheNextStartTheDirectory) {
  std::string parent = ::testing::TempDir() + "cancel_test.XXXXXX";
  ASSERT_NE(mkdtemp(parent.data()), nullptr);
  auto daemon = Daemon::Start(4, {"--runtime-dir", parent});
  v1::RunResult run;
  ASSERT_TRUE(daemon->Stub()->Run(Context().get(), SmallCase(), &run).ok());
  const std::vector<std::string> segments = daemon->ShmSegments();
  const std::vector<pid_t> workers = daemon->WorkerPids();
  ASSERT_FALSE(segments.empty());
  ASSERT_EQ(workers.size(), 4u);
  ASSERT_EQ(ListDir(parent).size(), 1u);

  const absl::Time killed = absl::Now();
  kill(daemon->pid(), SIGKILL);
  daemon->Stop();  // reaps it
  // Workers learn of it (PR_SET_PDEATHSIG) and leave, unlinking their segments first.
  bool clean = false;
  while (!clean && absl::Now() - killed < absl::Seconds(5)) {
    clean = true;
    for (const std::string& name : segments) {
      clean = clean && !std::filesystem::exists("/dev/shm/" + name);
    }
    for (pid_t pid : workers) clean = clean && kill(pid, 0) != 0;
    if (!clean) absl::SleepFor(absl::Milliseconds(20));
  }
  std::printf("[ cancel ] SIGKILL -> workers gone, segments unlinked in %.0f ms\n",
              absl::ToDoubleMilliseconds(absl::Now() - killed));
  EXPECT_TRUE(clean) << "a worker or a segment outlived its SIGKILLed controller";
  const std::vector<std::string> left = ListDir(parent);
  ASSERT_EQ(left.size(), 1u) << "the dead controller's directory stays until the next start";

  auto next = Daemon::Start(4, {"--runtime-dir", parent});
  const std::vector<std::string> now = ListDir(parent);
  ASSERT_EQ(now.size(), 1u);
  EXPECT_NE(now[0], left[0]) << "the dead controller's runtime directory was not removed";
  next.reset();
  EXPECT_TRUE(ListDir(parent).empty());
  std::filesystem::remove_all(parent);
}

}  // namespace
}  // namespace colltest::testing
