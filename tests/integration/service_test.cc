// colltestd end to end on the cpu backend: real daemon, real worker processes, real shared
// memory, through the public gRPC API.
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "tests/integration/daemon.h"

namespace colltest::testing {
namespace {

using colltest::v1::CaseResult;
using colltest::v1::RunRequest;
using colltest::v1::RunResult;
using colltest::v1::SweepSpec;

const std::vector<colltest::v1::Variant> kAllVariants = {colltest::v1::VARIANT_ONE_STAGE,
                                                         colltest::v1::VARIANT_TWO_KERNEL,
                                                         colltest::v1::VARIANT_LAMPORT,
                                                         colltest::v1::VARIANT_LAMPORT_TB,
                                                         colltest::v1::VARIANT_LAMPORT_TWO_SHOT,
                                                         colltest::v1::VARIANT_NCCL,
                                                         colltest::v1::VARIANT_AUTO};

bool IsGpuOnly(colltest::v1::Variant v) {
  return v == colltest::v1::VARIANT_NCCL || v == colltest::v1::VARIANT_AUTO;
}

SweepSpec Spec(uint32_t world, std::vector<uint32_t> m, std::vector<uint32_t> n,
               colltest::v1::Pattern pattern,
               std::vector<colltest::v1::Variant> variants = kAllVariants) {
  SweepSpec s;
  s.set_world_size(world);
  for (uint32_t x : m) s.add_m(x);
  for (uint32_t x : n) s.add_n(x);
  for (auto v : variants) s.add_variants(v);
  s.add_modes(colltest::v1::MODE_EAGER);
  s.set_pattern(pattern);
  s.set_warmup(1);
  s.set_iters(3);
  s.set_seed(7);
  return s;
}

absl::StatusOr<RunResult> RunSweep(const Daemon& d, const SweepSpec& spec) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(10));
  RunRequest req;
  *req.mutable_spec() = spec;
  RunResult res;
  grpc::Status s = d.Stub()->Run(&ctx, req, &res);
  if (!s.ok())
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
  return res;
}

// Every case OK with zero mismatches, except GPU-only variants, which must say UNSUPPORTED.
void ExpectAllPass(const RunResult& r) {
  ASSERT_GT(r.cases_size(), 0);
  for (const CaseResult& c : r.cases()) {
    const std::string what = c.ShortDebugString().substr(0, 160);
    if (IsGpuOnly(c.variant())) {
      EXPECT_EQ(c.status(), colltest::v1::CASE_STATUS_UNSUPPORTED) << what;
      EXPECT_FALSE(c.message().empty());
      continue;
    }
    EXPECT_EQ(c.status(), colltest::v1::CASE_STATUS_OK) << what << " " << c.message();
    EXPECT_EQ(c.diff().mismatches(), 0u) << what << " " << c.diff().first_bad();
    EXPECT_GT(c.diff().checked(), 0u) << what;
    EXPECT_EQ(c.ranks_size(), static_cast<int>(c.world_size()));
  }
}

class Integration : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    daemon_ = Daemon::Start(8).release();
    ASSERT_NE(daemon_, nullptr) << "colltestd did not start";
  }
  static void TearDownTestSuite() {
    const pid_t pid = daemon_->pid();
    const int status = daemon_->Stop();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
    // Nothing left behind: no worker process, no shared memory.
    EXPECT_TRUE(daemon_->WorkerPids().empty());
    EXPECT_TRUE(daemon_->ShmSegments().empty()) << "leftover segments of " << pid;
    delete daemon_;
    daemon_ = nullptr;
  }
  static Daemon* daemon_;
};
Daemon* Integration::daemon_ = nullptr;

class Matrix : public Integration, public ::testing::WithParamInterface<uint32_t> {};

TEST_P(Matrix, EveryVariantShapeAndPattern) {
  const uint32_t world = GetParam();
  for (auto pattern : {colltest::v1::PATTERN_INTEGERS, colltest::v1::PATTERN_NORMAL}) {
    SweepSpec spec = Spec(world, {1, 3, 64, 257}, {128, 7168}, pattern);
    // 8 ranks of 2 threads on a 2-core machine, with the default timeout: the host deadline
    // measures progress (server/workers/case_deadline.h), so a busy machine makes the case
    // slower, not a HANG.
    auto r = RunSweep(*daemon_, spec);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->cases_size(), 4 * 2 * 7);
    ExpectAllPass(*r);
  }
}

