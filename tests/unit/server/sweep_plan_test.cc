#include "server/runs/sweep_plan.h"

#include <tuple>

#include "common/defaults.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/runs/validation.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;

v1::SweepSpec Normalized(v1::SweepSpec spec) {
  ServerLimits limits;
  limits.devices = {0, 1, 2, 3, 4, 5, 6, 7};
  limits.allow_fault_injection = true;
  absl::StatusOr<v1::SweepSpec> out = ValidateSpec(spec, limits);
  EXPECT_TRUE(out.ok()) << out.status();
  return *out;
}

TEST(SweepPlanTest, OrderIsNThenMThenVariantThenMode) {
  v1::SweepSpec spec;
  spec.set_world_size(2);
  spec.add_m(1);
  spec.add_m(64);
  spec.add_n(4096);
  spec.add_n(7168);
  spec.add_variants(v1::VARIANT_ONE_STAGE);
  spec.add_variants(v1::VARIANT_LAMPORT);
  spec.add_modes(v1::MODE_EAGER);
  spec.add_modes(v1::MODE_GRAPH);
  spec.set_seed(77);
  spec.set_fault("skip_rearm");
  const SweepPlan plan = PlanSweep(Normalized(spec), 100);

  ASSERT_EQ(plan.cases.size(), 16u);
  std::vector<std::tuple<uint32_t, uint32_t, v1::Variant, v1::Mode>> want;
  for (uint32_t n : {4096u, 7168u}) {
    for (uint32_t m : {1u, 64u}) {
      for (v1::Variant v : {v1::VARIANT_ONE_STAGE, v1::VARIANT_LAMPORT}) {
        for (v1::Mode mode : {v1::MODE_EAGER, v1::MODE_GRAPH}) want.emplace_back(n, m, v, mode);
      }
    }
  }
  for (size_t i = 0; i < plan.cases.size(); ++i) {
    const auto& c = plan.cases[i];
    EXPECT_EQ(std::make_tuple(c.n(), c.m(), c.variant(), c.mode()), want[i]) << i;
    EXPECT_EQ(c.case_id(), 100 + i);
    EXPECT_EQ(c.seed(), 77u);
    EXPECT_EQ(c.iters(), 20u);
    EXPECT_EQ(c.warmup(), 5u);
    EXPECT_EQ(c.timeout_ms(), 5000u);
    EXPECT_EQ(c.dtype(), v1::DTYPE_BF16);
    EXPECT_TRUE(c.residual());
  }
  EXPECT_THAT(plan.devices, ::testing::ElementsAre(0, 1));
}

TEST(SweepPlanTest, DevicesAndOptionsCarryOver) {
  v1::SweepSpec spec;
  spec.add_devices(5);
  spec.add_devices(2);
  spec.add_devices(7);
  spec.add_m(3);
  spec.add_n(1024);
  spec.add_variants(v1::VARIANT_LAMPORT_TB);
  spec.set_no_residual(true);
  spec.set_stress_calls(50);
  spec.mutable_knobs()->set_grid_blocks(16);
  const SweepPlan plan = PlanSweep(Normalized(spec));
  EXPECT_THAT(plan.devices, ::testing::ElementsAre(5, 2, 7));
  ASSERT_EQ(plan.cases.size(), 1u);
  EXPECT_FALSE(plan.cases[0].residual());
  EXPECT_EQ(plan.cases[0].stress_calls(), 50u);
  EXPECT_EQ(plan.cases[0].knobs().grid_blocks(), 16u);
  EXPECT_EQ(plan.cases[0].mode(), v1::MODE_EAGER);
}

// The epilogue is the innermost dimension: the epilogues of one kernel run one after another.
TEST(SweepPlanTest, EpiloguesAreTheInnermostDimension) {
  v1::SweepSpec spec;
  spec.set_world_size(2);
  spec.add_m(1);
  spec.add_m(64);
  spec.add_n(4096);
  spec.add_variants(v1::VARIANT_ONE_STAGE);
  spec.add_variants(v1::VARIANT_LAMPORT);
  spec.add_modes(v1::MODE_EAGER);
  spec.add_modes(v1::MODE_GRAPH);
  spec.add_epilogues(v1::EPILOGUE_FP8_TOKEN);
  spec.add_epilogues(v1::EPILOGUE_NONE);
  const v1::SweepSpec normalized = Normalized(spec);
  EXPECT_EQ(SweepCaseCount(normalized), 16u);
  const SweepPlan plan = PlanSweep(normalized, 7);

  ASSERT_EQ(plan.cases.size(), 16u);
  std::vector<std::tuple<uint32_t, v1::Variant, v1::Mode, v1::Epilogue>> want;
  for (uint32_t m : {1u, 64u}) {
    for (v1::Variant v : {v1::VARIANT_ONE_STAGE, v1::VARIANT_LAMPORT}) {
      for (v1::Mode mode : {v1::MODE_EAGER, v1::MODE_GRAPH}) {
        for (v1::Epilogue e : {v1::EPILOGUE_FP8_TOKEN, v1::EPILOGUE_NONE}) {
          want.emplace_back(m, v, mode, e);
        }
      }
    }
  }
  for (size_t i = 0; i < plan.cases.size(); ++i) {
    const auto& c = plan.cases[i];
    EXPECT_EQ(std::make_tuple(c.m(), c.variant(), c.mode(), c.epilogue()), want[i]) << i;
    EXPECT_EQ(c.case_id(), 7 + i);
  }
}

