// Mutation checks: each protocol rule of docs/design.md section 4, broken on purpose by a test-only
// switch, must make the cpu backend report WRONG or HANG (never pass, never get stuck). The same
// scenarios pass with the rule intact (cpu_protocol_test), so these tests show that the suite
// would catch a regression of each rule. CpuRules checks a rule directly where a rank can report
// it.
#include <chrono>
#include <set>
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
  // > 0: the grid_blocks knob, on 4 resident blocks per rank, so that a grid that grows with the
  // rank still fits (the rule broken is then the same grid, not co-residency).
  uint32_t grid_blocks = 0;
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
  CpuGroup group(4, breaks, mu.grid_blocks > 0 ? 4 : 2);
  auto req = MakeCase(mu.variant, 16, 256, mu.pattern);
  req.set_timeout_ms(500);
  req.set_stress_calls(mu.stress_calls);
  req.mutable_knobs()->set_grid_blocks(mu.grid_blocks);
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
                 2000},
        // Signal slots are indexed by block: a block that exists on one rank only waits for
        // peers that never come.
        Mutation{"same_grid", colltest::v1::VARIANT_ONE_STAGE, colltest::v1::PATTERN_INTEGERS, 0,
                 1},
        Mutation{"same_grid", colltest::v1::VARIANT_TWO_KERNEL, colltest::v1::PATTERN_INTEGERS, 0,
                 1},
        Mutation{"same_grid", colltest::v1::VARIANT_LAMPORT, colltest::v1::PATTERN_INTEGERS, 0, 1},
        // One participant of a block barrier one trip ahead of the others.
        Mutation{"uniform_trips", colltest::v1::VARIANT_ONE_STAGE, colltest::v1::PATTERN_INTEGERS,
                 0},
        Mutation{"uniform_trips", colltest::v1::VARIANT_TWO_KERNEL, colltest::v1::PATTERN_INTEGERS,
                 0},
        Mutation{"uniform_trips", colltest::v1::VARIANT_LAMPORT, colltest::v1::PATTERN_INTEGERS,
                 0}),
    [](const ::testing::TestParamInfo<Mutation>& info) {
      return std::string(info.param.rule) + "_" +
             std::string(colltest::v1::Variant_Name(info.param.variant)).substr(8);
    });

// The grids the ranks of one case report (RankResult.grid_blocks).
std::set<uint32_t> Grids(const std::vector<colltest::v1::RankResult>& results) {
  std::set<uint32_t> grids;
  for (const auto& r : results) grids.insert(r.grid_blocks());
  return grids;
}

// docs/design.md section 4, "the grid must be the same on every rank": for every variant and grid
// knob, the four ranks of a group report one grid (and the case passes).
TEST(CpuRules, SameGridOnEveryRank) {
  CpuGroup group(4, {}, /*resident_blocks=*/4);
  for (auto v : {colltest::v1::VARIANT_ONE_STAGE, colltest::v1::VARIANT_TWO_KERNEL,
                 colltest::v1::VARIANT_LAMPORT, colltest::v1::VARIANT_LAMPORT_TB}) {
    for (uint32_t knob : {0u, 1u, 3u, 64u}) {
      auto req = MakeCase(v, 3, 256);
      req.mutable_knobs()->set_grid_blocks(knob);
      const auto results = group.Run(req);
      for (const auto& r : results) EXPECT_EQ(r.status(), CASE_STATUS_OK) << r.message();
      EXPECT_EQ(Grids(results).size(), 1u)
          << colltest::v1::Variant_Name(v) << " grid_blocks=" << knob;
    }
  }
}

// The check above sees a rank-dependent grid: with the rule broken the ranks report different
// grids.
TEST(CpuRules, SameGridCheckSeesARankDependentGrid) {
  ProtocolBreaks breaks;
  breaks.rank_dependent_grid = true;
  CpuGroup group(4, breaks, /*resident_blocks=*/4);
  auto req = MakeCase(colltest::v1::VARIANT_LAMPORT_TB, 16, 256);
  req.set_timeout_ms(500);
  req.mutable_knobs()->set_grid_blocks(1);
  EXPECT_GT(Grids(group.Run(req)).size(), 1u);
}

}  // namespace
}  // namespace colltest::cpu::testing
