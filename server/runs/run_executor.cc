#include "server/runs/run_executor.h"

#include <unistd.h>

#include <functional>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/names.h"
#include "common/status_macros.h"
#include "common/text.h"
#include "server/devices/own_processes.h"
#include "server/runs/sweep_plan.h"
#include "server/workers/case_merge.h"
#include "server/workers/verdict.h"
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
    name = std::string(common::CaseStatusName(c.status()));
    ++count;
  }
  std::vector<std::string> parts;
  for (const auto& [severity, entry] : counts) {
    parts.push_back(absl::StrCat(entry.second, " ", entry.first));
  }
  return absl::StrCat(run.cases_size(), run.cases_size() == 1 ? " case" : " cases",
                      parts.empty() ? "" : ": ", absl::StrJoin(parts, ", "));
}

// The names of the kernel plugins colltestd loaded: those a tune table's choice may fall on.
std::vector<std::string> PluginNames(const std::vector<v1::KernelPlugin>& loaded) {
  std::vector<std::string> names;
  for (const v1::KernelPlugin& p : loaded) names.push_back(p.name());
  return names;
}

}  // namespace

RunExecutor::RunExecutor(ServerLimits limits, WorkerPool* pool, RunHistory* history,
                         DeviceArbiter* arbiter, Metrics* metrics, const TuneTables* tune,
                         DeviceUsersProbe* users)
    : limits_(std::move(limits)),
      pool_(pool),
      history_(history),
      arbiter_(arbiter),
      metrics_(metrics),
      tune_(tune),
      users_(users),
      quota_(limits_.max_active_runs_per_owner) {}

