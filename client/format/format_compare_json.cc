// The comparison of two runs as JSON, alone (`compare`) or inside a run's report
// (`--compare-baseline`). Like the run JSON (docs/design.md section 10), fields may be added, never
// renamed or removed.
#include <string>

#include "client/format/format.h"
#include "client/format/format_json.h"
#include "common/names.h"

namespace colltest::client {
namespace {

// The fields of one run's side of a case ("a" or "b"); null where the case is missing from it,
// so that a script cannot mistake a missing case for one that took 0 us.
void AddSide(const std::string& side, bool present, v1::CaseStatus status, const v1::TimingStats& t,
             const v1::DiffStats& d, Json& out) {
  auto field = [&](const std::string& name, Json value) {
    out[name] = present ? std::move(value) : Json(nullptr);
  };
  field("status_" + side, std::string(common::CaseStatusName(status)));
  field("median_" + side + "_us", t.median_us());
  field("p10_" + side + "_us", t.p10_us());
  field("p90_" + side + "_us", t.p90_us());
  field("mismatches_" + side, d.mismatches());
  field("max_ulp_" + side, d.max_ulp());
  field("nan_inf_" + side, d.nan_inf());
}

Json CaseComparisonJson(const v1::CaseComparison& c) {
  Json out = Json::object();
  out["variant"] = common::KernelName(c);
  out["mode"] = std::string(common::ModeName(c.mode()));
  out["world"] = c.world_size();
  out["m"] = c.m();
  out["n"] = c.n();
  out["dtype"] = std::string(common::DTypeName(c.dtype()));
  out["epilogue"] = std::string(common::EpilogueName(c.epilogue()));
  out["keep_normed"] = c.keep_normed();
  if (c.variant() == v1::VARIANT_PLUGIN) {
    out["plugin_a"] = PluginJson(c.plugin_a());
    out["plugin_b"] = PluginJson(c.plugin_b());
  }
  out["fp8_format"] = c.fp8_format() != v1::FP8_FORMAT_UNSPECIFIED
                          ? std::string(common::Fp8FormatName(c.fp8_format()))
                          : "";
  out["verdict"] = std::string(common::CompareVerdictName(c.verdict()));
  out["reason"] = c.reason();
  out["ratio"] = c.ratio();
  AddSide("a", c.verdict() != v1::COMPARE_VERDICT_ONLY_B, c.status_a(), c.timing_a(), c.diff_a(),
          out);
  AddSide("b", c.verdict() != v1::COMPARE_VERDICT_ONLY_A, c.status_b(), c.timing_b(), c.diff_b(),
          out);
  return out;
}

}  // namespace

Json CompareJson(const v1::CompareResponse& comparison) {
  Json out = Json::object();
  out["run_a"] = comparison.run_a();
  out["run_b"] = comparison.run_b();
  out["baseline"] = comparison.baseline();
  out["threshold"] = comparison.threshold();
  out["regressed"] = comparison.regressed();
  out["regressions"] = comparison.regressions();
  out["improvements"] = comparison.improvements();
  out["message"] = comparison.message();
  out["machine_a"] = MachineJson(comparison.machine_a());
  out["machine_b"] = MachineJson(comparison.machine_b());
  Json cases = Json::array();
  for (const v1::CaseComparison& c : comparison.cases()) cases.push_back(CaseComparisonJson(c));
  out["cases"] = std::move(cases);
  return out;
}

std::string FormatCompareJson(const v1::CompareResponse& comparison) {
  Json out = DocumentJson("colltest.compare");
  out.update(CompareJson(comparison));
  return DumpJson(out);
}

std::string FormatRunWithComparisonJson(const v1::RunResult& run,
                                        const v1::CompareResponse& comparison) {
  Json out = RunJson(run);
  out["comparison"] = CompareJson(comparison);
  return DumpJson(out);
}

}  // namespace colltest::client
