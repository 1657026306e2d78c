#include "server/health_check.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/fault_spec.h"
#include "common/status_macros.h"
#include "server/case_merge.h"
#include "server/names.h"
#include "server/validation.h"

namespace colltest::server {

namespace v1 = ::colltest::v1;

namespace {

constexpr double kDefaultWarnRatio = 1.5;
// One short and one medium batch at a hidden size every variant runs at every world size: the
// short one is latency-bound (barriers, flags), the medium one moves enough data to load the
// links. The cpu backend gets a smaller medium case: it checks the protocol paths, and eight
// ranks share two cores in CI.
constexpr uint32_t kShortRows = 1;
constexpr uint32_t kGpuHidden = 7168;
constexpr uint32_t kGpuMediumRows = 128;
constexpr uint32_t kCpuHidden = 1024;
constexpr uint32_t kCpuMediumRows = 32;

using PairKey = std::pair<uint32_t, uint32_t>;

bool Worse(v1::CaseStatus a, v1::CaseStatus b) { return StatusSeverity(a) > StatusSeverity(b); }

// UNSUPPORTED is a property of the variant, not of the hardware: it counts as healthy.
v1::CaseStatus HealthStatus(v1::CaseStatus s) {
  return s == v1::CASE_STATUS_UNSUPPORTED ? v1::CASE_STATUS_OK : s;
}

std::string CaseLabel(const v1::CaseResult& c) {
  return absl::StrCat(VariantName(c.variant()), " ", ModeName(c.mode()), " m=", c.m());
}

// Folds one case into a target: the worst status with its message, and the latency samples.
struct TargetBuilder {
  v1::HealthTarget target;
  std::vector<double> log_latency;

  TargetBuilder() {
    target.set_status(v1::CASE_STATUS_OK);
    target.set_suspect_peer(-1);
  }

