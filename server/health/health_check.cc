#include "server/health/health_check.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/fault_spec.h"
#include "common/status_macros.h"
#include "server/devices/device_placement.h"
#include "server/health/health_report.h"
#include "server/net/caller_key.h"
#include "server/runs/validation.h"
#include "server/workers/verdict.h"

namespace colltest::server {

namespace v1 = ::colltest::v1;

namespace {

constexpr double kDefaultWarnRatio = 1.5;

absl::Status InvalidField(const std::string& what) { return absl::InvalidArgumentError(what); }

// A request that passed its checks: the group's devices and the ratio that makes a target slow.
struct CheckInput {
  std::vector<uint32_t> devices;
  double warn_ratio = kDefaultWarnRatio;
};

// The kernel plugins a check names run beside the level's variants in every run of the check but
// the self test (which checks the detection, not a kernel).
void AddPlugins(const v1::HealthRequest& request, HealthPlan& plan) {
  std::vector<v1::SweepSpec*> specs = {&plan.group, &plan.pair};
  for (v1::SweepSpec& s : plan.group_stress) specs.push_back(&s);
  for (v1::SweepSpec* spec : specs) {
    for (const std::string& name : request.plugins()) spec->add_plugins(name);
  }
}

absl::StatusOr<CheckInput> ValidateRequest(const v1::HealthRequest& request,
                                           const ServerLimits& limits) {
  CheckInput input;
  input.devices.assign(request.devices().begin(), request.devices().end());
  std::vector<uint32_t>& devices = input.devices;
  if (devices.empty()) devices = limits.devices;
  if (devices.empty()) return InvalidField("devices: this server has no device");
  if (std::set<uint32_t>(devices.begin(), devices.end()).size() != devices.size()) {
    return InvalidField("devices: a device is listed twice");
  }
  if (request.pairs() && devices.size() < 2) {
    return InvalidField(absl::StrCat("pairs: needs at least 2 devices, got ", devices.size()));
  }
  input.warn_ratio = request.warn_ratio() == 0 ? kDefaultWarnRatio : request.warn_ratio();
  if (!(input.warn_ratio > 1.0) || !std::isfinite(input.warn_ratio)) {
    return InvalidField(absl::StrCat("warn_ratio = ", request.warn_ratio(), ": must be > 1"));
  }
  // Up front, against the group's size and under this request's field name: the group's run
  // would refuse it too, but as spec.fault, and a bad rank would only be found there.
  COLLTEST_RETURN_IF_ERROR(
      ValidateFault("fault", request.fault(), static_cast<uint32_t>(devices.size()), limits));
  COLLTEST_RETURN_IF_ERROR(ValidatePlugins(request.plugins(), limits));
  return input;
}

// Runs the specs of one check: priority runs (a verdict must not wait behind other clients'
// sweeps; run_queue.h) of the caller, with its timeout and its force. `claim` makes them one
// check of the caller, which passes each other run once.
struct CheckRunner {
  RunExecutor* executor;
  RunObserver& observer;
  const std::string& owner;
  const v1::HealthRequest& request;
  PriorityClaim claim;

