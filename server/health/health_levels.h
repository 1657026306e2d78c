// The levels of the Health RPC (HealthRequest.level), like `dcgmi diag -r 1|2|3`
// (docs/health-levels.md): what each level runs on a backend, the hang-detection self test of
// level standard, and the expected bus bandwidth that level long compares every pair with.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "colltest/v1/colltest.pb.h"
#include "colltest/v1/worker.pb.h"
#include "server/runs/tune_table.h"
#include "server/runs/validation.h"

namespace colltest::server {

// What the quick check runs on a backend with `capabilities` (what it announced): the shapes, the
// mode and the variants of the group profile and of each pair. The other levels build on it. A
// backend with virtual devices (reports_devices false: the cpu backend, ranks sharing a few
// cores) gets smaller cases and fewer calls; one without graphs (graph_mode false) runs eager.
struct HealthProfile {
  colltest::v1::SweepSpec group;  // devices, fault and timeout are filled in per check
  colltest::v1::SweepSpec pair;
};
HealthProfile HealthProfileFor(const colltest::worker::v1::Capabilities& capabilities);

// Bus bandwidth below this share of the expected figure is a WARN (below_expected). A pair that
// reaches 80% is within what clocks, the variant and a busy host move from run to run; a link
// that trained at a lower width or speed, or that falls back to the host, lands far below it.
inline constexpr double kBelowExpectedRatio = 0.8;
// The file of expected figures, in the server's tune directory (--tune-dir), which the tune
// table loader leaves alone.
inline constexpr const char* kExpectedBusbwFile = kExpectedBusbwFileName;
// The planted hang of the self test waits this long per wait before it is a HANG: long enough
// for a healthy rank on a loaded host, short enough to keep level standard quick.
inline constexpr uint32_t kSelfTestTimeoutMs = 1000;

// What a check of one level runs. Devices, timeout and fault are filled in per check.
struct HealthPlan {
  colltest::v1::HealthLevel level = colltest::v1::HEALTH_LEVEL_QUICK;  // never UNSPECIFIED
  bool all_pairs = false;  // every pair whatever HealthRequest.pairs says
  colltest::v1::SweepSpec group;
  colltest::v1::SweepSpec pair;
  std::vector<colltest::v1::SweepSpec> group_stress;      // run on the group, in order
  std::optional<colltest::v1::SweepSpec> pair_bandwidth;  // level long: one run per pair
  bool self_test = false;          // the level runs the hang-detection self test ...
  bool self_test_allowed = false;  // ... and the server allows the fault it plants
};

// The plan of `level` (UNSPECIFIED is QUICK) over `profile` (HealthProfileFor(capabilities)).
// Shapes are capped so that a case stays within `max_case_bytes` per rank.
HealthPlan HealthPlanFor(colltest::v1::HealthLevel level, const HealthProfile& profile,
                         const colltest::worker::v1::Capabilities& capabilities, bool allow_faults,
                         uint64_t max_case_bytes = kDefaultMaxCaseBytes);

// The self test's run on `devices` (at least 2): one small case in which the last device's rank
// never arrives (missing_rank), so every other rank must time out waiting for it.
colltest::v1::SweepSpec SelfTestSpec(const HealthProfile& profile,
                                     const std::vector<uint32_t>& devices);

// The self test as it ran: passed only when a case of `run` is a HANG whose culprit (HangCulprit)
// is `planted_device`.
colltest::v1::HealthSelfTest EvaluateSelfTest(const colltest::v1::RunResult& run,
                                              uint32_t planted_device);

// A self test that did not run, and why.
colltest::v1::HealthSelfTest SelfTestNotRun(const std::string& why);
inline constexpr char kSelfTestNotAllowed[] =
    "fault injection not allowed on this server (--allow-fault-injection)";

// The bus bandwidth a pair of devices should reach, by device model (Device.name) and link kind
// (Link.kind), in GB/s: figures measured on a healthy machine (docs/health-levels.md).
class ExpectedBandwidth {
 public:
  ExpectedBandwidth() = default;

  // {"MODEL": {"KIND": GBPS, ...}, ...}; errors are INVALID_ARGUMENT naming `source` and the key.
  static absl::StatusOr<ExpectedBandwidth> Parse(const std::string& json,
                                                 const std::string& source);
  // kExpectedBusbwFile in `tune_dir`; no directory or no file is a machine without figures.
  static absl::StatusOr<ExpectedBandwidth> Load(const std::string& tune_dir);

  std::optional<double> Lookup(const std::string& model, const std::string& kind) const;
  bool empty() const { return figures_.empty(); }

 private:
  std::map<std::pair<std::string, std::string>, double> figures_;
};

// The model of device `a` and the kind of the link from `a` to `b` as `machine` records them;
// "unknown" for what it does not record.
struct PairLink {
  std::string model;
  std::string kind;
};

PairLink PairLinkOf(const colltest::v1::MachineIdentity& machine, uint32_t a, uint32_t b);

}  // namespace colltest::server