  void Add(v1::CaseStatus status, const std::string& message, int32_t suspect_device,
           const std::string& phase, double median_us) {
    status = HealthStatus(status);
    target.set_cases(target.cases() + 1);
    if (Worse(status, target.status())) {
      target.set_status(status);
      target.set_message(message);
      target.set_suspect_peer(suspect_device);
      target.set_phase(phase);
    }
    if (status == v1::CASE_STATUS_OK && median_us > 0) log_latency.push_back(std::log(median_us));
  }
  void Finish() {
    if (log_latency.empty()) return;
    double sum = 0;
    for (double l : log_latency) sum += l;
    target.set_latency_us(std::exp(sum / static_cast<double>(log_latency.size())));
  }
};

int32_t DeviceOf(int32_t rank, const std::vector<uint32_t>& devices) {
  if (rank < 0 || static_cast<size_t>(rank) >= devices.size()) return -1;
  return static_cast<int32_t>(devices[static_cast<size_t>(rank)]);
}

// Each target's latency against the median of its kind; above `warn_ratio` it is slow.
void MarkSlow(std::vector<v1::HealthTarget>& targets, double warn_ratio) {
  std::vector<double> latencies;
  for (const auto& t : targets) {
    if (t.latency_us() > 0) latencies.push_back(t.latency_us());
  }
  if (latencies.empty()) return;
  std::sort(latencies.begin(), latencies.end());
  const size_t half = latencies.size() / 2;
  const double median =
      latencies.size() % 2 == 1 ? latencies[half] : 0.5 * (latencies[half - 1] + latencies[half]);
  for (auto& t : targets) {
    if (t.latency_us() <= 0 || median <= 0) continue;
    t.set_median_ratio(t.latency_us() / median);
    t.set_slow(t.median_ratio() > warn_ratio);
  }
}

std::string PairName(const v1::HealthTarget& t) { return absl::StrJoin(t.devices(), "-"); }

absl::Status InvalidField(const std::string& what) { return absl::InvalidArgumentError(what); }

}  // namespace

HealthProfile HealthProfileFor(const std::string& backend,
                               const std::vector<v1::Variant>& variants) {
  HealthProfile profile;
  v1::SweepSpec& group = profile.group;
  const bool cpu = backend == "cpu";
  group.add_m(kShortRows);
  group.add_m(cpu ? kCpuMediumRows : kGpuMediumRows);
  group.add_n(cpu ? kCpuHidden : kGpuHidden);
  group.set_dtype(v1::DTYPE_BF16);
  // Graph replay is how serving stacks call these kernels on GPUs; the cpu backend has no graphs
  // worth the name, so it checks the eager path.
  group.add_modes(cpu ? v1::MODE_EAGER : v1::MODE_GRAPH);
  // Half the elements are +-0.0: a producer that forgets to canonicalise -0.0 hangs its peers.
  group.set_pattern(v1::PATTERN_NEG_ZERO);
  group.set_tolerance(v1::TOLERANCE_STRICT);
  group.set_warmup(2);
  group.set_iters(10);
  group.set_stop_on_failure(true);
  group.set_label("health");
  for (v1::Variant v : variants) {
    if (v != v1::VARIANT_AUTO) group.add_variants(v);
  }
  // A pair needs only one variant per protocol family to show a bad link: barriers and flags.
  profile.pair = group;
  profile.pair.clear_variants();
  profile.pair.add_variants(v1::VARIANT_ONE_STAGE);
  profile.pair.add_variants(v1::VARIANT_LAMPORT);
  profile.pair.set_label("health pair");
  return profile;
}

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

HealthChecker::HealthChecker(RunExecutor* executor, const WorkerPool* pool, std::string backend,
                             std::vector<v1::Variant> variants)
    : executor_(executor), pool_(pool), profile_(HealthProfileFor(backend, variants)) {}

absl::StatusOr<v1::HealthResponse> HealthChecker::Check(const v1::HealthRequest& request,
                                                        RunObserver& observer,
                                                        const std::string& owner) const {
  const absl::Time start = absl::Now();
  const ServerLimits& limits = executor_->limits();
  std::vector<uint32_t> devices(request.devices().begin(), request.devices().end());
  if (devices.empty()) devices = limits.devices;
  if (devices.empty()) return InvalidField("devices: this server has no device");
  if (std::set<uint32_t>(devices.begin(), devices.end()).size() != devices.size()) {
    return InvalidField("devices: a device is listed twice");
  }
  if (request.pairs() && devices.size() < 2) {
    return InvalidField(absl::StrCat("pairs: needs at least 2 devices, got ", devices.size()));
  }
  const double warn_ratio = request.warn_ratio() == 0 ? kDefaultWarnRatio : request.warn_ratio();
  if (!(warn_ratio > 1.0) || !std::isfinite(warn_ratio)) {
    return InvalidField(absl::StrCat("warn_ratio = ", request.warn_ratio(), ": must be > 1"));
  }
  // Up front, against the group's size and under this request's field name: the group's run
  // would refuse it too, but as spec.fault, and a bad rank would only be found there.
  COLLTEST_RETURN_IF_ERROR(
      ValidateFault("fault", request.fault(), static_cast<uint32_t>(devices.size()), limits));

  v1::SweepSpec group = profile_.group;
  group.set_world_size(static_cast<uint32_t>(devices.size()));
  group.mutable_devices()->Add(devices.begin(), devices.end());
  group.set_timeout_ms(request.timeout_ms());
  group.set_fault(request.fault());
  absl::StatusOr<v1::RunResult> group_run = executor_->Execute(group, observer, owner);
  if (!group_run.ok()) return group_run.status();

  // Pairs of one round share no device, so they run at once; the rounds follow each other.
  std::map<PairKey, absl::StatusOr<v1::RunResult>> pair_runs;
  if (request.pairs()) {
    for (const std::vector<PairKey>& round : PairRounds(devices)) {
      std::vector<absl::StatusOr<v1::RunResult>> results(round.size());
      std::vector<std::thread> threads;
      for (size_t i = 0; i < round.size(); ++i) {
        threads.emplace_back([&, i] {
          const auto [a, b] = round[i];
          v1::SweepSpec pair = profile_.pair;
          pair.set_world_size(2);
          pair.add_devices(a);
          pair.add_devices(b);
          pair.set_timeout_ms(request.timeout_ms());
          pair.set_fault(FaultForPair(request.fault(), devices, a, b));
          results[i] = executor_->Execute(pair, observer, owner);
        });
      }
      for (std::thread& t : threads) t.join();
      for (size_t i = 0; i < round.size(); ++i) pair_runs.emplace(round[i], std::move(results[i]));
    }
  }

  v1::HealthResponse response;
  v1::CaseStatus worst = v1::CASE_STATUS_OK;
  std::string first_failure;
  response.add_run_ids(group_run->run_id());

  std::vector<TargetBuilder> ranks(devices.size());
  for (size_t r = 0; r < devices.size(); ++r) ranks[r].target.add_devices(devices[r]);
  for (const v1::CaseResult& c : group_run->cases()) {
    *response.add_cases() = c;
    if (Worse(HealthStatus(c.status()), worst)) {
      worst = HealthStatus(c.status());
      first_failure = absl::StrCat(c.message(), " (", CaseLabel(c), ")");
    }
    for (const v1::RankResult& r : c.ranks()) {
      if (r.rank() >= ranks.size()) continue;
      ranks[r.rank()].Add(r.status(), r.message(), DeviceOf(r.suspect_peer(), devices), r.phase(),
                          r.timing().median_us());
    }
  }
  std::vector<v1::HealthTarget> rank_targets;
  for (TargetBuilder& b : ranks) {
    b.Finish();
    rank_targets.push_back(b.target);
  }
  MarkSlow(rank_targets, warn_ratio);

  std::vector<v1::HealthTarget> pair_targets;
  std::vector<std::string> failing_pairs;
  std::map<uint32_t, int> failures_per_device;
  std::set<uint32_t> in_healthy_pair;
  for (auto& [key, run] : pair_runs) {
    TargetBuilder b;
    b.target.add_devices(key.first);
    b.target.add_devices(key.second);
    const std::vector<uint32_t> pair_devices = {key.first, key.second};
    if (!run.ok()) {
      b.Add(v1::CASE_STATUS_ERROR, std::string(run.status().message()), -1, "", 0);
    } else {
      response.add_run_ids(run->run_id());
      for (const v1::CaseResult& c : run->cases()) {
        *response.add_cases() = c;
        int32_t suspect = -1;
        std::string phase;
        for (const v1::RankResult& r : c.ranks()) {
          if (r.status() == v1::CASE_STATUS_HANG && r.suspect_peer() >= 0 && suspect < 0) {
            suspect = DeviceOf(r.suspect_peer(), pair_devices);
            phase = r.phase();
          }
        }
        b.Add(c.status(),
              absl::StrCat(c.message(), " (", CaseLabel(c), "; rank 0 = device ", key.first,
                           ", rank 1 = device ", key.second, ")"),
              suspect, phase, c.timing().median_us());
      }
    }
    b.Finish();
    if (Worse(b.target.status(), worst)) {
      worst = b.target.status();
      if (first_failure.empty()) first_failure = b.target.message();
    }
    if (b.target.status() == v1::CASE_STATUS_OK) {
      in_healthy_pair.insert(key.first);
      in_healthy_pair.insert(key.second);
    } else {
      failing_pairs.push_back(PairName(b.target));
      ++failures_per_device[key.first];
      ++failures_per_device[key.second];
    }
    pair_targets.push_back(b.target);
  }
  MarkSlow(pair_targets, warn_ratio);

  for (auto& t : rank_targets) *response.add_ranks() = std::move(t);
  for (auto& t : pair_targets) *response.add_pairs() = std::move(t);
  for (const v1::GroupHealth& g : pool_->GroupStates()) *response.add_groups() = g;
  response.set_status(worst);

  std::string message;
  if (worst == v1::CASE_STATUS_OK) {
    message = absl::StrCat("healthy: ", devices.size(), " ranks",
                           request.pairs() ? absl::StrCat(", ", pair_targets.size(), " pairs") : "",
                           ", ", response.cases_size(), " cases");
  } else {
    message = absl::StrCat(CaseStatusName(worst), ": ", first_failure);
  }
  if (!failing_pairs.empty()) {
    absl::StrAppend(&message, "; pairs failing: ", absl::StrJoin(failing_pairs, ", "));
    // A device in every failing pair and in no healthy one is the one to pull.
    std::vector<uint32_t> isolated;
    for (const auto& [device, count] : failures_per_device) {
      if (count == static_cast<int>(failing_pairs.size()) && !in_healthy_pair.count(device)) {
        isolated.push_back(device);
      }
    }
    if (isolated.size() == 1) absl::StrAppend(&message, "; isolated: device ", isolated[0]);
  }
  std::vector<std::string> slow;
  for (const auto& t : response.ranks()) {
    if (t.slow())
      slow.push_back(absl::StrFormat("device %u at %.2f", t.devices(0), t.median_ratio()));
  }
  for (const auto& t : response.pairs()) {
    if (t.slow()) slow.push_back(absl::StrFormat("pair %s at %.2f", PairName(t), t.median_ratio()));
  }
  if (!slow.empty()) {
    absl::StrAppend(&message, "; WARN slow (x median): ", absl::StrJoin(slow, ", "));
  }
  response.set_message(message);
  response.set_wall_ms(absl::ToDoubleMilliseconds(absl::Now() - start));
  return response;
}

}  // namespace colltest::server