  absl::StatusOr<v1::RunResult> Run(v1::SweepSpec spec, const std::vector<uint32_t>& devices,
                                    const std::string& fault) const {
    spec.set_world_size(static_cast<uint32_t>(devices.size()));
    spec.clear_devices();
    spec.mutable_devices()->Add(devices.begin(), devices.end());
    if (spec.timeout_ms() == 0) spec.set_timeout_ms(request.timeout_ms());
    spec.set_fault(fault);
    spec.set_force(request.force());
    return executor->Execute(spec, observer, owner, RunPriority::kPriority, claim);
  }
};

// Every case OK or UNSUPPORTED: a later stage on the same devices is worth running.
bool AllHealthy(const absl::StatusOr<v1::RunResult>& run) {
  if (!run.ok()) return false;
  for (const v1::CaseResult& c : run->cases()) {
    if (IsFailure(c.status())) return false;
  }
  return true;
}

// The group profile (with the request's fault), then each stress. A stress after a failed profile
// would only repeat its failure, a timeout at a time: skipped.
absl::Status RunGroup(const HealthPlan& plan, const CheckRunner& runner, HealthRuns& runs) {
  absl::StatusOr<v1::RunResult> profile =
      runner.Run(plan.group, runs.devices, runner.request.fault());
  if (!profile.ok()) return profile.status();
  const bool healthy = AllHealthy(profile);
  runs.group.push_back(*std::move(profile));
  if (!healthy) return absl::OkStatus();
  for (const v1::SweepSpec& stress : plan.group_stress) {
    absl::StatusOr<v1::RunResult> run = runner.Run(stress, runs.devices, "");
    if (!run.ok()) return run.status();
    const bool passed = AllHealthy(run);
    runs.group.push_back(*std::move(run));
    if (!passed) break;
  }
  return absl::OkStatus();
}

// Pairs of one round share no device, so they run at once; the rounds follow each other.
void RunPairs(const HealthPlan& plan, const CheckRunner& runner, HealthRuns& runs) {
  for (const std::vector<PairKey>& round : PairRounds(runs.devices)) {
    std::vector<absl::StatusOr<v1::RunResult>> results(round.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < round.size(); ++i) {
      threads.emplace_back([&, i] {
        const auto [a, b] = round[i];
        results[i] =
            runner.Run(plan.pair, {a, b}, FaultForPair(runner.request.fault(), runs.devices, a, b));
      });
    }
    for (std::thread& t : threads) t.join();
    for (size_t i = 0; i < round.size(); ++i) {
      runs.pair_runs.emplace(round[i], std::move(results[i]));
    }
  }
}

// One pair at a time, unlike the profiles: pairs that share a switch or a root port would share
// its bandwidth too, and each pair's figure must be its own link's. A failed pair is left out, and
// so is a pair of two slots of one GPU (--ranks-per-gpu): it has no link to measure.
void RunBandwidth(const HealthPlan& plan, const CheckRunner& runner,
                  const v1::MachineIdentity& machine, HealthRuns& runs) {
  if (!plan.pair_bandwidth.has_value()) return;
  for (const auto& [key, run] : runs.pair_runs) {
    if (!AllHealthy(run)) continue;
    if (PairLinkOf(machine, key.first, key.second).kind == kSameGpuLink) {
      runs.bandwidth_skipped_same_gpu.push_back(key);
      continue;
    }
    runs.bandwidth_runs.emplace(key, runner.Run(*plan.pair_bandwidth, {key.first, key.second}, ""));
  }
}

// First of all the check's runs: the group recovers from the planted hang before the profile runs
// on it, so the profile proves the recovery too and the group is serving again when the check
// answers.
absl::Status RunSelfTest(const HealthPlan& plan, const HealthProfile& profile,
                         const CheckRunner& runner, HealthRuns& runs) {
  if (!plan.self_test) return absl::OkStatus();
  if (!plan.self_test_allowed) {
    runs.self_test = SelfTestNotRun(kSelfTestNotAllowed);
    return absl::OkStatus();
  }
  if (runs.devices.size() < 2) {
    runs.self_test =
        SelfTestNotRun("needs at least 2 devices: a hang is a rank its peers wait for");
    return absl::OkStatus();
  }
  const v1::SweepSpec spec = SelfTestSpec(profile, runs.devices);
  absl::StatusOr<v1::RunResult> run = runner.Run(spec, runs.devices, spec.fault());
  if (!run.ok()) return run.status();
  runs.self_test = EvaluateSelfTest(*run, runs.devices.back());
  runs.self_test_run_id = run->run_id();
  return absl::OkStatus();
}

}  // namespace

std::vector<std::vector<PairKey>> PairRounds(const std::vector<uint32_t>& devices) {
  std::vector<std::vector<PairKey>> rounds;
  if (devices.size() < 2) return rounds;
  // Circle method: fix the first seat, rotate the others; an odd count gets a bye seat.
  std::vector<int64_t> seats(devices.begin(), devices.end());
  if (seats.size() % 2 == 1) seats.push_back(-1);
  const size_t count = seats.size();
  for (size_t round = 0; round + 1 < count; ++round) {
    std::vector<PairKey>& pairs = rounds.emplace_back();
    for (size_t i = 0; i < count / 2; ++i) {
      const int64_t a = seats[i];
      const int64_t b = seats[count - 1 - i];
      if (a < 0 || b < 0) continue;
      pairs.emplace_back(static_cast<uint32_t>(std::min(a, b)),
                         static_cast<uint32_t>(std::max(a, b)));
    }
    std::rotate(seats.begin() + 1, seats.end() - 1, seats.end());
  }
  return rounds;
}

std::string FaultForPair(const std::string& fault, const std::vector<uint32_t>& group_devices,
                         uint32_t a, uint32_t b) {
  // Check() refuses a bad fault before any pair runs; one that gets here anyway is passed on as
  // is, for the validation of the pair's run to name it.
  absl::StatusOr<common::FaultSpec> parsed =
      common::ParseFaultSpec("fault", fault, static_cast<uint32_t>(group_devices.size()));
  if (!parsed.ok() || parsed->rank < 0) return fault;
  const uint32_t device = group_devices[static_cast<size_t>(parsed->rank)];
  if (device != a && device != b) return "";
  parsed->rank = device == a ? 0 : 1;
  return common::FormatFaultSpec(*parsed);
}

HealthChecker::HealthChecker(RunExecutor* executor, colltest::worker::v1::Capabilities capabilities,
                             v1::MachineIdentity machine, ExpectedBandwidth expected)
    : executor_(executor),
      capabilities_(std::move(capabilities)),
      profile_(HealthProfileFor(capabilities_)),
      machine_(std::move(machine)),
      expected_(std::move(expected)) {}

absl::StatusOr<v1::HealthResponse> HealthChecker::Check(const v1::HealthRequest& request,
                                                        RunObserver& observer,
                                                        const std::string& owner) const {
  const absl::Time start = absl::Now();
  const ServerLimits& limits = executor_->limits();
  COLLTEST_ASSIGN_OR_RETURN(const CheckInput input, ValidateRequest(request, limits));
  HealthPlan plan = HealthPlanFor(request.level(), profile_, capabilities_,
                                  limits.allow_fault_injection, limits.max_case_bytes);
  AddPlugins(request, plan);
  const CheckRunner runner{executor_, observer, owner, request,
                           PriorityClaim{CallerKey(owner), next_check_.fetch_add(1)}};
  HealthRuns runs;
  runs.devices = input.devices;
  runs.pairs = request.pairs() || plan.all_pairs;
  COLLTEST_RETURN_IF_ERROR(RunSelfTest(plan, profile_, runner, runs));
  COLLTEST_RETURN_IF_ERROR(RunGroup(plan, runner, runs));
  if (runs.pairs) RunPairs(plan, runner, runs);
  RunBandwidth(plan, runner, machine_, runs);

  v1::HealthResponse response =
      BuildHealthReport(runs, HealthReportContext{input.warn_ratio, &machine_, &expected_});
  // As ListDevices answers them: with each group's last hang, which this check may have made.
  for (v1::GroupHealth& g : executor_->GroupsWithLastHangs()) *response.add_groups() = std::move(g);
  response.set_level(plan.level);
  response.set_wall_ms(absl::ToDoubleMilliseconds(absl::Now() - start));
  return response;
}

}  // namespace colltest::server
