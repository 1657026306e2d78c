#include "server/health/health_levels.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/server/test_capabilities.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

using Capabilities = colltest::worker::v1::Capabilities;
const Capabilities kGpu = testing::GpuCapabilities();
const Capabilities kCpu = testing::CpuCapabilities();

HealthPlan Plan(v1::HealthLevel level, const Capabilities& caps, bool allow_faults = true,
                uint64_t max_case_bytes = kDefaultMaxCaseBytes) {
  return HealthPlanFor(level, HealthProfileFor(caps), caps, allow_faults, max_case_bytes);
}

TEST(HealthPlanTest, QuickAndUnspecifiedRunTheProfileAlone) {
  for (v1::HealthLevel level : {v1::HEALTH_LEVEL_UNSPECIFIED, v1::HEALTH_LEVEL_QUICK}) {
    for (const Capabilities& caps : {kGpu, kCpu}) {
      const std::string backend = caps.reports_devices() ? "gpu" : "cpu";
      const HealthPlan plan = Plan(level, caps);
      const HealthProfile profile = HealthProfileFor(caps);
      EXPECT_EQ(plan.level, v1::HEALTH_LEVEL_QUICK);
      EXPECT_EQ(plan.group.SerializeAsString(), profile.group.SerializeAsString()) << backend;
      EXPECT_EQ(plan.pair.SerializeAsString(), profile.pair.SerializeAsString()) << backend;
      EXPECT_FALSE(plan.all_pairs);
      EXPECT_TRUE(plan.group_stress.empty());
      EXPECT_FALSE(plan.pair_bandwidth.has_value());
      EXPECT_FALSE(plan.self_test);
    }
  }
}

TEST(HealthPlanTest, StandardAddsEveryPairBothModesAShortStressAndTheSelfTest) {
  const HealthPlan gpu = Plan(v1::HEALTH_LEVEL_STANDARD, kGpu);
  EXPECT_EQ(gpu.level, v1::HEALTH_LEVEL_STANDARD);
  EXPECT_TRUE(gpu.all_pairs);
  EXPECT_THAT(gpu.group.modes(), ElementsAre(v1::MODE_GRAPH, v1::MODE_EAGER));
  EXPECT_THAT(gpu.pair.modes(), ElementsAre(v1::MODE_GRAPH, v1::MODE_EAGER));
  ASSERT_EQ(gpu.group_stress.size(), 1u);
  EXPECT_EQ(gpu.group_stress[0].stress_calls(), 300u);
  EXPECT_THAT(gpu.group_stress[0].m(), ElementsAre(128u));
  EXPECT_THAT(gpu.group_stress[0].modes(), ElementsAre(v1::MODE_GRAPH, v1::MODE_EAGER));
  EXPECT_EQ(gpu.group_stress[0].variants_size(), 5) << "every variant but auto";
  EXPECT_TRUE(gpu.self_test);
  EXPECT_TRUE(gpu.self_test_allowed);
  EXPECT_FALSE(gpu.pair_bandwidth.has_value());
  EXPECT_FALSE(Plan(v1::HEALTH_LEVEL_STANDARD, kGpu, false).self_test_allowed);

  // The cpu backend has no graphs: eager only, and fewer stress calls (four ranks, two cores).
  const HealthPlan cpu = Plan(v1::HEALTH_LEVEL_STANDARD, kCpu);
  EXPECT_THAT(cpu.group.modes(), ElementsAre(v1::MODE_EAGER));
  EXPECT_THAT(cpu.pair.modes(), ElementsAre(v1::MODE_EAGER));
  ASSERT_EQ(cpu.group_stress.size(), 1u);
  EXPECT_EQ(cpu.group_stress[0].stress_calls(), 100u);
  EXPECT_THAT(cpu.group_stress[0].m(), ElementsAre(32u));
  EXPECT_TRUE(cpu.self_test);
}

