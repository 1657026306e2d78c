// The comparison of two runs as JUnit XML: one testcase per case, failed when it regressed or went
// missing, so that a CI dashboard shows which shape got slower or broke since the baseline.
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/format/format.h"
#include "client/format/junit_xml.h"
#include "client/format/quant_view.h"
#include "common/names.h"

namespace colltest::client {
namespace {

bool IsFailure(const v1::CaseComparison& c) {
  return c.verdict() == v1::COMPARE_VERDICT_REGRESSION || c.verdict() == v1::COMPARE_VERDICT_ONLY_A;
}

// As a run's test names: the epilogue follows when the case quantised.
std::string TestCaseName(const v1::CaseComparison& c) {
  std::string name = absl::StrFormat("%s w=%d m=%d n=%d %s", common::ModeName(c.mode()),
                                     c.world_size(), c.m(), c.n(), common::DTypeName(c.dtype()));
  if (QuantisingEpilogue(c.epilogue())) {
    absl::StrAppend(&name, " ", EpilogueLabel(c.epilogue(), c.keep_normed()));
  }
  return name;
}

std::string TestCaseXml(const v1::CaseComparison& c) {
  std::string out =
      absl::StrFormat("  <testcase classname=\"colltest.compare.%s\" name=\"%s\" time=\"0\"",
                      XmlAttr(common::KernelName(c)), XmlAttr(TestCaseName(c)));
  const absl::string_view verdict = common::CompareVerdictName(c.verdict());
  if (IsFailure(c)) {
    absl::StrAppend(&out, ">\n    <failure type=\"", verdict, "\" message=\"", XmlAttr(c.reason()),
                    "\">", XmlText(c.reason()), "</failure>\n  </testcase>\n");
  } else if (c.verdict() == v1::COMPARE_VERDICT_SAME) {
    absl::StrAppend(&out, "/>\n");
  } else {
    // An improvement or a new case passes, but is news a reader of the suite should see.
    absl::StrAppend(&out, ">\n    <system-out>", verdict, ": ", XmlText(c.reason()),
                    "</system-out>\n  </testcase>\n");
  }
  return out;
}

}  // namespace

std::string CompareSuiteXml(const v1::CompareResponse& comparison) {
  SuiteCounts counts;
  std::string cases;
  for (const v1::CaseComparison& c : comparison.cases()) {
    ++counts.tests;
    if (IsFailure(c)) ++counts.failures;
    absl::StrAppend(&cases, TestCaseXml(c));
  }
  Properties properties = {{"run_a", comparison.run_a()},
                           {"run_b", comparison.run_b()},
                           {"baseline", comparison.baseline()},
                           {"threshold", absl::StrCat(comparison.threshold())},
                           {"message", comparison.message()}};
  // Both machines: a comparison across a driver upgrade or another node names both sets of boards.
  for (const auto& [machine, prefix] :
       {std::pair{&comparison.machine_a(), "a."}, std::pair{&comparison.machine_b(), "b."}}) {
    for (auto& property : MachineProperties(*machine, prefix)) {
      properties.push_back(std::move(property));
    }
  }
  // The comparison carries no time of its own: it is stamped when it is printed, on the host of
  // run b, the newer one.
  const std::string& hostname = comparison.machine_b().hostname().empty()
                                    ? comparison.machine_a().hostname()
                                    : comparison.machine_b().hostname();
  return SuiteXml("comparison", counts, SuiteOrigin{0, hostname}, properties, cases);
}

std::string FormatCompareJunit(const v1::CompareResponse& comparison) {
  return absl::StrCat(kXmlDeclaration, CompareSuiteXml(comparison));
}

std::string FormatRunWithComparisonJunit(const v1::RunResult& run,
                                         const v1::CompareResponse& comparison) {
  return absl::StrCat(kXmlDeclaration, "<testsuites>\n", RunSuiteXml(run),
                      CompareSuiteXml(comparison), "</testsuites>\n");
}

}  // namespace colltest::client
