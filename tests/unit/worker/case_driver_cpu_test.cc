// The case driver's graph stress loop on the cpu backend, which records calls and checks as a GPU
// graph captures them: it passes with the protocol intact and catches a broken staging rule.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/unit/worker/cpu_group.h"

namespace colltest::cpu::testing {
namespace {

colltest::worker::v1::CaseRequest GraphStress(colltest::v1::Variant v, uint32_t calls) {
  colltest::worker::v1::CaseRequest req = MakeCase(v, 16, 256);
  req.set_mode(colltest::v1::MODE_GRAPH);
  req.set_stress_calls(calls);
  req.set_timeout_ms(500);
  return req;
}

TEST(CpuCaseDriver, GraphStressPasses) {
  for (const auto v : {colltest::v1::VARIANT_ONE_STAGE, colltest::v1::VARIANT_LAMPORT,
                       colltest::v1::VARIANT_LAMPORT_TB}) {
    CpuGroup group(2);
    for (const auto& r : group.Run(GraphStress(v, 100))) {
      EXPECT_EQ(r.status(), colltest::v1::CASE_STATUS_OK) << r.ShortDebugString();
      EXPECT_GE(r.calls(), 100u);
      EXPECT_GT(r.diff().checked(), 0u);
    }
  }
}

TEST(CpuCaseDriver, GraphStressCatchesSharedStaging) {
  ProtocolBreaks breaks;
  breaks.shared_staging = true;
  CpuGroup group(4, breaks);
  bool caught = false;
  std::string how;
  for (const auto& r : group.Run(GraphStress(colltest::v1::VARIANT_LAMPORT, 2000))) {
    if (r.status() != colltest::v1::CASE_STATUS_OK) {
      caught = true;
      how = r.message();
    }
  }
  EXPECT_TRUE(caught) << "lamport staging through the shared region went unnoticed";
  std::cout << "shared staging -> " << how << "\n";
}

// A fault is decided when its call is launched, so a captured call carries it into every replay.
TEST(CpuCaseDriver, GraphModeCarriesAnInjectedHangIntoTheReplays) {
  CpuGroup group(2);
  colltest::worker::v1::CaseRequest req = MakeCase(colltest::v1::VARIANT_ONE_STAGE, 16, 256);
  req.set_mode(colltest::v1::MODE_GRAPH);
  req.set_warmup(0);
  req.set_timeout_ms(300);
  req.set_fault("hang_end_sync:1");
  const std::vector<colltest::v1::RankResult> r = group.Run(req);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].status(), colltest::v1::CASE_STATUS_HANG);
  EXPECT_EQ(r[1].message(), "rank 1: fault: hang_end_sync");
  EXPECT_EQ(r[0].status(), colltest::v1::CASE_STATUS_HANG);
  EXPECT_EQ(r[0].suspect_peer(), 1);
  // The cpu's waits do not record a pack: the message leaves it out.
  EXPECT_EQ(r[0].message().find(", pack"), std::string::npos) << r[0].message();
  EXPECT_NE(r[0].message().find("past the 300 ms timeout"), std::string::npos) << r[0].message();
}

}  // namespace
}  // namespace colltest::cpu::testing