// Without epilogues a sweep is what it was: one case per shape, variant and mode, epilogue none.
TEST(SweepPlanTest, NoEpiloguesMeansNone) {
  v1::SweepSpec spec;
  spec.set_world_size(2);
  spec.add_m(8);
  spec.add_n(1024);
  spec.add_variants(v1::VARIANT_LAMPORT);
  const SweepPlan plan = PlanSweep(Normalized(spec));
  ASSERT_EQ(plan.cases.size(), 1u);
  EXPECT_EQ(plan.cases[0].epilogue(), v1::EPILOGUE_NONE);
  // A spec that did not go through ValidateSpec still plans resolved cases.
  spec.clear_epilogues();
  const SweepPlan raw = PlanSweep(spec);
  ASSERT_EQ(raw.cases.size(), 1u);
  EXPECT_EQ(raw.cases[0].epilogue(), v1::EPILOGUE_NONE);
  EXPECT_FLOAT_EQ(raw.cases[0].fp8_scale(), kDefaultFp8Scale);
  EXPECT_FLOAT_EQ(raw.cases[0].nvfp4_global_scale(), kDefaultNvfp4GlobalScale);
  EXPECT_EQ(raw.cases[0].quant_tolerance(), v1::QUANT_TOLERANCE_STRICT);
}

TEST(SweepPlanTest, QuantSettingsCarryOver) {
  v1::SweepSpec spec;
  spec.set_world_size(2);
  spec.add_m(8);
  spec.add_n(1024);
  spec.add_variants(v1::VARIANT_ONE_STAGE);
  spec.add_epilogues(v1::EPILOGUE_NVFP4);
  spec.set_keep_normed(true);
  spec.set_fp8_format(v1::FP8_FORMAT_E4M3FNUZ);
  spec.set_fp8_scale(0.5f);
  spec.set_nvfp4_global_scale(64.0f);
  spec.set_quant_tolerance(v1::QUANT_TOLERANCE_ULP);
  const SweepPlan plan = PlanSweep(Normalized(spec));
  ASSERT_EQ(plan.cases.size(), 1u);
  const auto& c = plan.cases[0];
  EXPECT_EQ(c.epilogue(), v1::EPILOGUE_NVFP4);
  EXPECT_TRUE(c.keep_normed());
  EXPECT_EQ(c.fp8_format(), v1::FP8_FORMAT_E4M3FNUZ);
  EXPECT_FLOAT_EQ(c.fp8_scale(), 0.5f);
  EXPECT_FLOAT_EQ(c.nvfp4_global_scale(), 64.0f);
  EXPECT_EQ(c.quant_tolerance(), v1::QUANT_TOLERANCE_ULP);
  // The device's format is left for the worker to resolve.
  spec.clear_fp8_format();
  EXPECT_EQ(PlanSweep(Normalized(spec)).cases[0].fp8_format(), v1::FP8_FORMAT_UNSPECIFIED);
}

TEST(SweepPlanTest, DevicesDefaultToTheFirstRanks) {
  v1::SweepSpec spec;
  spec.set_world_size(3);
  spec.add_m(1);
  spec.add_n(8);
  spec.add_variants(v1::VARIANT_ONE_STAGE);
  EXPECT_THAT(PlanSweep(spec).devices, ::testing::ElementsAre(0, 1, 2));
}

// Kernel plugins are variants of their own, after the variants, in the order named.
TEST(SweepPlanTest, PluginsComeAfterTheVariantsAsVariantsOfTheirOwn) {
  v1::SweepSpec spec;
  spec.set_world_size(2);
  spec.add_m(8);
  spec.add_n(1024);
  spec.add_variants(v1::VARIANT_ONE_STAGE);
  spec.add_plugins("b_plugin");
  spec.add_plugins("a_plugin");
  ServerLimits limits;
  limits.devices = {0, 1};
  for (const char* name : {"a_plugin", "b_plugin"}) {
    v1::KernelPlugin p;
    p.set_name(name);
    p.set_loaded(true);
    limits.kernel_plugins.push_back(p);
  }
  absl::StatusOr<v1::SweepSpec> out = ValidateSpec(spec, limits);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(SweepCaseCount(*out), 3u);
  const SweepPlan plan = PlanSweep(*out);
  ASSERT_EQ(plan.cases.size(), 3u);
  EXPECT_EQ(plan.cases[0].variant(), v1::VARIANT_ONE_STAGE);
  EXPECT_EQ(plan.cases[0].plugin(), "");
  EXPECT_EQ(plan.cases[1].variant(), v1::VARIANT_PLUGIN);
  EXPECT_EQ(plan.cases[1].plugin(), "b_plugin");
  EXPECT_EQ(plan.cases[2].plugin(), "a_plugin");
}

}  // namespace
}  // namespace colltest::server