INSTANTIATE_TEST_SUITE_P(Worlds, Matrix, ::testing::Values(2u, 4u, 8u));

TEST_F(Integration, SweepChangesShapeBetweenCases) {
  // The stale-staging scenario: two_kernel stages through the general region between Lamport
  // cases of other shapes; a Lamport variant sharing it would read stale data as arrived.
  const std::vector<colltest::v1::Variant> order = {
      colltest::v1::VARIANT_TWO_KERNEL, colltest::v1::VARIANT_LAMPORT,
      colltest::v1::VARIANT_ONE_STAGE, colltest::v1::VARIANT_LAMPORT_TB};
  auto r = RunSweep(
      *daemon_, Spec(4, {64, 3, 257, 1, 17}, {7168, 128}, colltest::v1::PATTERN_INTEGERS, order));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->cases_size(), 5 * 2 * 4);
  ExpectAllPass(*r);
}

TEST_F(Integration, StressTwoThousandCallsPerLamportVariant) {
  auto spec = Spec(4, {16}, {1024}, colltest::v1::PATTERN_NEG_ZERO,
                   {colltest::v1::VARIANT_LAMPORT, colltest::v1::VARIANT_LAMPORT_TB});
  spec.set_stress_calls(2000);
  auto r = RunSweep(*daemon_, spec);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectAllPass(*r);
  for (const CaseResult& c : r->cases()) {
    for (const auto& rank : c.ranks()) EXPECT_GE(rank.calls(), 2000u) << c.ShortDebugString();
  }
}

struct BadField {
  const char* field;
  std::function<void(SweepSpec*)> spoil;
};

TEST_F(Integration, BadInputIsRefusedNamingTheFieldAndServingGoesOn) {
  const std::vector<BadField> bad = {
      {"n", [](SweepSpec* s) { s->set_n(0, 7); }},
      {"n", [](SweepSpec* s) { s->set_n(0, 32768); }},
      {"m", [](SweepSpec* s) { s->set_m(0, 0); }},
      {"world", [](SweepSpec* s) { s->set_world_size(64); }},
      {"world", [](SweepSpec* s) { s->set_world_size(1); }},
      {"devices",
       [](SweepSpec* s) {
         s->add_devices(0);
         s->add_devices(0);
         s->set_world_size(0);
       }},
      {"dtype", [](SweepSpec* s) { s->set_dtype(static_cast<colltest::v1::DType>(42)); }},
      {"variants", [](SweepSpec* s) { s->add_variants(static_cast<colltest::v1::Variant>(42)); }},
      {"variants", [](SweepSpec* s) { s->clear_variants(); }},
      {"modes", [](SweepSpec* s) { s->add_modes(static_cast<colltest::v1::Mode>(42)); }},
      {"pattern", [](SweepSpec* s) { s->set_pattern(static_cast<colltest::v1::Pattern>(42)); }},
      {"tolerance",
       [](SweepSpec* s) { s->set_tolerance(static_cast<colltest::v1::Tolerance>(42)); }},
      {"iters", [](SweepSpec* s) { s->set_iters(100000000); }},
      {"stress", [](SweepSpec* s) { s->set_stress_calls(100000000); }},
      {"timeout", [](SweepSpec* s) { s->set_timeout_ms(100000000); }},
      {"bytes",
       [](SweepSpec* s) {
         s->set_m(0, 60000);
         s->set_n(0, 16384);
       }},
  };
  for (const BadField& b : bad) {
    SweepSpec spec =
        Spec(2, {4}, {128}, colltest::v1::PATTERN_INTEGERS, {colltest::v1::VARIANT_ONE_STAGE});
    b.spoil(&spec);
    auto r = RunSweep(*daemon_, spec);
    ASSERT_FALSE(r.ok()) << b.field << " accepted: " << spec.ShortDebugString();
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    EXPECT_NE(r.status().message().find(b.field), std::string::npos)
        << "message does not name '" << b.field << "': " << r.status().message();
  }
  // Fault injection is off unless the daemon allows it.
  SweepSpec spec =
      Spec(2, {4}, {128}, colltest::v1::PATTERN_INTEGERS, {colltest::v1::VARIANT_ONE_STAGE});
  spec.set_fault("missing_rank:1");
  auto refused = RunSweep(*daemon_, spec);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("fault"), std::string::npos);
  // And the server keeps serving.
  auto ok = RunSweep(*daemon_, Spec(2, {4}, {128}, colltest::v1::PATTERN_INTEGERS,
                                    {colltest::v1::VARIANT_LAMPORT}));
  ASSERT_TRUE(ok.ok()) << ok.status();
  ExpectAllPass(*ok);
}

