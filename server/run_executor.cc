#include "server/run_executor.h"

#include <functional>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "server/case_merge.h"
#include "server/names.h"
#include "server/sweep_plan.h"
#include "spdlog/spdlog.h"

namespace colltest::server {

namespace v1 = ::colltest::v1;
namespace wv1 = ::colltest::worker::v1;

namespace {

// "12 cases: 10 OK, 1 WRONG, 1 HANG", in severity order so the worst is easy to spot last.
std::string CountByStatus(const v1::RunResult& run) {
  std::map<int, std::pair<std::string, int>> counts;
  for (const v1::CaseResult& c : run.cases()) {
    auto& [name, count] = counts[StatusSeverity(c.status())];
    name = CaseStatusName(c.status());
    ++count;
  }
  std::vector<std::string> parts;
  for (const auto& [severity, entry] : counts) {
    parts.push_back(absl::StrCat(entry.second, " ", entry.first));
  }
  return absl::StrCat(run.cases_size(), run.cases_size() == 1 ? " case" : " cases",
                      parts.empty() ? "" : ": ", absl::StrJoin(parts, ", "));
}

}  // namespace

RunExecutor::RunExecutor(ServerLimits limits, WorkerPool* pool, RunHistory* history,
                         DeviceArbiter* arbiter, Metrics* metrics, const TuneTables* tune)
    : limits_(std::move(limits)),
      pool_(pool),
      history_(history),
      arbiter_(arbiter),
      metrics_(metrics),
      tune_(tune),
      quota_(limits_.max_active_runs_per_owner) {}

std::optional<v1::CaseResult> RunExecutor::RunOne(
    uint32_t index, const std::vector<uint32_t>& devices, const wv1::CaseRequest& request,
    const std::function<bool()>& stop, uint32_t& pool_failures, absl::Status& last_failure) {
  wv1::CaseRequest concrete = request;
  std::optional<AutoChoice> choice;
  if (request.variant() == v1::VARIANT_AUTO) {
    const auto world = static_cast<uint32_t>(devices.size());
    if (tune_ != nullptr) {
      choice = tune_->Resolve(limits_.backend, world, request.dtype(), request.mode(), request.m(),
                              request.n());
    }
    if (!choice.has_value()) {
      return UnsupportedCase(
          index, devices, request,
          absl::StrCat("auto: no tune table for ", limits_.backend, " W=", world, " ",
                       DTypeName(request.dtype()),
                       " (measure one with `colltest tune` and put it in colltestd's --tune-dir)"));
    }
    concrete.set_variant(choice->variant);
  }
  absl::StatusOr<std::vector<v1::RankResult>> replies = pool_->RunCase(devices, concrete, stop);
  // Stopped while it ran: no verdict to record, and the run ends with the cases it finished.
  if (!replies.ok() && replies.status().code() == absl::StatusCode::kCancelled) return std::nullopt;
  v1::CaseResult result;
  if (replies.ok()) {
    result = MergeCase(index, devices, concrete, *std::move(replies));
  } else {
    // The pool tears the group down and respawns it for the next case; one bad case must not
    // cost the rest of the sweep.
    ++pool_failures;
    last_failure = replies.status();
    result = FailedCase(index, devices, concrete, replies.status());
  }
  if (choice.has_value()) {
    result.set_variant(v1::VARIANT_AUTO);
    result.set_resolved_variant(choice->variant);
    result.set_message(result.message().empty()
                           ? absl::StrCat("auto -> ", choice->why)
                           : absl::StrCat("auto -> ", choice->why, "; ", result.message()));
  }
  return result;
}

void RunExecutor::Count(const v1::CaseResult& result, const std::vector<uint32_t>& devices) {
  if (metrics_ != nullptr) metrics_->ObserveCase(result);
  if (result.status() != v1::CASE_STATUS_HANG) return;
  const std::vector<v1::RankResult> ranks(result.ranks().begin(), result.ranks().end());
  std::optional<uint32_t> culprit = HangCulprit(ranks);
  if (culprit.has_value() && *culprit >= devices.size()) culprit.reset();
  if (metrics_ != nullptr && culprit.has_value()) {
    metrics_->ObserveHang(*culprit, devices[*culprit]);
  }
  v1::GroupHealth hang;
  hang.set_last_hang(result.message());
  hang.set_last_hang_unix_ms(absl::ToUnixMillis(absl::Now()));
  hang.set_last_hang_device(culprit.has_value() ? static_cast<int32_t>(devices[*culprit]) : -1);
  std::lock_guard<std::mutex> lock(hangs_mu_);
  last_hangs_[devices] = std::move(hang);
}

void RunExecutor::AddLastHangs(std::vector<v1::GroupHealth>& groups) const {
  std::lock_guard<std::mutex> lock(hangs_mu_);
  for (v1::GroupHealth& group : groups) {
    auto it =
        last_hangs_.find(std::vector<uint32_t>(group.devices().begin(), group.devices().end()));
    if (it == last_hangs_.end()) continue;
    group.set_last_hang(it->second.last_hang());
    group.set_last_hang_unix_ms(it->second.last_hang_unix_ms());
    group.set_last_hang_device(it->second.last_hang_device());
  }
}

void RunExecutor::CountRuns() {
  if (metrics_ != nullptr) metrics_->SetRuns(arbiter_->waiting(), arbiter_->running());
}

std::string RunExecutor::StopReason(const std::string& run_id, RunObserver& observer) const {
  if (shutting_down_.load()) return "the server is shutting down";
  if (history_->CancelRequested(run_id)) return "cancelled by request";
  if (observer.ClientGone()) return observer.ClientGoneReason();
  return "";
}

absl::StatusOr<v1::RunResult> RunExecutor::Execute(const v1::SweepSpec& request,
                                                   RunObserver& observer, const std::string& owner,
                                                   RunPriority priority) {
  absl::StatusOr<v1::SweepSpec> spec = ValidateSpec(request, limits_);
  if (!spec.ok()) return spec.status();
  // Refused before it is recorded or queued: nothing is left to answer later.
  absl::StatusOr<OwnerQuota::Slot> slot = quota_.Take(owner);
  if (!slot.ok()) return slot.status();

  const uint64_t count = static_cast<uint64_t>(spec->m_size()) * spec->n_size() *
                         spec->variants_size() * spec->modes_size();
  const SweepPlan plan = PlanSweep(*spec, next_case_id_.fetch_add(count));
  const auto total = static_cast<uint32_t>(plan.cases.size());
  absl::StatusOr<std::string> created = history_->Create(*spec, limits_.backend, owner);
  if (!created.ok()) return created.status();
  const std::string id = *std::move(created);
  spdlog::info("run {}: {} cases on devices {} ({}) for {}", id, total,
               absl::StrJoin(plan.devices, ","), spec->label(), owner);

  const std::function<bool()> stop_requested = [&] { return !StopReason(id, observer).empty(); };
  absl::StatusOr<DeviceArbiter::Lease> lease =
      arbiter_->Acquire(plan.devices, stop_requested, [&](uint32_t ahead) {
        CountRuns();
        observer.OnQueued(id, ahead, total);
      });
  CountRuns();
  if (!lease.ok()) {
    const std::string why = StopReason(id, observer);
    (void)history_->Finish(id, v1::RUN_STATE_CANCELLED,
                           absl::StrCat("cancelled while queued: ", why));
    spdlog::info("run {}: cancelled while queued: {}", id, why);
    if (shutting_down_.load()) {
      // Retryable elsewhere or after the restart, which is what UNAVAILABLE tells a client.
      return absl::UnavailableError(absl::StrCat("colltestd is shutting down: run ", id,
                                                 " was queued and never started; retry it"));
    }
    return absl::CancelledError(absl::StrCat("run ", id, " cancelled while queued: ", why));
  }
  (void)history_->MarkRunning(id);
  observer.OnStarted(id, total);

  uint32_t done = 0;
  uint32_t pool_failures = 0;
  absl::Status last_failure;
  std::string stop;
  std::string failed_fast;
  for (uint32_t i = 0; i < total; ++i) {
    stop = StopReason(id, observer);
    if (!stop.empty()) break;
    const auto& request_i = plan.cases[i];
    const absl::Time start = absl::Now();
    std::optional<v1::CaseResult> ran =
        RunOne(i, plan.devices, request_i, stop_requested, pool_failures, last_failure);
    if (!ran.has_value()) {
      stop = StopReason(id, observer);
      if (stop.empty()) stop = "stopped";
      stop = absl::StrCat(
          stop, " (case ", i, " stopped after ",
          absl::FormatDuration(absl::Trunc(absl::Now() - start, absl::Milliseconds(1))), ")");
      break;
    }
    v1::CaseResult& result = *ran;
    result.set_wall_ms(absl::ToDoubleMilliseconds(absl::Now() - start));
    if (result.status() != v1::CASE_STATUS_OK) {
      spdlog::warn("run {} case {} ({} {} m={} n={}): {} {}", id, i, VariantName(result.variant()),
                   ModeName(result.mode()), result.m(), result.n(), CaseStatusName(result.status()),
                   result.message());
    }
    if (absl::Status stored = history_->AddCase(id, result); !stored.ok()) {
      spdlog::error("run {} case {}: not stored in the history: {}", id, i,
                    std::string(stored.message()));
    }
    Count(result, plan.devices);
    ++done;
    observer.OnCase(id, result, done, total);
    if (spec->stop_on_failure() &&
        StatusSeverity(result.status()) >= StatusSeverity(v1::CASE_STATUS_WRONG)) {
      failed_fast = absl::StrCat("stopped at case ", i, " (", CaseStatusName(result.status()),
                                 "): ", total - done, " of ", total, " cases not run");
      break;
    }
  }
  lease->Release();
  CountRuns();

  v1::RunState state = v1::RUN_STATE_DONE;
  std::string message;
  if (!stop.empty()) {
    state = v1::RUN_STATE_CANCELLED;
    message = absl::StrCat("cancelled after ", done, " of ", total, " cases: ", stop);
  } else if (total > 0 && pool_failures == total) {
    state = v1::RUN_STATE_FAILED;
    message = absl::StrCat("the workers could not run any case: ", last_failure.message());
  }
  absl::StatusOr<v1::RunResult> run = history_->Get(id);
  if (state == v1::RUN_STATE_DONE && run.ok()) message = CountByStatus(*run);
  if (state == v1::RUN_STATE_DONE && !failed_fast.empty()) {
    message = absl::StrCat(message, "; ", failed_fast);
  }
  spdlog::info("run {}: {} {}", id, RunStateName(state), message);
  return history_->Finish(id, state, message);
}

absl::StatusOr<v1::RunState> RunExecutor::Cancel(const std::string& run_id) {
  absl::StatusOr<v1::RunState> state = history_->RequestCancel(run_id);
  // A queued run should leave the queue now, not at its next poll.
  if (state.ok()) arbiter_->Wake();
  return state;
}

void RunExecutor::BeginShutdown() {
  shutting_down_.store(true);
  arbiter_->Wake();
}

}  // namespace colltest::server
