// JUnit XML building blocks shared by the run, health and comparison reports.
#pragma once

#include <cstdint>
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
  int errors = 0;  // testcases that could not run or broke in the infrastructure, not failures
};

// When and where a suite ran: the `timestamp` and `hostname` attributes CI consumers show.
struct SuiteOrigin {
  int64_t unix_ms = 0;   // 0: now
  std::string hostname;  // "": this machine's host name
};

// `unix_ms` (now when 0) as ISO 8601 in UTC without a zone designator ("2026-11-01T08:00:00"): the
// JUnit schema's timestamp type, which the strictest consumers check, admits no zone.
std::string JunitTimestamp(int64_t unix_ms);

// The origin of a suite measured on `machine`: its host, else this machine's.
SuiteOrigin MachineOrigin(const v1::MachineIdentity& machine, int64_t unix_ms);

// One <testsuite> element with its properties around `testcases` (already rendered).
std::string SuiteXml(absl::string_view name, const SuiteCounts& counts, const SuiteOrigin& origin,
                     const Properties& properties, absl::string_view testcases);

// The verdict element of a testcase: "failure" for a result the collective produced (WRONG, HANG,
// a failed comparison), "error" for one the infrastructure produced (ERROR, a dead worker).
enum class Outcome { kFailure, kError };
std::string OutcomeXml(Outcome outcome, absl::string_view type, absl::string_view message,
                       absl::string_view details);

// Where a suite ran, for a CI reader who has to find the node and the boards: hostname,
// machine_key, driver, then per device index N "device.N.name", "device.N.uuid",
// "device.N.pci_bus_id" and, where the driver gives one, "device.N.serial"; every name starts with
// `prefix` (a comparison has two machines). Empty when the server sent no machine.
Properties MachineProperties(const v1::MachineIdentity& machine, absl::string_view prefix = "");

// The <testsuite> element of a run, as FormatRunJunit prints it.
std::string RunSuiteXml(const v1::RunResult& run);

// The <testsuite name="comparison"> element of a comparison, as FormatCompareJunit prints it.
std::string CompareSuiteXml(const v1::CompareResponse& comparison);

}  // namespace colltest::client