TEST_F(Integration, HistoryKeepsRuns) {
  auto r = RunSweep(*daemon_, Spec(2, {2}, {128}, colltest::v1::PATTERN_INTEGERS,
                                   {colltest::v1::VARIANT_ONE_STAGE}));
  ASSERT_TRUE(r.ok());
  grpc::ClientContext ctx;
  colltest::v1::GetRunRequest get;
  get.set_run_id(r->run_id());
  RunResult again;
  ASSERT_TRUE(daemon_->Stub()->GetRun(&ctx, get, &again).ok());
  EXPECT_EQ(again.cases_size(), r->cases_size());
  EXPECT_EQ(again.state(), colltest::v1::RUN_STATE_DONE);
}

// CPU time (clock ticks) a process has used.
long CpuTicks(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::istringstream rest(all.substr(all.rfind(')') + 2));
  std::string field;
  long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stol(field);
    if (i == 15) stime = std::stol(field);
  }
  return utime + stime;
}

// An idle worker uses no CPU; one that has burnt 50 ms more than at the start is running a case.
bool WaitUntilBusy(pid_t pid) {
  const long start = CpuTicks(pid);
  for (int i = 0; i < 3000; ++i) {
    if (CpuTicks(pid) >= start + 5) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// A worker killed in the middle of a sweep: that case is ERROR naming the rank, later cases and
// requests run on a respawned group, and shutdown leaves nothing behind.
TEST(IntegrationCrash, KilledWorkerIsReportedAndReplaced) {
  auto d = Daemon::Start(4);
  ASSERT_NE(d, nullptr);
  // Bring the group up so there are workers to kill.
  ASSERT_TRUE(RunSweep(*d, Spec(4, {1}, {128}, colltest::v1::PATTERN_INTEGERS,
                                {colltest::v1::VARIANT_ONE_STAGE}))
                  .ok());
  const std::vector<pid_t> before = d->WorkerPids();
  ASSERT_EQ(before.size(), 4u);
  const pid_t victim = d->WorkerPidForDevice(2);  // rank 2 of the group on devices 0..3
  ASSERT_GT(victim, 0);

  SweepSpec spec = Spec(4, {64}, {1024}, colltest::v1::PATTERN_INTEGERS,
                        {colltest::v1::VARIANT_LAMPORT, colltest::v1::VARIANT_ONE_STAGE});
  spec.set_stress_calls(1500);  // long enough to be killed in the middle
  grpc::ClientContext ctx;
  RunRequest req;
  *req.mutable_spec() = spec;
  auto stub = d->Stub();
  auto stream = stub->Sweep(&ctx, req);
  colltest::v1::SweepEvent ev;
  bool killed = false;
  std::vector<CaseResult> results;
  while (stream->Read(&ev)) {
    if (ev.has_progress() && ev.progress().state() == colltest::v1::RUN_STATE_RUNNING && !killed) {
      // The run started; once the worker is computing, the first case is in flight: kill it then.
      ASSERT_TRUE(WaitUntilBusy(victim));
      killed = true;
      ASSERT_EQ(kill(victim, SIGKILL), 0);
    }
    if (ev.has_result()) results.push_back(ev.result());
  }
  ASSERT_TRUE(stream->Finish().ok());
  ASSERT_TRUE(killed);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].status(), colltest::v1::CASE_STATUS_ERROR) << results[0].ShortDebugString();
  EXPECT_NE(results[0].message().find("rank 2 (pid " + std::to_string(victim) + ") died"),
            std::string::npos)
      << results[0].message();
  EXPECT_EQ(results[1].status(), colltest::v1::CASE_STATUS_OK) << results[1].message();

  auto next = RunSweep(
      *d, Spec(4, {8}, {256}, colltest::v1::PATTERN_INTEGERS, {colltest::v1::VARIANT_LAMPORT}));
  ASSERT_TRUE(next.ok()) << next.status();
  ExpectAllPass(*next);
  const std::vector<pid_t> after = d->WorkerPids();
  EXPECT_EQ(after.size(), 4u);
  for (pid_t p : before)
    EXPECT_EQ(std::count(after.begin(), after.end(), p), 0) << "old worker " << p;

  EXPECT_EQ(d->Stop(), 0);
  EXPECT_TRUE(d->WorkerPids().empty());
  EXPECT_TRUE(d->ShmSegments().empty());
  for (pid_t p : before) EXPECT_NE(kill(p, 0), 0) << "worker " << p << " still exists";
  for (pid_t p : after) EXPECT_NE(kill(p, 0), 0) << "worker " << p << " still exists";
}

