// Fault injection through a real colltestd (cpu backend, 4 ranks): each fault gives the failure it
// names, the culprit is named, a hang is reported within timeout + 1 s, and the next request runs.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <string>

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

colltest::v1::RunResult RunWithFault(const Daemon& daemon, const std::string& fault,
                                     colltest::v1::Variant variant, colltest::v1::Pattern pattern,
                                     grpc::Status* status, uint32_t stress_calls = 0) {
  colltest::v1::RunRequest req;
  auto* s = req.mutable_spec();
  s->set_world_size(4);
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

class FaultInjection : public ::testing::TestWithParam<Fault> {
 protected:
  static void SetUpTestSuite() {
    daemon_ = Daemon::Start(4, {"--allow-fault-injection"}).release();
    ASSERT_NE(daemon_, nullptr);
  }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }
  static Daemon* daemon_;
};
Daemon* FaultInjection::daemon_ = nullptr;

TEST_P(FaultInjection, GivesTheFailureItNamesAndTheServerGoesOn) {
  const Fault& f = GetParam();
  grpc::Status status;
  const auto t0 = std::chrono::steady_clock::now();
  const colltest::v1::RunResult r =
      RunWithFault(*daemon_, f.spec, f.variant, f.pattern, &status, f.stress_calls);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(r.cases_size(), 1);
  const auto& c = r.cases(0);
  EXPECT_EQ(c.status(), f.status) << f.spec << ": " << c.ShortDebugString();
  EXPECT_NE(c.message().find(f.culprit), std::string::npos) << f.spec << ": " << c.message();
  // A hang is reported within timeout + 1 s; a delayed rank answers only after its own delay,
  // so its case takes delay + timeout (its peers still name it).
  if (f.status == colltest::v1::CASE_STATUS_HANG && std::string(f.spec).rfind("delay", 0) != 0) {
    EXPECT_LT(seconds, 1.0 + 1.0) << f.spec << " detected after " << seconds << " s";
  }
  // The next request runs on healthy (reset or respawned) workers.
  const colltest::v1::RunResult next = RunWithFault(*daemon_, "", f.variant, f.pattern, &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(next.cases(0).status(), colltest::v1::CASE_STATUS_OK) << next.cases(0).message();
}

INSTANTIATE_TEST_SUITE_P(
    Faults, FaultInjection,
    ::testing::Values(
        Fault{"missing_rank:1", colltest::v1::VARIANT_LAMPORT, colltest::v1::PATTERN_INTEGERS,
              colltest::v1::CASE_STATUS_HANG, "rank 1 never arrived"},
        Fault{"delay_rank:2:1500000", colltest::v1::VARIANT_LAMPORT, colltest::v1::PATTERN_INTEGERS,
              colltest::v1::CASE_STATUS_HANG, "waited for rank 2"},
        Fault{"skip_rearm", colltest::v1::VARIANT_LAMPORT, colltest::v1::PATTERN_INTEGERS,
              colltest::v1::CASE_STATUS_WRONG, "outside tolerance"},
        Fault{"poison_staging", colltest::v1::VARIANT_LAMPORT, colltest::v1::PATTERN_INTEGERS,
              colltest::v1::CASE_STATUS_WRONG, "outside tolerance", 200},
        Fault{"skip_canonicalize", colltest::v1::VARIANT_LAMPORT, colltest::v1::PATTERN_NEG_ZERO,
              colltest::v1::CASE_STATUS_HANG, "lamport phase B"},
        Fault{"crash_rank:3", colltest::v1::VARIANT_LAMPORT, colltest::v1::PATTERN_INTEGERS,
              colltest::v1::CASE_STATUS_ERROR, "rank 3 (pid"},
        Fault{"hang_end_sync:1", colltest::v1::VARIANT_ONE_STAGE, colltest::v1::PATTERN_INTEGERS,
              colltest::v1::CASE_STATUS_HANG, "rank 1 never arrived"}),
    [](const ::testing::TestParamInfo<Fault>& info) {
      std::string name = info.param.spec;
      for (char& ch : name) {
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

TEST(FaultRefused, UnknownFaultIsAnErrorNamingTheFieldAndKeepsTheWorkers) {
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
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(r.cases(0).status(), colltest::v1::CASE_STATUS_ERROR);
  EXPECT_NE(r.cases(0).message().find("fault = 'flip_bits:1'"), std::string::npos)
      << r.cases(0).message();
  EXPECT_EQ(daemon->WorkerPids(), before);
}

}  // namespace
}  // namespace colltest::testing