TEST(HealthPlanTest, LongAddsALongStressAndTheBandwidthOfEveryPairWithinTheCaseLimit) {
  const HealthPlan gpu = Plan(v1::HEALTH_LEVEL_LONG, kGpu, true, 256ull << 20);
  EXPECT_EQ(gpu.level, v1::HEALTH_LEVEL_LONG);
  EXPECT_TRUE(gpu.self_test);
  ASSERT_EQ(gpu.group_stress.size(), 2u);
  EXPECT_THAT(gpu.group_stress[1].m(), ElementsAre(1u, 128u, 2048u));
  EXPECT_THAT(gpu.group_stress[1].n(), ElementsAre(7168u));
  EXPECT_EQ(gpu.group_stress[1].stress_calls(), 2000u);
  ASSERT_TRUE(gpu.pair_bandwidth.has_value());
  EXPECT_THAT(gpu.pair_bandwidth->m(), ElementsAre(8192u));
  EXPECT_THAT(gpu.pair_bandwidth->modes(), ElementsAre(v1::MODE_GRAPH));
  EXPECT_EQ(gpu.pair_bandwidth->world_size(), 2u);
  EXPECT_EQ(gpu.pair_bandwidth->variants_size(), 5);
  EXPECT_EQ(gpu.pair_bandwidth->stress_calls(), 0u);

  // 8192 x 7168 bf16 is 112 MiB per rank: under the default 32 MiB limit the largest power of two
  // that fits is 2048; a tiny limit shrinks the stress shapes too, without duplicates.
  EXPECT_THAT(Plan(v1::HEALTH_LEVEL_LONG, kGpu).pair_bandwidth->m(), ElementsAre(2048u));
  const HealthPlan tiny = Plan(v1::HEALTH_LEVEL_LONG, kGpu, true, 7168 * 2 * 100);
  EXPECT_THAT(tiny.pair_bandwidth->m(), ElementsAre(64u));
  EXPECT_THAT(tiny.group_stress[1].m(), ElementsAre(1u, 64u));

  const HealthPlan cpu = Plan(v1::HEALTH_LEVEL_LONG, kCpu);
  EXPECT_THAT(cpu.group_stress[1].m(), ElementsAre(1u, 32u, 128u));
  EXPECT_THAT(cpu.group_stress[1].n(), ElementsAre(1024u));
  EXPECT_THAT(cpu.pair_bandwidth->m(), ElementsAre(128u));
  EXPECT_THAT(cpu.pair_bandwidth->modes(), ElementsAre(v1::MODE_EAGER));
}

// The profile follows what the backend announced (it is given no name): a backend that runs
// every GPU variant but announces virtual devices and no graphs gets the cpu backend's shapes.
TEST(HealthPlanTest, ABackendWithVirtualDevicesGetsTheCpuShapes) {
  for (v1::HealthLevel level :
       {v1::HEALTH_LEVEL_QUICK, v1::HEALTH_LEVEL_STANDARD, v1::HEALTH_LEVEL_LONG}) {
    const HealthPlan cpu = Plan(level, kCpu);
    Capabilities virtual_gpu = kGpu;
    virtual_gpu.set_reports_devices(false);
    virtual_gpu.set_graph_mode(false);
    const HealthPlan plan = Plan(level, virtual_gpu);
    EXPECT_THAT(plan.group.n(), ElementsAre(1024u));
    EXPECT_THAT(plan.group.modes(), ElementsAre(v1::MODE_EAGER));
    EXPECT_EQ(plan.group_stress.size(), cpu.group_stress.size());
    for (size_t i = 0; i < plan.group_stress.size(); ++i) {
      EXPECT_EQ(plan.group_stress[i].stress_calls(), cpu.group_stress[i].stress_calls());
      EXPECT_EQ(plan.group_stress[i].m().size(), cpu.group_stress[i].m().size());
    }
    EXPECT_EQ(plan.pair_bandwidth.has_value(), cpu.pair_bandwidth.has_value());
    if (plan.pair_bandwidth.has_value()) {
      EXPECT_EQ(plan.pair_bandwidth->m(0), cpu.pair_bandwidth->m(0));
      EXPECT_THAT(plan.pair_bandwidth->modes(), ElementsAre(v1::MODE_EAGER));
      EXPECT_EQ(plan.pair_bandwidth->warmup(), cpu.pair_bandwidth->warmup());
      EXPECT_EQ(plan.pair_bandwidth->iters(), cpu.pair_bandwidth->iters());
    }
  }
}

