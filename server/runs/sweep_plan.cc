#include "server/runs/sweep_plan.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/defaults.h"

namespace colltest::server {

namespace v1 = ::colltest::v1;
namespace wv1 = ::colltest::worker::v1;

namespace {

std::vector<v1::Mode> ModesOf(const v1::SweepSpec& spec) {
  std::vector<v1::Mode> modes;
  for (int mode : spec.modes()) modes.push_back(static_cast<v1::Mode>(mode));
  if (modes.empty()) modes.push_back(v1::MODE_EAGER);
  return modes;
}

std::vector<v1::Epilogue> EpiloguesOf(const v1::SweepSpec& spec) {
  std::vector<v1::Epilogue> epilogues;
  for (int e : spec.epilogues()) {
    epilogues.push_back(e == v1::EPILOGUE_UNSPECIFIED ? v1::EPILOGUE_NONE
                                                      : static_cast<v1::Epilogue>(e));
  }
  if (epilogues.empty()) epilogues.push_back(v1::EPILOGUE_NONE);
  return epilogues;
}

// The settings every case of the sweep shares; the scales resolved as ValidateSpec does, so that a
// worker never sees a 0 scale whoever built the spec.
wv1::CaseRequest CommonRequest(const v1::SweepSpec& spec) {
  wv1::CaseRequest common;
  common.set_dtype(spec.dtype());
  common.set_residual(!spec.no_residual());
  common.set_eps(spec.eps());
  common.set_warmup(spec.warmup());
  common.set_iters(spec.iters());
  common.set_stress_calls(spec.stress_calls());
  common.set_pattern(spec.pattern());
  common.set_seed(spec.seed());
  common.set_tolerance(spec.tolerance());
  common.set_timeout_ms(spec.timeout_ms());
  *common.mutable_knobs() = spec.knobs();
  common.set_fault(spec.fault());
  common.set_keep_normed(spec.keep_normed());
  common.set_fp8_format(spec.fp8_format());
  common.set_fp8_scale(spec.fp8_scale() > 0 ? spec.fp8_scale() : kDefaultFp8Scale);
  common.set_nvfp4_global_scale(spec.nvfp4_global_scale() > 0 ? spec.nvfp4_global_scale()
                                                              : kDefaultNvfp4GlobalScale);
  common.set_quant_tolerance(spec.quant_tolerance() == v1::QUANT_TOLERANCE_UNSPECIFIED
                                 ? v1::QUANT_TOLERANCE_STRICT
                                 : spec.quant_tolerance());
  return common;
}

}  // namespace

uint64_t SweepCaseCount(const v1::SweepSpec& spec) {
  return static_cast<uint64_t>(spec.m_size()) * spec.n_size() *
         (spec.variants_size() + spec.plugins_size()) * std::max(spec.modes_size(), 1) *
         std::max(spec.epilogues_size(), 1);
}

SweepPlan PlanSweep(const v1::SweepSpec& spec, uint64_t first_case_id) {
  SweepPlan plan;
  plan.devices.assign(spec.devices().begin(), spec.devices().end());
  if (plan.devices.empty()) {
    for (uint32_t r = 0; r < spec.world_size(); ++r) plan.devices.push_back(r);
  }

  const wv1::CaseRequest common = CommonRequest(spec);
  const std::vector<v1::Mode> modes = ModesOf(spec);
  const std::vector<v1::Epilogue> epilogues = EpiloguesOf(spec);
  plan.cases.reserve(SweepCaseCount(spec));
  uint64_t id = first_case_id;
  for (uint32_t n : spec.n()) {
    for (uint32_t m : spec.m()) {
      // The variants, then the kernel plugins as variants of their own.
      const int kernels = spec.variants_size() + spec.plugins_size();
      for (int k = 0; k < kernels; ++k) {
        for (v1::Mode mode : modes) {
          for (v1::Epilogue epilogue : epilogues) {
            wv1::CaseRequest& c = plan.cases.emplace_back(common);
            c.set_case_id(id++);
            if (k < spec.variants_size()) {
              c.set_variant(static_cast<v1::Variant>(spec.variants(k)));
            } else {
              c.set_variant(v1::VARIANT_PLUGIN);
              c.set_plugin(spec.plugins(k - spec.variants_size()));
            }
            c.set_mode(mode);
            c.set_m(m);
            c.set_n(n);
            c.set_epilogue(epilogue);
          }
        }
      }
    }
  }
  return plan;
}

void GrowTimeoutsForTimeSlicing(SweepPlan& plan, uint32_t ranks_on_gpu, double round_trip_us,
                                uint32_t max_timeout_ms) {
  if (ranks_on_gpu <= 1 || round_trip_us <= 0) return;
  const double wanted_ms = kTimeSlicedWaitsPerTimeout * ranks_on_gpu * round_trip_us / 1000.0;
  const auto floor_ms =
      static_cast<uint32_t>(std::min<double>(std::ceil(wanted_ms), max_timeout_ms));
  for (wv1::CaseRequest& c : plan.cases) {
    const uint32_t timeout = c.timeout_ms() == 0 ? kDefaultCaseTimeoutMs : c.timeout_ms();
    c.set_timeout_ms(std::max(timeout, floor_ms));
  }
}

}  // namespace colltest::server
