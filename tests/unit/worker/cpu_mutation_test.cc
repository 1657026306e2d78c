// Mutation checks: each protocol rule of DESIGN section 4, broken on purpose by a test-only
// switch, must make the cpu backend report WRONG or HANG (never pass, never get stuck). The same
// scenarios pass with the rule intact (cpu_protocol_test), so these tests show that the suite
// would catch a regression of each rule.
#include <chrono>
#include <string>

#include "gtest/gtest.h"
#include "tests/unit/worker/cpu_group.h"

namespace colltest::cpu::testing {
namespace {

using colltest::v1::CASE_STATUS_OK;

struct Mutation {
  const char* rule;
  colltest::v1::Variant variant;
  colltest::v1::Pattern pattern;
  uint32_t stress_calls;  // 0: a plain timed case
};

// True when some rank did not pass: the broken rule was caught.
bool Caught(const std::vector<colltest::v1::RankResult>& results, std::string* how) {
  bool caught = false;
  for (const auto& r : results) {
    if (r.status() != CASE_STATUS_OK) {
      caught = true;
      *how += colltest::v1::CaseStatus_Name(r.status()) + ": " + r.message() + "\n";
    }
  }
  return caught;
}

class CpuMutation : public ::testing::TestWithParam<Mutation> {};

TEST_P(CpuMutation, BrokenRuleIsCaught) {
  const Mutation& mu = GetParam();
  ProtocolBreaks breaks;
  std::string error;
  ASSERT_TRUE(ParseProtocolBreaks(mu.rule, &breaks, &error)) << error;
  CpuGroup group(4, breaks);
  auto req = MakeCase(mu.variant, 16, 256, mu.pattern);
  req.set_timeout_ms(500);
  req.set_stress_calls(mu.stress_calls);
  const auto t0 = std::chrono::steady_clock::now();
  std::string how;
  const bool caught = Caught(group.Run(req), &how);
  EXPECT_TRUE(caught) << "breaking '" << mu.rule << "' went unnoticed: " << req.ShortDebugString();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60));
  std::cout << mu.rule << " -> " << how.substr(0, how.find('\n')) << "\n";
}

INSTANTIATE_TEST_SUITE_P(
    Rules, CpuMutation,
    ::testing::Values(
        Mutation{"canonicalize", colltest::v1::VARIANT_LAMPORT, colltest::v1::PATTERN_NEG_ZERO, 0},
        Mutation{"canonicalize", colltest::v1::VARIANT_LAMPORT_TB, colltest::v1::PATTERN_NEG_ZERO,
                 0},
        Mutation{"bit_compare", colltest::v1::VARIANT_LAMPORT, colltest::v1::PATTERN_NEG_ZERO, 0},
        Mutation{"bit_compare", colltest::v1::VARIANT_LAMPORT_TB, colltest::v1::PATTERN_NEG_ZERO,
                 0},
        Mutation{"rearm", colltest::v1::VARIANT_LAMPORT, colltest::v1::PATTERN_INTEGERS, 0},
        Mutation{"release_acquire", colltest::v1::VARIANT_LAMPORT, colltest::v1::PATTERN_INTEGERS,
                 2000},
        Mutation{"release_acquire", colltest::v1::VARIANT_TWO_KERNEL,
                 colltest::v1::PATTERN_INTEGERS, 0},
        Mutation{"private_staging", colltest::v1::VARIANT_LAMPORT, colltest::v1::PATTERN_INTEGERS,
                 2000},
        Mutation{"rotation", colltest::v1::VARIANT_LAMPORT_TB, colltest::v1::PATTERN_INTEGERS,
                 2000}),
    [](const ::testing::TestParamInfo<Mutation>& info) {
      return std::string(info.param.rule) + "_" +
             std::string(colltest::v1::Variant_Name(info.param.variant)).substr(8);
    });

}  // namespace
}  // namespace colltest::cpu::testing