TEST(SelfTestSpecTest, TheLastDevicesRankNeverArrives) {
  const HealthProfile profile = HealthProfileFor(kCpu);
  const v1::SweepSpec spec = SelfTestSpec(profile, {4, 5, 6, 7});
  EXPECT_EQ(spec.fault(), "missing_rank:3");
  EXPECT_EQ(spec.world_size(), 4u);
  EXPECT_THAT(spec.devices(), ElementsAre(4u, 5u, 6u, 7u));
  EXPECT_EQ(spec.timeout_ms(), kSelfTestTimeoutMs);
  EXPECT_EQ(spec.variants_size() * spec.modes_size() * spec.m_size() * spec.n_size(), 1);
}

// A run of the self test on devices {4, 5, 6, 7} whose only case is `status`; every hung rank
// but `culprit` waited for `culprit`, which hung silently (as missing_rank reports itself).
v1::RunResult SelfTestRun(v1::CaseStatus status, int culprit) {
  v1::RunResult run;
  run.mutable_spec()->set_fault("missing_rank:3");
  for (uint32_t d : {4, 5, 6, 7}) run.mutable_spec()->add_devices(d);
  v1::CaseResult* c = run.add_cases();
  c->set_status(status);
  c->set_message(absl::StrCat("rank ", culprit, " never arrived"));
  for (uint32_t r = 0; r < 4; ++r) {
    v1::RankResult* rank = c->add_ranks();
    rank->set_rank(r);
    rank->set_device(4 + r);
    rank->set_status(status == v1::CASE_STATUS_HANG ? v1::CASE_STATUS_HANG : v1::CASE_STATUS_OK);
    rank->set_suspect_peer(static_cast<int>(r) == culprit ? -1 : culprit);
  }
  return run;
}

TEST(EvaluateSelfTestTest, PassesOnlyForAHangNamingThePlantedDevice) {
  const v1::HealthSelfTest passed = EvaluateSelfTest(SelfTestRun(v1::CASE_STATUS_HANG, 3), 7);
  EXPECT_TRUE(passed.ran());
  EXPECT_TRUE(passed.passed()) << passed.message();
  EXPECT_EQ(passed.fault(), "missing_rank:3");
  EXPECT_THAT(passed.message(), HasSubstr("HANG naming device 7"));

  // Rank 3 is device 7, not device 3: the culprit is mapped through the run's devices.
  EXPECT_FALSE(EvaluateSelfTest(SelfTestRun(v1::CASE_STATUS_HANG, 3), 3).passed());
  const v1::HealthSelfTest other = EvaluateSelfTest(SelfTestRun(v1::CASE_STATUS_HANG, 1), 7);
  EXPECT_FALSE(other.passed());
  EXPECT_THAT(other.message(), HasSubstr("named device 5"));
  const v1::HealthSelfTest ok = EvaluateSelfTest(SelfTestRun(v1::CASE_STATUS_OK, 3), 7);
  EXPECT_FALSE(ok.passed());
  EXPECT_THAT(ok.message(), HasSubstr("came back OK"));
  EXPECT_FALSE(EvaluateSelfTest(SelfTestRun(v1::CASE_STATUS_ERROR, 3), 7).passed());

  // Ranks that blame different peers name no single culprit.
  v1::RunResult split = SelfTestRun(v1::CASE_STATUS_HANG, 3);
  split.mutable_cases(0)->mutable_ranks(0)->set_suspect_peer(2);
  const v1::HealthSelfTest none = EvaluateSelfTest(split, 7);
  EXPECT_FALSE(none.passed());
  EXPECT_THAT(none.message(), HasSubstr("no single device"));

  v1::RunResult empty = SelfTestRun(v1::CASE_STATUS_HANG, 3);
  empty.clear_cases();
  EXPECT_FALSE(EvaluateSelfTest(empty, 7).passed());
}