std::optional<v1::CaseResult> RunExecutor::RunOne(
    uint32_t index, const std::vector<uint32_t>& devices, const wv1::CaseRequest& request,
    const std::function<bool()>& stop, uint32_t& pool_failures, absl::Status& last_failure) {
  wv1::CaseRequest concrete = request;
  std::optional<AutoChoice> choice;
  if (request.variant() == v1::VARIANT_AUTO) {
    // Without a tune directory every auto case gets the reason an empty one gives.
    static const TuneTables kNoTables;
    const TuneTables& tables = tune_ != nullptr ? *tune_ : kNoTables;
    absl::StatusOr<AutoChoice> resolved =
        tables.Resolve({.backend = limits_.backend,
                        .world = static_cast<uint32_t>(devices.size()),
                        .dtype = request.dtype(),
                        .mode = request.mode(),
                        .epilogue = request.epilogue(),
                        .keep_normed = request.keep_normed(),
                        .m = request.m(),
                        .n = request.n(),
                        .plugins = PluginNames(limits_.kernel_plugins)});
    if (!resolved.ok()) {
      return UnsupportedCase(index, devices, request, std::string(resolved.status().message()));
    }
    choice = *std::move(resolved);
    concrete.set_variant(choice->kernel.variant);
    concrete.set_plugin(choice->kernel.plugin);
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
  // A plugin asked for by name or picked by `auto`: the build that ran.
  if (concrete.variant() == v1::VARIANT_PLUGIN) {
    *result.mutable_plugin() = PluginIdentityOf(concrete);
  }
  if (choice.has_value()) {
    result.set_variant(v1::VARIANT_AUTO);
    result.set_resolved_variant(choice->kernel.variant);
    result.set_message(result.message().empty()
                           ? absl::StrCat("auto -> ", choice->why)
                           : absl::StrCat("auto -> ", choice->why, "; ", result.message()));
  }
  return result;
}

v1::PluginIdentity RunExecutor::PluginIdentityOf(const wv1::CaseRequest& request) const {
  v1::PluginIdentity id;
  id.set_name(request.plugin());
  for (const v1::KernelPlugin& p : limits_.kernel_plugins) {
    if (p.name() != request.plugin()) continue;
    id.set_version(p.version());
    id.set_sha256(p.sha256());
  }
  return id;
}

void RunExecutor::Count(const v1::CaseResult& result, const std::vector<uint32_t>& devices,
                        bool planted) {
  if (metrics_ != nullptr && !planted) metrics_->ObserveCase(result);
  if (result.status() != v1::CASE_STATUS_HANG || planted) return;
  const std::optional<Culprit> culprit = HangCulpritOf(result, devices);
  if (metrics_ != nullptr && culprit.has_value()) {
    metrics_->ObserveHang(culprit->rank, culprit->device);
  }
  // -1 when no single rank was to blame (or the rank is not one of the group's).
  const int32_t culprit_device = culprit.has_value() ? static_cast<int32_t>(culprit->device) : -1;
  v1::GroupHealth hang;
  hang.set_last_hang(result.message());
  hang.set_last_hang_unix_ms(absl::ToUnixMillis(absl::Now()));
  hang.set_last_hang_device(culprit_device);
  std::lock_guard<std::mutex> lock(hangs_mu_);
  last_hangs_[devices] = std::move(hang);
}

std::vector<v1::GroupHealth> RunExecutor::GroupsWithLastHangs() const {
  std::vector<v1::GroupHealth> groups = pool_->GroupStates();
  std::lock_guard<std::mutex> lock(hangs_mu_);
  for (v1::GroupHealth& group : groups) {
    auto it =
        last_hangs_.find(std::vector<uint32_t>(group.devices().begin(), group.devices().end()));
    if (it == last_hangs_.end()) continue;
    group.set_last_hang(it->second.last_hang());
    group.set_last_hang_unix_ms(it->second.last_hang_unix_ms());
    group.set_last_hang_device(it->second.last_hang_device());
  }
  return groups;
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

absl::Status RunExecutor::CheckNoOtherUsers(const v1::SweepSpec& spec,
                                            const std::vector<uint32_t>& devices) const {
  if (users_ == nullptr || spec.force()) return absl::OkStatus();
  // This process and its workers use the devices by design; only the others count. Every child
  // counts, not only the workers of the pool's groups: after a crash or a stall the recovery
  // starts a new group (its workers hold the devices before the group joins the pool), and this
  // check, made before the run queues, once refused the case after a fault as BUSY naming them.
  std::vector<int> own = OwnProcesses(getpid());
  for (int pid : pool_->LivePids()) own.push_back(pid);
  return CheckDevicesFree(*users_, devices, own);
}

absl::StatusOr<DeviceArbiter::Lease> RunExecutor::Queue(
    const std::string& id, const std::string& owner, const std::vector<uint32_t>& devices,
    uint32_t total, RunPriority priority, const PriorityClaim& claim, RunObserver& observer) {
  absl::StatusOr<DeviceArbiter::Lease> lease = arbiter_->Acquire(
      devices, [&] { return !StopReason(id, observer).empty(); },
      [&](uint32_t ahead) {
        CountRuns();
        observer.OnQueued(id, ahead, total);
      },
      priority, absl::StrCat("run ", id, owner.empty() ? "" : absl::StrCat(" of ", owner)), claim);
  CountRuns();
  if (lease.ok()) return lease;
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

bool RunExecutor::LendBetweenCases(const std::string& id, uint32_t next,
                                   DeviceArbiter::Lease& lease, RunObserver& observer,
                                   std::string& stop) {
  const absl::Time start = absl::Now();
  absl::StatusOr<bool> lent =
      arbiter_->YieldToPriority(lease, [&] { return !StopReason(id, observer).empty(); });
  if (lent.ok() && !*lent) return true;
  CountRuns();
  if (!lent.ok()) {
    stop = StopReason(id, observer);
    if (stop.empty()) stop = "stopped";
    stop = absl::StrCat(stop, " (while its devices were lent to a health check before case ", next,
                        ")");
    return false;
  }
  spdlog::info("run {}: lent its devices to a health check before case {} for {}", id, next,
               absl::FormatDuration(absl::Trunc(absl::Now() - start, absl::Milliseconds(1))));
  return true;
}

RunExecutor::Loop RunExecutor::RunCases(const std::string& id, const v1::SweepSpec& spec,
                                        const SweepPlan& plan, DeviceArbiter::Lease& lease,
                                        RunObserver& observer) {
  const std::function<bool()> stop_requested = [&] { return !StopReason(id, observer).empty(); };
  const auto total = static_cast<uint32_t>(plan.cases.size());
  Loop loop;
  for (uint32_t i = 0; i < total; ++i) {
    if (i > 0 && !LendBetweenCases(id, i, lease, observer, loop.stop)) break;
    loop.stop = StopReason(id, observer);
    if (!loop.stop.empty()) break;
    const absl::Time start = absl::Now();
    std::optional<v1::CaseResult> ran = RunOne(i, plan.devices, plan.cases[i], stop_requested,
                                               loop.pool_failures, loop.last_failure);
    if (!ran.has_value()) {
      loop.stop = StopReason(id, observer);
      if (loop.stop.empty()) loop.stop = "stopped";
      loop.stop = absl::StrCat(
          loop.stop, " (case ", i, " stopped after ",
          absl::FormatDuration(absl::Trunc(absl::Now() - start, absl::Milliseconds(1))), ")");
      break;
    }
    v1::CaseResult& result = *ran;
    result.set_wall_ms(absl::ToDoubleMilliseconds(absl::Now() - start));
    if (result.status() != v1::CASE_STATUS_OK) {
      // std::string: fmt cannot print an absl::string_view.
      spdlog::warn("run {} case {} ({} {} m={} n={}): {} {}", id, i, common::KernelName(result),
                   std::string(common::ModeName(result.mode())), result.m(), result.n(),
                   std::string(common::CaseStatusName(result.status())), result.message());
    }
    const absl::Status stored = history_->AddCase(id, result);
    Count(result, plan.devices, spec.label() == kSelfTestLabel);
    ++loop.done;
    observer.OnCase(id, result, loop.done, total);
    if (!stored.ok()) {
      // The run's result is its record: the cases after this one would be run and lost (on a
      // full disk, 263 of 300 were), and the run would read as stored when it is not.
      spdlog::error("run {}: {}", id, std::string(stored.message()));
      loop.unstored = std::string(stored.message());
      break;
    }
    ++loop.stored;
    if (spec.stop_on_failure() &&
        StatusSeverity(result.status()) >= StatusSeverity(v1::CASE_STATUS_WRONG)) {
      loop.failed_fast =
          absl::StrCat("stopped at case ", i, " (", common::CaseStatusName(result.status()),
                       "): ", total - loop.done, " of ", total, " cases not run");
      break;
    }
  }
  return loop;
}

absl::StatusOr<v1::RunResult> RunExecutor::FinishRun(const std::string& id, uint32_t total,
                                                     const Loop& loop) {
  v1::RunState state = v1::RUN_STATE_DONE;
  std::string message;
  if (!loop.unstored.empty()) {
    state = v1::RUN_STATE_FAILED;
    message = absl::StrCat(loop.unstored, "; the run was stopped after ", loop.done, " of ", total,
                           " cases, ", loop.stored, " of them stored");
  } else if (!loop.stop.empty()) {
    state = v1::RUN_STATE_CANCELLED;
    message = absl::StrCat("cancelled after ", loop.done, " of ", total, " cases: ", loop.stop);
  } else if (total > 0 && loop.pool_failures == total) {
    state = v1::RUN_STATE_FAILED;
    message = absl::StrCat("the workers could not run any case: ", loop.last_failure.message());
  }
  absl::StatusOr<v1::RunResult> run = history_->Get(id);
  if (state == v1::RUN_STATE_DONE && run.ok()) message = CountByStatus(*run);
  if (state == v1::RUN_STATE_DONE && !loop.failed_fast.empty()) {
    message = absl::StrCat(message, "; ", loop.failed_fast);
  }
  spdlog::info("run {}: {} {}", id, std::string(common::RunStateName(state)), message);
  return history_->Finish(id, state, message);
}

absl::StatusOr<v1::RunResult> RunExecutor::Execute(const v1::SweepSpec& request,
                                                   RunObserver& observer, const std::string& owner,
                                                   RunPriority priority,
                                                   const PriorityClaim& claim) {
  absl::StatusOr<v1::SweepSpec> spec = ValidateSpec(request, limits_);
  if (!spec.ok()) return spec.status();
  // Refused before it is recorded or queued: nothing is left to answer later.
  absl::StatusOr<OwnerQuota::Slot> slot = quota_.Take(owner);
  if (!slot.ok()) return slot.status();

  SweepPlan plan = PlanSweep(*spec, next_case_id_.fetch_add(SweepCaseCount(*spec)));
  GrowTimeoutsForTimeSlicing(plan, limits_.placement.RanksOnOneDevice(plan.devices),
                             limits_.time_sliced_round_trip_us, kMaxTimeoutMs);
  COLLTEST_RETURN_IF_ERROR(CheckNoOtherUsers(*spec, plan.devices));
  const auto total = static_cast<uint32_t>(plan.cases.size());
  COLLTEST_ASSIGN_OR_RETURN(const std::string id, history_->Create(*spec, limits_.backend, owner));
  // The label and the owner come from clients: escaped, so that neither can forge or reorder a
  // log line (validation refuses controls and bidi overrides in labels; older history may hold
  // any).
  spdlog::info("run {}: {} cases on devices {} ({}) for {}{}", id, total,
               absl::StrJoin(plan.devices, ","), common::EscapeForTerminal(spec->label()),
               common::EscapeForTerminal(owner),
               priority == RunPriority::kPriority ? ", priority" : "");

  COLLTEST_ASSIGN_OR_RETURN(DeviceArbiter::Lease lease,
                            Queue(id, owner, plan.devices, total, priority, claim, observer));
  const absl::Status marked = history_->MarkRunning(id);
  observer.OnStarted(id, total);
  // A history that cannot record the start would not record the cases either: none is run.
  Loop loop;
  if (marked.ok()) {
    loop = RunCases(id, *spec, plan, lease, observer);
  } else {
    spdlog::error("run {}: {}", id, std::string(marked.message()));
    loop.unstored = std::string(marked.message());
  }
  lease.Release();
  CountRuns();
  return FinishRun(id, total, loop);
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
