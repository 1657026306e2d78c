// JUnit XML building blocks shared by the run, health and comparison reports.
#ifndef COLLTEST_CLIENT_JUNIT_XML_H_
#define COLLTEST_CLIENT_JUNIT_XML_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "colltest/v1/colltest.pb.h"

namespace colltest::client {

inline constexpr absl::string_view kXmlDeclaration = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";

// `text` escaped for an attribute value or for element text.
std::string XmlAttr(absl::string_view text);
std::string XmlText(absl::string_view text);

using Properties = std::vector<std::pair<absl::string_view, std::string>>;

struct SuiteCounts {
  int tests = 0;
  int failures = 0;
  int skipped = 0;
  double seconds = 0;
};

// One <testsuite> element with its properties around `testcases` (already rendered).
std::string SuiteXml(absl::string_view name, const SuiteCounts& counts,
                     const Properties& properties, absl::string_view testcases);

// The <testsuite> element of a run, as FormatRunJunit prints it.
std::string RunSuiteXml(const v1::RunResult& run);

// The <testsuite name="comparison"> element of a comparison, as FormatCompareJunit prints it.
std::string CompareSuiteXml(const v1::CompareResponse& comparison);

}  // namespace colltest::client

#endif  // COLLTEST_CLIENT_JUNIT_XML_H_
