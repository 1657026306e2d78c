#include "server/health/health_levels.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/element_size.h"
#include "common/fault_spec.h"
#include "common/names.h"
#include "nlohmann/json.hpp"
#include "server/runs/run_executor.h"
#include "server/workers/verdict.h"

namespace colltest::server {

namespace v1 = ::colltest::v1;

namespace {

// One short and one medium batch at a hidden size every variant runs at every world size: the
// short one is latency-bound (barriers, flags), the medium one moves enough data to load the
// links. The cpu backend gets a smaller medium case: it checks the protocol paths, and eight
// ranks share two cores in CI.
constexpr uint32_t kShortRows = 1;
constexpr uint32_t kGpuHidden = 7168;
constexpr uint32_t kGpuMediumRows = 128;
constexpr uint32_t kCpuHidden = 1024;
constexpr uint32_t kCpuMediumRows = 32;

// Stress calls: every call is checked and m changes every call. A few hundred calls on a GPU take
// well under a second per case; a cpu call of four ranks sharing two cores takes milliseconds, so
// the cpu levels run fewer to stay within seconds (docs/health-levels.md has the durations).
constexpr uint32_t kGpuShortStressCalls = 300;
constexpr uint32_t kCpuShortStressCalls = 100;
constexpr uint32_t kGpuLongStressCalls = 2000;
constexpr uint32_t kCpuLongStressCalls = 100;
// The long stress: decode, prefill-sized and large batches (m varies in [1, m] within each).
constexpr uint32_t kGpuLongStressRows[] = {1, 128, 2048};
constexpr uint32_t kCpuLongStressRows[] = {1, 32, 128};
// Bandwidth per pair: a batch large enough that the links, not the launches, set the time.
constexpr uint32_t kGpuBandwidthRows = 8192;
constexpr uint32_t kCpuBandwidthRows = 128;
constexpr uint32_t kGpuBandwidthWarmup = 5;
constexpr uint32_t kGpuBandwidthIters = 20;

using Capabilities = colltest::worker::v1::Capabilities;

// Virtual devices are ranks sharing the host's cores (the cpu backend): they get the cpu sizes.
bool VirtualDevices(const Capabilities& caps) { return !caps.reports_devices(); }

// The largest power of two not above `want` whose case fits `max_case_bytes` per rank (at least
// 1): the server refuses larger cases, and colltestd --max-case-bytes may be set lower than the
// default.
uint32_t RowsWithin(uint32_t want, uint32_t n, v1::DType dtype, uint64_t max_case_bytes) {
  uint32_t m = want;
  while (m > 1 && uint64_t{m} * n * common::ElementBytes(dtype) > max_case_bytes) m /= 2;
  return m;
}

// Both modes where graphs exist: graph replay is how serving stacks call these kernels, eager is
// how everything else does. A backend without graphs (the cpu one) runs eager only.
void SetModesOfLevel(v1::SweepSpec& spec, const Capabilities& caps) {
  spec.clear_modes();
  if (caps.graph_mode()) spec.add_modes(v1::MODE_GRAPH);
  spec.add_modes(v1::MODE_EAGER);
}

v1::SweepSpec StressSpec(const v1::SweepSpec& group, const std::vector<uint32_t>& rows,
                         uint32_t calls, const std::string& label, uint64_t max_case_bytes) {
  v1::SweepSpec stress = group;
  stress.clear_m();
  for (uint32_t m : rows) {
    const uint32_t capped = RowsWithin(m, group.n(0), group.dtype(), max_case_bytes);
    if (std::find(stress.m().begin(), stress.m().end(), capped) == stress.m().end()) {
      stress.add_m(capped);
    }
  }
  stress.set_stress_calls(calls);
  stress.set_label(label);
  return stress;
}

v1::SweepSpec BandwidthSpec(const v1::SweepSpec& group, const Capabilities& caps,
                            uint64_t max_case_bytes) {
  const bool cpu = VirtualDevices(caps);
  v1::SweepSpec bandwidth = group;  // every variant: the pair's figure is its fastest one's
  bandwidth.clear_m();
  bandwidth.add_m(RowsWithin(cpu ? kCpuBandwidthRows : kGpuBandwidthRows, group.n(0), group.dtype(),
                             max_case_bytes));
  bandwidth.clear_modes();
  // Graph replay has no launch gaps between calls: the figure closest to the link's.
  bandwidth.add_modes(caps.graph_mode() ? v1::MODE_GRAPH : v1::MODE_EAGER);
  if (!cpu) {
    bandwidth.set_warmup(kGpuBandwidthWarmup);
    bandwidth.set_iters(kGpuBandwidthIters);
  }
  bandwidth.set_world_size(2);
  bandwidth.set_label("health bandwidth");
  return bandwidth;
}

}  // namespace

HealthProfile HealthProfileFor(const Capabilities& caps) {
  HealthProfile profile;
  v1::SweepSpec& group = profile.group;
  const bool cpu = VirtualDevices(caps);
  group.add_m(kShortRows);
  group.add_m(cpu ? kCpuMediumRows : kGpuMediumRows);
  group.add_n(cpu ? kCpuHidden : kGpuHidden);
  group.set_dtype(v1::DTYPE_BF16);
  // Graph replay is how serving stacks call these kernels on GPUs; a backend without graphs (the
  // cpu one) checks the eager path.
  group.add_modes(caps.graph_mode() ? v1::MODE_GRAPH : v1::MODE_EAGER);
  // Half the elements are +-0.0: a producer that forgets to canonicalise -0.0 hangs its peers.
  group.set_pattern(v1::PATTERN_NEG_ZERO);
  group.set_tolerance(v1::TOLERANCE_STRICT);
  group.set_warmup(2);
  group.set_iters(10);
  group.set_stop_on_failure(true);
  group.set_label("health");
  for (int v : caps.variants()) {
    if (v != v1::VARIANT_AUTO) group.add_variants(static_cast<v1::Variant>(v));
  }
  // A pair needs only one variant per protocol family to show a bad link: barriers and flags.
  profile.pair = group;
  profile.pair.clear_variants();
  profile.pair.add_variants(v1::VARIANT_ONE_STAGE);
  profile.pair.add_variants(v1::VARIANT_LAMPORT);
  profile.pair.set_label("health pair");
  return profile;
}

HealthPlan HealthPlanFor(v1::HealthLevel level, const HealthProfile& profile,
                         const Capabilities& caps, bool allow_faults, uint64_t max_case_bytes) {
  HealthPlan plan;
  plan.group = profile.group;
  plan.pair = profile.pair;
  if (level != v1::HEALTH_LEVEL_STANDARD && level != v1::HEALTH_LEVEL_LONG) return plan;
  plan.level = level;
  plan.all_pairs = true;
  SetModesOfLevel(plan.group, caps);
  SetModesOfLevel(plan.pair, caps);
  const bool cpu = VirtualDevices(caps);
  plan.group_stress.push_back(StressSpec(plan.group, {cpu ? kCpuMediumRows : kGpuMediumRows},
                                         cpu ? kCpuShortStressCalls : kGpuShortStressCalls,
                                         "health stress", max_case_bytes));
  plan.self_test = true;
  plan.self_test_allowed = allow_faults;
  if (level != v1::HEALTH_LEVEL_LONG) return plan;
  const auto& rows = cpu ? kCpuLongStressRows : kGpuLongStressRows;
  plan.group_stress.push_back(StressSpec(plan.group, {std::begin(rows), std::end(rows)},
                                         cpu ? kCpuLongStressCalls : kGpuLongStressCalls,
                                         "health long stress", max_case_bytes));
  plan.pair_bandwidth = BandwidthSpec(profile.group, caps, max_case_bytes);
  return plan;
}

v1::SweepSpec SelfTestSpec(const HealthProfile& profile, const std::vector<uint32_t>& devices) {
  v1::SweepSpec spec = profile.pair;
  spec.set_world_size(static_cast<uint32_t>(devices.size()));
  spec.clear_devices();
  spec.mutable_devices()->Add(devices.begin(), devices.end());
  spec.clear_m();
  spec.add_m(kShortRows);
  // One case of the simplest protocol, eager: the self test checks the detection, not a kernel.
  spec.clear_variants();
  spec.add_variants(v1::VARIANT_ONE_STAGE);
  spec.clear_modes();
  spec.add_modes(v1::MODE_EAGER);
  spec.set_warmup(1);
  spec.set_iters(1);
  spec.set_timeout_ms(kSelfTestTimeoutMs);
  common::FaultSpec fault;
  fault.kind = common::FaultKind::kMissingRank;
  fault.rank = static_cast<int>(devices.size()) - 1;
  spec.set_fault(common::FormatFaultSpec(fault));
  spec.set_label(kSelfTestLabel);
  return spec;
}

v1::HealthSelfTest SelfTestNotRun(const std::string& why) {
  v1::HealthSelfTest test;
  test.set_ran(false);
  test.set_message(why);
  return test;
}

v1::HealthSelfTest EvaluateSelfTest(const v1::RunResult& run, uint32_t planted_device) {
  v1::HealthSelfTest test;
  test.set_ran(true);
  test.set_fault(run.spec().fault());
  const std::string planted =
      absl::StrCat("planted ", run.spec().fault(), " (device ", planted_device, ")");
  if (run.cases_size() == 0) {
    test.set_message(absl::StrCat(planted, " but the run has no case (",
                                  common::RunStateName(run.state()), ": ", run.message(), ")"));
    return test;
  }
  const v1::CaseResult& c = run.cases(0);
  if (c.status() != v1::CASE_STATUS_HANG) {
    test.set_message(absl::StrCat(planted, " but the case came back ",
                                  common::CaseStatusName(c.status()), ": ", c.message()));
    return test;
  }
  const std::vector<uint32_t> devices(run.spec().devices().begin(), run.spec().devices().end());
  const std::optional<Culprit> culprit = HangCulpritOf(c, devices);
  const int64_t device = culprit.has_value() ? int64_t{culprit->device} : -1;
  if (device != planted_device) {
    test.set_message(absl::StrCat(planted, " but the HANG named ",
                                  device < 0 ? "no single device" : absl::StrCat("device ", device),
                                  ": ", c.message()));
    return test;
  }
  test.set_passed(true);
  test.set_message(absl::StrCat(planted, ": HANG naming device ", device, ": ", c.message()));
  return test;
}

absl::StatusOr<ExpectedBandwidth> ExpectedBandwidth::Parse(const std::string& json,
                                                           const std::string& source) {
  const auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", what));
  };
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return bad("not a JSON object of device model -> {link kind -> GB/s}");
  }
  ExpectedBandwidth expected;
  for (const auto& [model, kinds] : j.items()) {
    const std::string key = nlohmann::json(model).dump();  // quoted, as written in the file
    if (!kinds.is_object()) return bad(absl::StrCat(key, ": not an object of link kind -> GB/s"));
    for (const auto& [kind, gbps] : kinds.items()) {
      const std::string path = absl::StrCat(key, ".", nlohmann::json(kind).dump());
      if (!gbps.is_number() || !(gbps.get<double>() > 0) || !std::isfinite(gbps.get<double>())) {
        return bad(absl::StrCat(path, " = ", gbps.dump(), ": must be a number of GB/s > 0"));
      }
      expected.figures_[{model, kind}] = gbps.get<double>();
    }
  }
  return expected;
}

absl::StatusOr<ExpectedBandwidth> ExpectedBandwidth::Load(const std::string& tune_dir) {
  if (tune_dir.empty()) return ExpectedBandwidth();
  const std::filesystem::path path = std::filesystem::path(tune_dir) / kExpectedBusbwFile;
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return ExpectedBandwidth();
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(path.string(), ": cannot be read"));
  std::stringstream text;
  text << in.rdbuf();
  return Parse(text.str(), path.string());
}

std::optional<double> ExpectedBandwidth::Lookup(const std::string& model,
                                                const std::string& kind) const {
  auto it = figures_.find({model, kind});
  if (it == figures_.end()) return std::nullopt;
  return it->second;
}

PairLink PairLinkOf(const v1::MachineIdentity& machine, uint32_t a, uint32_t b) {
  PairLink link{"unknown", "unknown"};
  for (const v1::Device& d : machine.devices()) {
    if (d.index() == a && !d.name().empty()) link.model = d.name();
  }
  for (const v1::Link& l : machine.links()) {
    const bool same = (l.a() == a && l.b() == b) || (l.a() == b && l.b() == a);
    if (same && !l.kind().empty()) link.kind = l.kind();
  }
  return link;
}

}  // namespace colltest::server
