#include "server/health/health_report.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/names.h"
#include "server/workers/verdict.h"

namespace colltest::server {

namespace v1 = ::colltest::v1;

namespace {

bool Worse(v1::CaseStatus a, v1::CaseStatus b) { return StatusSeverity(a) > StatusSeverity(b); }

// UNSUPPORTED is a property of the variant, not of the hardware: it counts as healthy.
v1::CaseStatus HealthStatus(v1::CaseStatus s) {
  return s == v1::CASE_STATUS_UNSUPPORTED ? v1::CASE_STATUS_OK : s;
}

std::string CaseLabel(const v1::CaseResult& c) {
  return absl::StrCat(common::KernelName(c), " ", common::ModeName(c.mode()), " m=", c.m());
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

// The worst status over the check, the failure it names, and what the pairs isolate.
struct Verdict {
  v1::CaseStatus worst = v1::CASE_STATUS_OK;
  std::string first_failure;
  std::vector<std::string> failing_pairs;
  std::map<uint32_t, int> failures_per_device;
  std::set<uint32_t> in_healthy_pair;
  std::set<std::string> no_figure;  // "MODEL/KIND" of pairs without an expected figure
};

std::vector<v1::HealthTarget> RankTargets(const HealthRuns& runs, double warn_ratio,
                                          v1::HealthResponse& response, Verdict& verdict) {
  std::vector<TargetBuilder> ranks(runs.devices.size());
  for (size_t r = 0; r < runs.devices.size(); ++r) ranks[r].target.add_devices(runs.devices[r]);
  for (const v1::RunResult& run : runs.group) {
    response.add_run_ids(run.run_id());
    for (const v1::CaseResult& c : run.cases()) {
      *response.add_cases() = c;
      if (Worse(HealthStatus(c.status()), verdict.worst)) {
        verdict.worst = HealthStatus(c.status());
        verdict.first_failure = absl::StrCat(c.message(), " (", CaseLabel(c), ")");
      }
      for (const v1::RankResult& r : c.ranks()) {
        if (r.rank() >= ranks.size()) continue;
        ranks[r.rank()].Add(r.status(), r.message(), DeviceOf(r.suspect_peer(), runs.devices),
                            r.phase(), r.timing().median_us());
      }
    }
  }
  std::vector<v1::HealthTarget> targets;
  for (TargetBuilder& b : ranks) {
    b.Finish();
    targets.push_back(b.target);
  }
  MarkSlow(targets, warn_ratio);
  return targets;
}

// Folds the cases of one run on the pair `key` (its profile or its bandwidth case) into `b`.
void FoldPairRun(const absl::StatusOr<v1::RunResult>& run, const PairKey& key, TargetBuilder& b,
                 v1::HealthResponse& response) {
  if (!run.ok()) {
    b.Add(v1::CASE_STATUS_ERROR, std::string(run.status().message()), -1, "", 0);
    return;
  }
  const std::vector<uint32_t> pair_devices = {key.first, key.second};
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

// The pair's best bus bandwidth over its bandwidth cases, against the figure expected of its
// model and link kind.
void SetBandwidth(const absl::StatusOr<v1::RunResult>& run, const PairKey& key,
                  const HealthReportContext& context, v1::HealthTarget& target, Verdict& verdict) {
  if (!run.ok()) return;
  double best = 0;
  for (const v1::CaseResult& c : run->cases()) {
    if (c.status() == v1::CASE_STATUS_OK) best = std::max(best, c.busbw_gbps());
  }
  target.set_busbw_gbps(best);
  const PairLink link = context.machine != nullptr
                            ? PairLinkOf(*context.machine, key.first, key.second)
                            : PairLink{"unknown", "unknown"};
  const std::optional<double> expected =
      context.expected != nullptr ? context.expected->Lookup(link.model, link.kind) : std::nullopt;
  if (!expected.has_value()) {
    verdict.no_figure.insert(absl::StrCat(link.model, "/", link.kind));
    return;
  }
  target.set_expected_busbw_gbps(*expected);
  target.set_below_expected(best < kBelowExpectedRatio * *expected);
}

constexpr char kSameGpuSkipReason[] =
    "busbw skipped: slots of one GPU (--ranks-per-gpu) have no link to measure";

bool SkippedAsSameGpu(const HealthRuns& runs, const PairKey& key) {
  const auto& skipped = runs.bandwidth_skipped_same_gpu;
  return std::find(skipped.begin(), skipped.end(), key) != skipped.end();
}

std::vector<v1::HealthTarget> PairTargets(const HealthRuns& runs,
                                          const HealthReportContext& context,
                                          v1::HealthResponse& response, Verdict& verdict) {
  std::vector<v1::HealthTarget> targets;
  for (const auto& [key, run] : runs.pair_runs) {
    TargetBuilder b;
    b.target.add_devices(key.first);
    b.target.add_devices(key.second);
    FoldPairRun(run, key, b, response);
    auto bandwidth = runs.bandwidth_runs.find(key);
    if (bandwidth != runs.bandwidth_runs.end()) FoldPairRun(bandwidth->second, key, b, response);
    b.Finish();
    if (bandwidth != runs.bandwidth_runs.end()) {
      SetBandwidth(bandwidth->second, key, context, b.target, verdict);
    } else if (SkippedAsSameGpu(runs, key) && b.target.message().empty()) {
      // The pair says itself why it has no figure, as the report's message does for all of them.
      b.target.set_message(kSameGpuSkipReason);
    }
    if (Worse(b.target.status(), verdict.worst)) {
      verdict.worst = b.target.status();
      if (verdict.first_failure.empty()) verdict.first_failure = b.target.message();
    }
    if (b.target.status() == v1::CASE_STATUS_OK) {
      verdict.in_healthy_pair.insert(key.first);
      verdict.in_healthy_pair.insert(key.second);
    } else {
      verdict.failing_pairs.push_back(PairName(b.target));
      ++verdict.failures_per_device[key.first];
      ++verdict.failures_per_device[key.second];
    }
    targets.push_back(b.target);
  }
  MarkSlow(targets, context.warn_ratio);
  return targets;
}

// "; pairs failing: ...; isolated: device D" when pairs failed.
std::string PairsLine(const Verdict& verdict) {
  if (verdict.failing_pairs.empty()) return "";
  std::string line = absl::StrCat("; pairs failing: ", absl::StrJoin(verdict.failing_pairs, ", "));
  // A device in every failing pair and in no healthy one is the one to pull.
  std::vector<uint32_t> isolated;
  for (const auto& [device, count] : verdict.failures_per_device) {
    if (count == static_cast<int>(verdict.failing_pairs.size()) &&
        !verdict.in_healthy_pair.count(device)) {
      isolated.push_back(device);
    }
  }
  if (isolated.size() == 1) absl::StrAppend(&line, "; isolated: device ", isolated[0]);
  return line;
}

// The WARNs: slow ranks and pairs, and pairs below their expected bandwidth.
std::string WarnLines(const v1::HealthResponse& response, const Verdict& verdict,
                      const HealthRuns& runs) {
  std::vector<std::string> slow, below;
  for (const auto& t : response.ranks()) {
    if (t.slow())
      slow.push_back(absl::StrFormat("device %u at %.2f", t.devices(0), t.median_ratio()));
  }
  for (const auto& t : response.pairs()) {
    if (t.slow()) slow.push_back(absl::StrFormat("pair %s at %.2f", PairName(t), t.median_ratio()));
    if (t.below_expected()) {
      below.push_back(absl::StrFormat("pair %s at %.1f of %.1f GB/s", PairName(t), t.busbw_gbps(),
                                      t.expected_busbw_gbps()));
    }
  }
  std::string line;
  if (!slow.empty()) absl::StrAppend(&line, "; WARN slow (x median): ", absl::StrJoin(slow, ", "));
  if (!below.empty()) {
    absl::StrAppend(
        &line,
        absl::StrFormat("; WARN busbw below %.0f%% of expected: ", 100 * kBelowExpectedRatio),
        absl::StrJoin(below, ", "));
  }
  if (!verdict.no_figure.empty()) {
    absl::StrAppend(&line, "; busbw: no expected figure for ",
                    absl::StrJoin(verdict.no_figure, ", "));
  }
  if (!runs.bandwidth_skipped_same_gpu.empty()) {
    std::vector<std::string> pairs;
    for (const auto& [a, b] : runs.bandwidth_skipped_same_gpu)
      pairs.push_back(absl::StrCat(a, "-", b));
    absl::StrAppend(&line, "; busbw skipped for pairs ", absl::StrJoin(pairs, ", "),
                    ": slots of one GPU (--ranks-per-gpu) have no link to measure");
  }
  return line;
}

std::string SelfTestLine(const std::optional<v1::HealthSelfTest>& self_test) {
  if (!self_test.has_value()) return "";
  if (!self_test->ran()) return absl::StrCat("; hang self test not run: ", self_test->message());
  return self_test->passed() ? "; hang self test passed" : "";
}

}  // namespace

v1::HealthResponse BuildHealthReport(const HealthRuns& runs, const HealthReportContext& context) {
  v1::HealthResponse response;
  Verdict verdict;
  std::vector<v1::HealthTarget> ranks = RankTargets(runs, context.warn_ratio, response, verdict);
  std::vector<v1::HealthTarget> pairs = PairTargets(runs, context, response, verdict);
  for (auto& t : ranks) *response.add_ranks() = std::move(t);
  for (auto& t : pairs) *response.add_pairs() = std::move(t);
  if (!runs.self_test_run_id.empty()) response.add_run_ids(runs.self_test_run_id);

  std::string message;
  if (verdict.worst == v1::CASE_STATUS_OK) {
    message = absl::StrCat("healthy: ", runs.devices.size(), " ranks",
                           runs.pairs ? absl::StrCat(", ", response.pairs_size(), " pairs") : "",
                           ", ", response.cases_size(), " cases");
  } else {
    message = absl::StrCat(common::CaseStatusName(verdict.worst), ": ", verdict.first_failure);
  }
  absl::StrAppend(&message, PairsLine(verdict), WarnLines(response, verdict, runs),
                  SelfTestLine(runs.self_test));
  response.set_status(verdict.worst);
  if (runs.self_test.has_value()) {
    *response.mutable_self_test() = *runs.self_test;
    if (runs.self_test->ran() && !runs.self_test->passed()) {
      // A checker that cannot see a hang would call a hung node healthy: no verdict can stand.
      response.set_status(v1::CASE_STATUS_ERROR);
      message = absl::StrCat("ERROR: hang detection is broken: ", runs.self_test->message(), "; ",
                             message);
    }
  }
  response.set_message(message);
  return response;
}

}  // namespace colltest::server
