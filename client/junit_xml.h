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

// Names are owned: some are built per device ("device.0.uuid").
using Properties = std::vector<std::pair<std::string, std::string>>;

struct SuiteCounts {
  int tests = 0;
  int failures = 0;
  int skipped = 0;
  double seconds = 0;
  int errors = 0;  // testcases that could not run (a BUSY health check), apart from failures
};

// One <testsuite> element with its properties around `testcases` (already rendered).
std::string SuiteXml(absl::string_view name, const SuiteCounts& counts,
                     const Properties& properties, absl::string_view testcases);

// Where a suite ran, for a CI reader who has to find the node and the boards: hostname,
// machine_key, driver, then per device index N "device.N.uuid", "device.N.pci_bus_id" and, where
// the driver gives one, "device.N.serial". Empty when the server sent no machine.
Properties MachineProperties(const v1::MachineIdentity& machine);

// The <testsuite> element of a run, as FormatRunJunit prints it.
std::string RunSuiteXml(const v1::RunResult& run);

// The <testsuite name="comparison"> element of a comparison, as FormatCompareJunit prints it.
std::string CompareSuiteXml(const v1::CompareResponse& comparison);

}  // namespace colltest::client

#endif  // COLLTEST_CLIENT_JUNIT_XML_H_