// The test-only protocol switch reaches the test build of the worker through the daemon's
// environment, and a broken rule shows as a failed case, not a pass or a stuck test.
TEST(IntegrationMutation, BrokenReArmIsCaughtEndToEnd) {
  auto d = Daemon::Start(4, {"--worker", BreaksWorkerPath()}, {"COLLTEST_BREAK_PROTOCOL=rearm"});
  ASSERT_NE(d, nullptr);
  auto r = RunSweep(
      *d, Spec(4, {16}, {256}, colltest::v1::PATTERN_INTEGERS, {colltest::v1::VARIANT_LAMPORT}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->cases(0).status(), colltest::v1::CASE_STATUS_WRONG)
      << r->cases(0).ShortDebugString();
}

// The production colltest-worker has no protocol switches: the same environment that breaks the
// test build leaves its case correct.
TEST(IntegrationMutation, ProductionWorkerIgnoresTheBreakSwitch) {
  auto d = Daemon::Start(4, {}, {"COLLTEST_BREAK_PROTOCOL=rearm"});
  ASSERT_NE(d, nullptr);
  auto r = RunSweep(
      *d, Spec(4, {16}, {256}, colltest::v1::PATTERN_INTEGERS, {colltest::v1::VARIANT_LAMPORT}));
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectAllPass(*r);
}

// One lamport case at W = 2 on a daemon started with a standing test fault in its environment and
// `flags` (the worker it runs).
absl::StatusOr<RunResult> RunUnderStandingTestFault(std::vector<std::string> flags) {
  auto d = Daemon::Start(2, std::move(flags), {"COLLTEST_TEST_FAULT=missing_rank:1"});
  if (d == nullptr) return absl::InternalError("colltestd did not start");
  SweepSpec spec =
      Spec(2, {16}, {256}, colltest::v1::PATTERN_INTEGERS, {colltest::v1::VARIANT_LAMPORT});
  spec.set_timeout_ms(1000);
  return RunSweep(*d, spec);
}

// A standing fault from the daemon's environment reaches the test build of the worker: every
// case without a fault of its own gets it, though the daemon allows no fault injection.
TEST(IntegrationMutation, StandingTestFaultBreaksTheTestWorker) {
  auto r = RunUnderStandingTestFault({"--worker", BreaksWorkerPath()});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->cases_size(), 1);
  EXPECT_EQ(r->cases(0).status(), colltest::v1::CASE_STATUS_HANG) << r->cases(0).ShortDebugString();
}

// The production colltest-worker takes no fault from its environment: the same environment that
// breaks the test build leaves its case correct.
TEST(IntegrationMutation, ProductionWorkerIgnoresTheStandingTestFault) {
  auto r = RunUnderStandingTestFault({});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectAllPass(*r);
}

}  // namespace
}  // namespace colltest::testing
