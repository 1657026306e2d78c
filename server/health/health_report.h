// The Health RPC's answer from the runs a check made: one verdict per rank of the group and per
// pair, the bus bandwidth of each pair against its expected figure (level long), the self test,
// and one line naming the culprit.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "colltest/v1/colltest.pb.h"
#include "server/health/health_levels.h"

namespace colltest::server {

using PairKey = std::pair<uint32_t, uint32_t>;

// What a check ran. Runs that did not happen are absent.
struct HealthRuns {
  std::vector<uint32_t> devices;               // the group, rank order
  bool pairs = false;                          // every pair was checked
  std::vector<colltest::v1::RunResult> group;  // the profile, then each stress
  std::map<PairKey, absl::StatusOr<colltest::v1::RunResult>> pair_runs;
  std::map<PairKey, absl::StatusOr<colltest::v1::RunResult>> bandwidth_runs;  // level long
  std::vector<PairKey> bandwidth_skipped_same_gpu;        // pairs of slots of one GPU: no link
  std::optional<colltest::v1::HealthSelfTest> self_test;  // levels standard and long
  std::string self_test_run_id;                           // "" when it did not run
};

struct HealthReportContext {
  double warn_ratio = 1.5;
  const colltest::v1::MachineIdentity* machine = nullptr;  // not owned; null: no link kinds
  const ExpectedBandwidth* expected = nullptr;             // not owned; null: no figures
};

// Everything but `groups`, `wall_ms` and `level`, which the checker fills in. The self test's
// planted HANG is not a verdict on the node: its case is left out of `cases` and of the status,
// and only a self test that failed changes them (ERROR: hang detection is broken).
colltest::v1::HealthResponse BuildHealthReport(const HealthRuns& runs,
                                               const HealthReportContext& context);

}  // namespace colltest::server
