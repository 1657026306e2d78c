// Fault injection through a real colltestd (cpu backend, 4 and 8 ranks): each fault gives the
// failure it names, the culprit is named, a hang is reported within timeout + 1 s, the group is
// back to SERVING (canary passed) within 3 s, and the next request runs.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdio>
#include <ostream>
#include <string>
#include <thread>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/integration/daemon.h"

namespace colltest::testing {
namespace {

struct Fault {
  const char* spec;
  colltest::v1::Variant variant;
  colltest::v1::Pattern pattern;
  colltest::v1::CaseStatus status;
  const char* culprit;  // text the case message must contain
  // Stale staging races with the peers' fresh stores: every call checked makes it certain.
  uint32_t stress_calls = 0;
};

// Keeps test logs readable: "missing_rank:1" instead of the bytes of the struct.
void PrintTo(const Fault& f, std::ostream* os) { *os << f.spec; }

colltest::v1::RunResult RunWithFault(const Daemon& daemon, const std::string& fault,
                                     colltest::v1::Variant variant, colltest::v1::Pattern pattern,
                                     grpc::Status* status, uint32_t stress_calls = 0,
                                     uint32_t world = 4) {
  colltest::v1::RunRequest req;
  auto* s = req.mutable_spec();
  s->set_world_size(world);
  s->add_m(8);
  s->add_n(256);
  s->add_variants(variant);
  s->set_pattern(pattern);
  s->set_warmup(1);
  s->set_iters(3);
  s->set_timeout_ms(1000);
  s->set_fault(fault);
  s->set_stress_calls(stress_calls);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  colltest::v1::RunResult result;
  *status = daemon.Stub()->Run(&ctx, req, &result);
  return result;
}

// The state of the group of the first `world` devices, as ListDevices reports it.
colltest::v1::GroupHealth GroupState(const Daemon& daemon, uint32_t world) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  colltest::v1::ListDevicesResponse devices;
  if (!daemon.Stub()->ListDevices(&ctx, colltest::v1::ListDevicesRequest(), &devices).ok())
    return {};
  for (const auto& g : devices.groups()) {
    if (static_cast<uint32_t>(g.devices_size()) == world && g.devices(0) == 0) return g;
  }
  return {};
}

// Seconds until the group is SERVING again (bounded by `limit`), or -1.
double SecondsToServing(const Daemon& daemon, uint32_t world, double limit) {
  const auto t0 = std::chrono::steady_clock::now();
  while (true) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (GroupState(daemon, world).state() == colltest::v1::GROUP_STATE_SERVING) return s;
    if (s > limit) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

class FaultInjection : public ::testing::TestWithParam<std::tuple<int, Fault>> {
 protected:
  static void TearDownTestSuite() {
    for (Daemon*& d : daemons_) {
      delete d;
      d = nullptr;
    }
  }
  // One daemon per world size, shared by the suite's tests.
  static Daemon* DaemonFor(int world) {
    Daemon*& d = daemons_[world == 8 ? 1 : 0];
    if (d == nullptr) d = Daemon::Start(world, {"--allow-fault-injection"}).release();
    return d;
  }
  static Daemon* daemons_[2];
};
Daemon* FaultInjection::daemons_[2] = {nullptr, nullptr};

TEST_P(FaultInjection, GivesTheFailureItNamesAndTheServerGoesOn) {
  const auto& [world_int, f] = GetParam();
  const auto world = static_cast<uint32_t>(world_int);
  Daemon* daemon = DaemonFor(world_int);
  ASSERT_NE(daemon, nullptr);
  grpc::Status status;
  const auto t0 = std::chrono::steady_clock::now();
  const colltest::v1::RunResult r =
      RunWithFault(*daemon, f.spec, f.variant, f.pattern, &status, f.stress_calls, world);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(r.cases_size(), 1);
  const auto& c = r.cases(0);
  EXPECT_EQ(c.status(), f.status) << f.spec << ": " << c.ShortDebugString();
  EXPECT_NE(c.message().find(f.culprit), std::string::npos) << f.spec << ": " << c.message();
  // A hang is reported within timeout + 1 s. A delayed or stopped rank does not answer by
  // itself: its peers time out naming it, and the watchdog kills it once its heartbeat has stood
  // still for the grace (1 s) with every peer answered.
  if (f.status == colltest::v1::CASE_STATUS_HANG) {
    EXPECT_LT(seconds, 1.0 + 1.0) << f.spec << " detected after " << seconds << " s";
  }
  // Reset or respawned, then the canary: SERVING again within 3 s of the failure's report.
  const double to_serving = SecondsToServing(*daemon, world, 10.0);
  EXPECT_GE(to_serving, 0.0) << GroupState(*daemon, world).ShortDebugString();
  EXPECT_LT(to_serving, 3.0) << f.spec;
  const colltest::v1::GroupHealth group = GroupState(*daemon, world);
  EXPECT_GT(group.recoveries(), 0u);
  EXPECT_LT(group.last_recovery_ms(), 3000.0) << f.spec;
  std::printf("[ fault ] W=%u %s: %s in %.2f s; SERVING again %.0f ms after the failure\n", world,
              f.spec, colltest::v1::CaseStatus_Name(c.status()).c_str(), seconds,
              group.last_recovery_ms());
  // The next request runs on healthy (reset or respawned) workers.
  const colltest::v1::RunResult next =
      RunWithFault(*daemon, "", f.variant, f.pattern, &status, 0, world);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(next.cases(0).status(), colltest::v1::CASE_STATUS_OK) << next.cases(0).message();
}

std::string FaultName(const ::testing::TestParamInfo<std::tuple<int, Fault>>& info) {
  std::string name = absl::StrCat("W", std::get<0>(info.param), "_", std::get<1>(info.param).spec,
                                  "_", colltest::v1::Variant_Name(std::get<1>(info.param).variant));
  for (char& ch : name) {
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(
    WorldFour, FaultInjection,
    ::testing::Combine(
        ::testing::Values(4),
        ::testing::Values(
            Fault{"missing_rank:1", colltest::v1::VARIANT_LAMPORT, colltest::v1::PATTERN_INTEGERS,
                  colltest::v1::CASE_STATUS_HANG, "rank 1 never arrived"},
            Fault{"delay_rank:2:1500000", colltest::v1::VARIANT_LAMPORT,
                  colltest::v1::PATTERN_INTEGERS, colltest::v1::CASE_STATUS_HANG,
                  "rank 2 never arrived"},
            Fault{"skip_rearm", colltest::v1::VARIANT_LAMPORT, colltest::v1::PATTERN_INTEGERS,
                  colltest::v1::CASE_STATUS_WRONG, "outside tolerance"},
            Fault{"poison_staging", colltest::v1::VARIANT_LAMPORT, colltest::v1::PATTERN_INTEGERS,
                  colltest::v1::CASE_STATUS_WRONG, "outside tolerance", 200},
            Fault{"skip_canonicalize", colltest::v1::VARIANT_LAMPORT,
                  colltest::v1::PATTERN_NEG_ZERO, colltest::v1::CASE_STATUS_HANG,
                  "lamport phase B"},
            Fault{"crash_rank:3", colltest::v1::VARIANT_LAMPORT, colltest::v1::PATTERN_INTEGERS,
                  colltest::v1::CASE_STATUS_ERROR, "rank 3 (pid"},
            Fault{"hang_end_sync:1", colltest::v1::VARIANT_ONE_STAGE,
                  colltest::v1::PATTERN_INTEGERS, colltest::v1::CASE_STATUS_HANG,
                  "rank 1 never arrived"},
            // A stopped process: found by the heartbeat watchdog, not by any wait of its own.
            Fault{"stall_rank:2", colltest::v1::VARIANT_LAMPORT, colltest::v1::PATTERN_INTEGERS,
                  colltest::v1::CASE_STATUS_HANG, "made no progress"})),
    FaultName);

// At W = 8 the culprits sit in the upper half, so a verdict that always named a low rank fails.
INSTANTIATE_TEST_SUITE_P(
    WorldEight, FaultInjection,
    ::testing::Combine(
        ::testing::Values(8),
        ::testing::Values(
            Fault{"missing_rank:6", colltest::v1::VARIANT_LAMPORT, colltest::v1::PATTERN_INTEGERS,
                  colltest::v1::CASE_STATUS_HANG, "rank 6 never arrived"},
            Fault{"delay_rank:5:1500000", colltest::v1::VARIANT_LAMPORT_TB,
                  colltest::v1::PATTERN_INTEGERS, colltest::v1::CASE_STATUS_HANG,
                  "rank 5 never arrived"},
            Fault{"skip_rearm", colltest::v1::VARIANT_LAMPORT, colltest::v1::PATTERN_INTEGERS,
                  colltest::v1::CASE_STATUS_WRONG, "outside tolerance"},
            Fault{"poison_staging", colltest::v1::VARIANT_LAMPORT, colltest::v1::PATTERN_INTEGERS,
                  colltest::v1::CASE_STATUS_WRONG, "outside tolerance", 200},
            Fault{"skip_canonicalize", colltest::v1::VARIANT_LAMPORT_TB,
                  colltest::v1::PATTERN_NEG_ZERO, colltest::v1::CASE_STATUS_HANG, "lamport_tb"},
            Fault{"missing_rank:5", colltest::v1::VARIANT_LAMPORT_TWO_SHOT,
                  colltest::v1::PATTERN_INTEGERS, colltest::v1::CASE_STATUS_HANG,
                  "rank 5 never arrived"},
            Fault{"skip_canonicalize", colltest::v1::VARIANT_LAMPORT_TWO_SHOT,
                  colltest::v1::PATTERN_NEG_ZERO, colltest::v1::CASE_STATUS_HANG,
                  "lamport_two_shot"},
            Fault{"crash_rank:7", colltest::v1::VARIANT_LAMPORT, colltest::v1::PATTERN_INTEGERS,
                  colltest::v1::CASE_STATUS_ERROR, "rank 7 (pid"},
            Fault{"hang_end_sync:6", colltest::v1::VARIANT_TWO_KERNEL,
                  colltest::v1::PATTERN_INTEGERS, colltest::v1::CASE_STATUS_HANG,
                  "rank 6 never arrived"},
            Fault{"stall_rank:7", colltest::v1::VARIANT_ONE_STAGE, colltest::v1::PATTERN_INTEGERS,
                  colltest::v1::CASE_STATUS_HANG, "rank 7 never arrived"})),
    FaultName);

TEST(FaultRefused, UnknownFaultIsRefusedUpFrontNamingTheFieldAndKeepsTheWorkers) {
  auto daemon = Daemon::Start(4, {"--allow-fault-injection"});
  ASSERT_NE(daemon, nullptr);
  grpc::Status status;
  // Bring the group up first, so that keeping its workers can be checked.
  RunWithFault(*daemon, "", colltest::v1::VARIANT_ONE_STAGE, colltest::v1::PATTERN_INTEGERS,
               &status);
  const auto before = daemon->WorkerPids();
  ASSERT_EQ(before.size(), 4u);
  const colltest::v1::RunResult r =
      RunWithFault(*daemon, "flip_bits:1", colltest::v1::VARIANT_LAMPORT,
                   colltest::v1::PATTERN_INTEGERS, &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("spec.fault: 'flip_bits:1'"), std::string::npos)
      << status.error_message();
  EXPECT_EQ(r.cases_size(), 0);
  EXPECT_EQ(daemon->WorkerPids(), before);
}

// A lamport case at W = 4 whose rank 2 sleeps `delay_us` before each of its 1 + `iters` calls,
// each wait bounded by a 2 s timeout.
colltest::v1::CaseResult RunWithSlowRankTwo(Daemon& daemon, uint32_t delay_us, uint32_t iters) {
  colltest::v1::RunRequest req;
  auto* s = req.mutable_spec();
  s->set_world_size(4);
  s->add_m(8);
  s->add_n(256);
  s->add_variants(colltest::v1::VARIANT_LAMPORT);
  s->set_warmup(1);
  s->set_iters(iters);
  s->set_timeout_ms(2000);
  s->set_fault(absl::StrCat("delay_rank:2:", delay_us));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  colltest::v1::RunResult r;
  const grpc::Status status = daemon.Stub()->Run(&ctx, req, &r);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return r.cases_size() == 1 ? r.cases(0) : colltest::v1::CaseResult();
}

// One input, one verdict: a rank slower than its peers' waits allow is named by the ranks that
// waited for it, every time (docs/verdicts.md). Before, the same request gave ERROR "aborted ...
// after rank 2 failed" once and an unattributed HANG of every rank twice.
TEST(FaultVerdict, SlowRankPastThePeersTimeoutIsTheHangCulpritEveryTime) {
  auto daemon = Daemon::Start(4, {"--allow-fault-injection"});
  ASSERT_NE(daemon, nullptr);
  for (int attempt = 0; attempt < 2; ++attempt) {
    const colltest::v1::CaseResult c = RunWithSlowRankTwo(*daemon, 2500000, 3);  // 2.5 s > 2 s
    EXPECT_EQ(c.status(), colltest::v1::CASE_STATUS_HANG) << c.message();
    EXPECT_NE(c.message().find("rank 2 never arrived"), std::string::npos) << c.message();
    for (const colltest::v1::RankResult& rank : c.ranks()) {
      if (rank.rank() != 2) {
        EXPECT_EQ(rank.suspect_peer(), 2) << rank.message();
      }
    }
  }
}

// The host deadline measures progress: a rank 1.2 s late at each of 6 calls, within the 2 s its
// peers wait, completes the case although it runs past the fixed deadline of the former formula
// (2 s x (1 + 6 / 5) + 2 s = 6.4 s), which made it a HANG.
TEST(FaultVerdict, SlowRankWithinThePeersTimeoutCompletesPastTheOldFixedDeadline) {
  auto daemon = Daemon::Start(4, {"--allow-fault-injection"});
  ASSERT_NE(daemon, nullptr);
  const auto start = std::chrono::steady_clock::now();
  const colltest::v1::CaseResult c = RunWithSlowRankTwo(*daemon, 1200000, 5);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(6400));
  EXPECT_EQ(c.status(), colltest::v1::CASE_STATUS_OK) << c.message();
}

}  // namespace
}  // namespace colltest::testing
