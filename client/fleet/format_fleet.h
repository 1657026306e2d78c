// Renderers of a fleet check (`colltest health --targets`): one row per node in every format,
// so that a CI job and a person see the same nodes with the same verdicts.
#pragma once

#include <string>

#include "client/fleet/fleet_verdict.h"
#include "client/format/format.h"

namespace colltest::client {

std::string FormatFleet(const FleetReport& report, OutputFormat format);

// NODE, VERDICT, HOST, CULPRIT, TIME, TRIES, MESSAGE; then FleetSummaryLine.
std::string FormatFleetTable(const FleetReport& report);
// {"nodes": [{node, verdict, hostname, culprit: [{device, uuid}], duration_ms, attempts,
// message}], "summary": {nodes, ok, warn, wrong, hang, error, busy, unreachable,
// unauthenticated, wall_ms, exit_code}}. Fields may be added, never renamed or removed.
std::string FormatFleetJson(const FleetReport& report);
// node,verdict,hostname,culprit_devices,culprit_uuids,duration_ms,attempts,message; a culprit of
// two devices is "0;1".
std::string FormatFleetCsv(const FleetReport& report);
// One <testsuite name="colltest.fleet">, one <testcase> per node: <failure> for WRONG and HANG,
// <error> for ERROR, UNREACHABLE and UNAUTHENTICATED (the node's infrastructure broke or it was not
// checked, which is not the same news as a failed check), <skipped> for BUSY, and a WARN's message
// as <system-out>. The properties name each node's host and culprit devices' UUIDs.
std::string FormatFleetJunit(const FleetReport& report);

}  // namespace colltest::client