TEST(ExpectedBandwidthTest, ParsesFiguresByModelAndLinkKind) {
  const absl::StatusOr<ExpectedBandwidth> expected = ExpectedBandwidth::Parse(
      R"({"NVIDIA H200": {"nvlink": 300.5, "pcie": 40}, "AMD MI300X": {}})", "f.json");
  ASSERT_TRUE(expected.ok()) << expected.status();
  EXPECT_EQ(expected->Lookup("NVIDIA H200", "nvlink"), 300.5);
  EXPECT_EQ(expected->Lookup("NVIDIA H200", "pcie"), 40.0);
  EXPECT_FALSE(expected->Lookup("NVIDIA H200", "p2p").has_value());
  EXPECT_FALSE(expected->Lookup("AMD MI300X", "xgmi").has_value());
  EXPECT_TRUE(ExpectedBandwidth::Parse("{}", "f.json")->empty());
}

TEST(ExpectedBandwidthTest, ErrorsNameTheFileAndTheKey) {
  struct Bad {
    std::string json;
    std::string message;
  };
  for (const Bad& bad : std::vector<Bad>{
           {"[1]", "f.json: not a JSON object"},
           {"{", "f.json: not a JSON object"},
           {R"({"NVIDIA H200": 300})", R"(f.json: "NVIDIA H200": not an object)"},
           {R"({"NVIDIA H200": {"nvlink": "300"}})", R"(f.json: "NVIDIA H200"."nvlink" = "300")"},
           {R"({"NVIDIA H200": {"nvlink": 0}})", R"("NVIDIA H200"."nvlink" = 0: must be a number)"},
           {R"({"H": {"nvlink": 1, "pcie": -2}})", R"(f.json: "H"."pcie" = -2)"},
       }) {
    const absl::StatusOr<ExpectedBandwidth> parsed = ExpectedBandwidth::Parse(bad.json, "f.json");
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << bad.json;
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr(bad.message)) << bad.json;
  }
}

TEST(ExpectedBandwidthTest, LoadsTheTuneDirsFileAndAMissingOneIsNoFigures) {
  EXPECT_TRUE(ExpectedBandwidth::Load("")->empty());
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "expected_busbw_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  EXPECT_TRUE(ExpectedBandwidth::Load(dir.string())->empty());
  std::ofstream(dir / kExpectedBusbwFile) << R"({"NVIDIA H200": {"nvlink": -1}})";
  const absl::StatusOr<ExpectedBandwidth> bad = ExpectedBandwidth::Load(dir.string());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr((dir / kExpectedBusbwFile).string() + R"(: "NVIDIA H200"."nvlink")"));
  std::ofstream(dir / kExpectedBusbwFile) << R"({"NVIDIA H200": {"nvlink": 350}})";
  EXPECT_EQ(ExpectedBandwidth::Load(dir.string())->Lookup("NVIDIA H200", "nvlink"), 350.0);
  std::filesystem::remove_all(dir);
}

TEST(PairLinkTest, ModelOfTheFirstDeviceAndKindOfTheLinkEitherWay) {
  v1::MachineIdentity machine;
  for (uint32_t i : {0, 1, 2}) {
    v1::Device* d = machine.add_devices();
    d->set_index(i);
    d->set_name("NVIDIA H200");
  }
  v1::Link* link = machine.add_links();
  link->set_a(0);
  link->set_b(2);
  link->set_kind("nvlink");
  EXPECT_EQ(PairLinkOf(machine, 2, 0).kind, "nvlink");
  EXPECT_EQ(PairLinkOf(machine, 0, 2).model, "NVIDIA H200");
  EXPECT_EQ(PairLinkOf(machine, 0, 1).kind, "unknown");
  EXPECT_EQ(PairLinkOf(machine, 5, 1).model, "unknown");
}

// The figures the repository ships parse, and say what docs/health-levels.md says they are.
TEST(ExpectedBandwidthTest, TheCommittedFiguresLoad) {
  absl::StatusOr<ExpectedBandwidth> expected = ExpectedBandwidth::Load(COLLTEST_SOURCE_TUNE_DIR);
  ASSERT_TRUE(expected.ok()) << expected.status();
  EXPECT_EQ(expected->Lookup("NVIDIA H200", "nvlink"), 285.7);
  EXPECT_FALSE(expected->Lookup("NVIDIA H200", "pcie").has_value());
}

}  // namespace
}  // namespace colltest::server
