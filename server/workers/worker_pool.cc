// Which groups exist (keyed by their device list), replacing and respawning them, and shutdown.
#include "server/workers/worker_pool.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <map>
#include <set>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "server/workers/fan_out.h"
#include "server/workers/fork_thread.h"
#include "server/workers/runtime_dir.h"
#include "server/workers/shm_segments.h"
#include "server/workers/verdict.h"
#include "server/workers/worker_group.h"

namespace colltest::server {
namespace {

using colltest::v1::RankResult;
using colltest::worker::v1::CaseRequest;

// Time a worker gets to leave by itself (Shutdown RPC) before it is SIGKILLed.
constexpr absl::Duration kShutdownGrace = absl::Milliseconds(500);
// A respawn after a failure is tried this many times, this far apart. Measured on one H200 under
// MPS: a worker started 1.4 s after a rank of its GPU died could not create its context ("CUDA-
// capable device(s) is/are busy or unavailable") while the MPS server cleaned up after the dead
// client; the group stayed DEGRADED until the next request, 30 s later.
constexpr int kRespawnAttempts = 5;
constexpr absl::Duration kRespawnRetryDelay = absl::Seconds(1);

using DeviceList = std::vector<uint32_t>;

bool Overlap(const DeviceList& a, const DeviceList& b) {
  return std::any_of(a.begin(), a.end(),
                     [&](uint32_t d) { return std::find(b.begin(), b.end(), d) != b.end(); });
}

class WorkerPoolImpl final : public WorkerPool {
 public:
  WorkerPoolImpl(const WorkerPoolOptions& options, std::unique_ptr<RuntimeDir> dir)
      : options_(options),
        socket_dir_(dir->path()),
        dir_(std::move(dir)),
        fork_thread_(std::make_unique<ForkThread>()),
        health_(options.on_state_change) {
    if (options_.eager_recovery) recovery_thread_ = std::thread([this] { RecoveryLoop(); });
    if (options_.idle_timeout > absl::ZeroDuration()) {
      idle_thread_ = std::thread([this] { IdleLoop(); });
    }
  }
  ~WorkerPoolImpl() override { Shutdown(); }

  absl::StatusOr<std::vector<RankResult>> RunCase(absl::Span<const uint32_t> devices,
                                                  const CaseRequest& request,
                                                  const std::function<bool()>& cancelled) override;
  void Shutdown() override;
  std::vector<int> LivePids() const override;
  uint64_t Restarts() const override;
  std::vector<colltest::v1::GroupHealth> GroupStates() const override { return health_.All(); }

 private:
  class InUse;

  // The group for exactly `devices`, started (after tearing down any group that shares a device)
  // unless a healthy one exists.
  absl::StatusOr<std::shared_ptr<WorkerGroup>> GroupFor(const DeviceList& devices);
  absl::StatusOr<std::shared_ptr<WorkerGroup>> StartGroup(const DeviceList& devices);
  // StartGroup for a recovery: up to kRespawnAttempts tries, kRespawnRetryDelay apart, until one
  // starts or the pool shuts down; `attempts` says how many it took.
  absl::StatusOr<std::shared_ptr<WorkerGroup>> Respawn(const DeviceList& devices, int& attempts);
  // Kills a group whose rank died or hung and forgets it, so that the next case respawns it.
  void Retire(const std::shared_ptr<WorkerGroup>& group);
  // Runs the canary on the group of `devices`, respawning it first unless its workers are alive;
  // the group serves only if the canary passes.
  absl::StatusOr<std::shared_ptr<WorkerGroup>> Recover(const DeviceList& devices);
  // Marks a group that just failed as recovering; with eager recovery, queues its respawn.
  void BeginRecovery(const DeviceList& devices, const std::string& why, bool respawn);
  void RecoveryLoop();
  // Shuts down the groups idle for options_.idle_timeout, until Shutdown().
  void IdleLoop();
  // Moves the groups that may be retired for idleness from groups_ to `idle` (their devices to
  // stopping_); returns how long until the next one may be.
  absl::Duration TakeIdleGroups(std::vector<std::shared_ptr<WorkerGroup>>& idle)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StopIdleGroup(const std::shared_ptr<WorkerGroup>& group);
  bool NoGroupStarting() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return starting_ == 0; }
  bool RecoveringOverlaps(const DeviceList& devices) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return std::any_of(recovering_.begin(), recovering_.end(),
                       [&](const DeviceList& r) { return Overlap(r, devices); });
  }

  const WorkerPoolOptions options_;
  const std::string socket_dir_;
  // Serialises Shutdown() calls; never taken by anything else.
  absl::Mutex shutdown_mu_;
  std::unique_ptr<RuntimeDir> dir_ ABSL_GUARDED_BY(shutdown_mu_);
  std::unique_ptr<ForkThread> fork_thread_;  // used only while starting_ > 0

  // Never held while workers start or cases run, so disjoint groups proceed independently.
  mutable absl::Mutex mu_;
  std::map<DeviceList, std::shared_ptr<WorkerGroup>> groups_ ABSL_GUARDED_BY(mu_);
  int starting_ ABSL_GUARDED_BY(mu_) = 0;  // groups being started outside the lock
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t restarts_ ABSL_GUARDED_BY(mu_) = 0;
  // Groups whose eager recovery is queued or running; cases on their devices wait for it.
  std::vector<DeviceList> recovering_ ABSL_GUARDED_BY(mu_);
  // Devices of displaced groups that a StartGroup is stopping right now.
  DeviceList stopping_ ABSL_GUARDED_BY(mu_);
  std::deque<DeviceList> recovery_queue_ ABSL_GUARDED_BY(mu_);
  // Cases (canaries included) running or about to run on each device list, and when the last one
  // ended: a group is idle when it has none and the last ended idle_timeout ago.
  struct Use {
    int cases = 0;
    absl::Time last = absl::InfinitePast();
  };
  std::map<DeviceList, Use> use_ ABSL_GUARDED_BY(mu_);
  // Groups shut down for idleness and not started since.
  std::set<DeviceList> idle_exited_ ABSL_GUARDED_BY(mu_);

  GroupHealthBook health_;
  std::thread recovery_thread_;  // joined by Shutdown
  std::thread idle_thread_;      // joined by Shutdown
};

// Marks the device list of a group in use for its lifetime, so that the idle timer cannot retire
// the group between the moment a case looks it up and the moment the case ends.
class WorkerPoolImpl::InUse {
 public:
  InUse(WorkerPoolImpl* pool, DeviceList devices) : pool_(pool), devices_(std::move(devices)) {
    absl::MutexLock lock(&pool_->mu_);
    ++pool_->use_[devices_].cases;
  }
  ~InUse() {
    absl::MutexLock lock(&pool_->mu_);
    Use& use = pool_->use_[devices_];
    --use.cases;
    use.last = absl::Now();
  }
  InUse(const InUse&) = delete;
  InUse& operator=(const InUse&) = delete;

 private:
  WorkerPoolImpl* const pool_;
  const DeviceList devices_;
};

absl::StatusOr<std::vector<RankResult>> WorkerPoolImpl::RunCase(
    absl::Span<const uint32_t> devices, const CaseRequest& request,
    const std::function<bool()>& cancelled) {
  const DeviceList key(devices.begin(), devices.end());
  if (key.empty()) return absl::InvalidArgumentError("RunCase needs at least one device");
  if (std::set<uint32_t>(key.begin(), key.end()).size() != key.size()) {
    return absl::InvalidArgumentError("RunCase got the same device twice");
  }
  const InUse in_use(this, key);
  absl::StatusOr<std::shared_ptr<WorkerGroup>> group = GroupFor(key);
  if (!group.ok()) return group.status();
  const CaseFacts facts = (*group)->RunCase(request, cancelled);
  if (facts.cancelled) {
    // The ranks stopped mid-protocol: re-armed (or respawned when they did not stop in time) and
    // proven by the canary before the next case, like after a failure.
    const std::string why = CancelledCaseReason(facts);
    if (facts.killed) Retire(*group);
    BeginRecovery(key, why, /*respawn=*/facts.killed);
    return absl::CancelledError(absl::StrCat("the case was stopped: ", why));
  }
  std::vector<RankResult> ranks = RankVerdicts(facts);
  if (facts.killed) {
    Retire(*group);
    BeginRecovery(key, GroupFailureSummary(ranks), /*respawn=*/true);
  } else if (facts.reset) {
    // Reset re-armed the protocol state; the canary proves it before the next case trusts it.
    BeginRecovery(key, GroupFailureSummary(ranks), /*respawn=*/false);
  }
  return ranks;
}

void WorkerPoolImpl::BeginRecovery(const DeviceList& devices, const std::string& why,
                                   bool respawn) {
  health_.Failed(devices, why, respawn);
  if (!options_.eager_recovery) return;
  absl::MutexLock lock(&mu_);
  if (shut_down_) return;
  recovering_.push_back(devices);
  recovery_queue_.push_back(devices);
}

void WorkerPoolImpl::RecoveryLoop() {
  while (true) {
    DeviceList devices;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return shut_down_ || !recovery_queue_.empty();
      };
      mu_.Await(absl::Condition(&ready));
      if (shut_down_) {
        recovering_.clear();
        recovery_queue_.clear();
        return;
      }
      devices = recovery_queue_.front();
      recovery_queue_.pop_front();
    }
    (void)Recover(devices);
    absl::MutexLock lock(&mu_);
    auto it = std::find(recovering_.begin(), recovering_.end(), devices);
    if (it != recovering_.end()) recovering_.erase(it);
  }
}

absl::StatusOr<std::shared_ptr<WorkerGroup>> WorkerPoolImpl::Recover(const DeviceList& devices) {
  const InUse in_use(this, devices);
  const std::string name = absl::StrJoin(devices, ",");
  std::shared_ptr<WorkerGroup> alive;
  {
    absl::MutexLock lock(&mu_);
    if (auto it = groups_.find(devices); it != groups_.end()) alive = it->second;
  }
  const bool reuse = alive != nullptr && alive->AllAlive();
  int attempts = 1;
  absl::StatusOr<std::shared_ptr<WorkerGroup>> group = reuse ? alive : Respawn(devices, attempts);
  if (!group.ok()) {
    health_.Degraded(
        devices,
        absl::StrCat("respawn failed", attempts > 1 ? absl::StrCat(" ", attempts, " times") : "",
                     ": ", group.status().message()));
    return group.status();
  }
  const std::string how =
      reuse ? "reset"
            : absl::StrCat("respawned",
                           attempts > 1 ? absl::StrCat(" (at attempt ", attempts, ")") : "");
  if (options_.canary.variant() == colltest::v1::VARIANT_UNSPECIFIED) {
    health_.Recovered(devices, how);
    return group;
  }
  const CaseFacts facts = (*group)->RunCase(options_.canary);
  const std::string failure = GroupFailureSummary(RankVerdicts(facts));
  if (facts.killed || !failure.empty()) {
    // A group that fails a fresh start on a known-good case is not to be trusted with the next one.
    Retire(*group);
    health_.Degraded(devices, absl::StrCat("canary failed: ", failure));
    return absl::UnavailableError(absl::StrCat(
        "devices ", name, " are DEGRADED: the canary case failed after a respawn: ", failure));
  }
  health_.Recovered(devices, absl::StrCat(how, " and passed the canary"));
  return group;
}

absl::StatusOr<std::shared_ptr<WorkerGroup>> WorkerPoolImpl::Respawn(const DeviceList& devices,
                                                                     int& attempts) {
  for (attempts = 1;; ++attempts) {
    absl::StatusOr<std::shared_ptr<WorkerGroup>> group = StartGroup(devices);
    if (group.ok() || attempts == kRespawnAttempts) return group;
    absl::MutexLock lock(&mu_);
    if (mu_.AwaitWithTimeout(absl::Condition(&shut_down_), kRespawnRetryDelay)) return group;
  }
}

absl::StatusOr<std::shared_ptr<WorkerGroup>> WorkerPoolImpl::GroupFor(const DeviceList& devices) {
  std::shared_ptr<WorkerGroup> group;
  {
    absl::MutexLock lock(&mu_);
    // A group respawning on any of these devices finishes (canary included) first: its outcome
    // decides whether this case may run at all.
    auto settled = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return shut_down_ || !RecoveringOverlaps(devices);
    };
    mu_.Await(absl::Condition(&settled));
    if (shut_down_) return absl::FailedPreconditionError("the worker pool is shut down");
    if (auto it = groups_.find(devices); it != groups_.end()) group = it->second;
  }
  if (group != nullptr) {
    if (group->AllAlive()) return group;
    // A worker died between cases (OOM killer, device reset, an operator's kill); find out now
    // rather than by failing the next case.
    Retire(group);
    health_.Failed(devices, "a worker died between cases", /*respawn=*/true);
    return Recover(devices);
  }
  const std::optional<colltest::v1::GroupState> state = health_.StateOf(devices);
  // RECOVERING without eager recovery, or DEGRADED: this request is the next attempt.
  if (state.has_value() && *state != colltest::v1::GROUP_STATE_SERVING) return Recover(devices);
  absl::StatusOr<std::shared_ptr<WorkerGroup>> started = StartGroup(devices);
  if (!started.ok()) {
    health_.Degraded(devices, absl::StrCat("could not start: ", started.status().message()));
  } else if (!state.has_value()) {
    health_.Serving(devices, "started");
  } else {
    bool after_idle_exit = false;
    {
      absl::MutexLock lock(&mu_);
      after_idle_exit = idle_exited_.erase(devices) > 0;
    }
    // The record still says idle; what follows an idle exit is a plain start, no recovery.
    if (after_idle_exit) health_.Serving(devices, kIdleRestartMessage);
  }
  return started;
}

absl::StatusOr<std::shared_ptr<WorkerGroup>> WorkerPoolImpl::StartGroup(const DeviceList& devices) {
  std::vector<std::shared_ptr<WorkerGroup>> displaced;
  DeviceList stopping;
  {
    absl::MutexLock lock(&mu_);
    // A group being stopped by another start still owns its devices' sockets and memory; wait
    // until it is gone, or its cleanup would remove what this group's workers just created.
    auto free = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return shut_down_ || !Overlap(stopping_, devices);
    };
    mu_.Await(absl::Condition(&free));
    if (shut_down_) return absl::FailedPreconditionError("the worker pool is shut down");
    // One worker per device at a time: a device's memory and its socket name belong to one worker.
    for (auto it = groups_.begin(); it != groups_.end();) {
      if (Overlap(it->first, devices)) {
        stopping.insert(stopping.end(), it->first.begin(), it->first.end());
        displaced.push_back(std::move(it->second));
        it = groups_.erase(it);
      } else {
        ++it;
      }
    }
    stopping_.insert(stopping_.end(), stopping.begin(), stopping.end());
    ++starting_;
  }
  for (const auto& group : displaced) group->Stop(kShutdownGrace);
  if (!stopping.empty()) {
    absl::MutexLock lock(&mu_);
    for (uint32_t d : stopping) stopping_.erase(std::find(stopping_.begin(), stopping_.end(), d));
  }

  absl::StatusOr<std::unique_ptr<WorkerGroup>> started =
      WorkerGroup::Start(options_, socket_dir_, devices, *fork_thread_);
  if (started.ok()) {
    absl::MutexLock lock(&mu_);
    if (!shut_down_) {
      std::shared_ptr<WorkerGroup> group = *std::move(started);
      groups_[devices] = group;
      use_[devices].last = absl::Now();
      --starting_;
      return group;
    }
  }
  absl::Status status = started.status();
  if (started.ok()) {
    // Shutdown() never saw this group and waits for starting_ to drop: the group must die first.
    started->reset();
    status = absl::FailedPreconditionError("the worker pool was shut down while workers started");
  }
  absl::MutexLock lock(&mu_);
  --starting_;
  return status;
}

void WorkerPoolImpl::Retire(const std::shared_ptr<WorkerGroup>& group) {
  group->Kill();
  absl::MutexLock lock(&mu_);
  auto it = groups_.find(group->devices());
  if (it != groups_.end() && it->second == group) groups_.erase(it);
  if (!shut_down_) ++restarts_;
}

absl::Duration WorkerPoolImpl::TakeIdleGroups(std::vector<std::shared_ptr<WorkerGroup>>& idle) {
  const absl::Time now = absl::Now();
  absl::Duration next = options_.idle_timeout;
  for (auto it = groups_.begin(); it != groups_.end();) {
    const Use& use = use_[it->first];
    const absl::Duration left = use.last + options_.idle_timeout - now;
    // A group in a case or a recovery is not idle; one that is not SERVING is left to recovery.
    const bool busy = use.cases > 0 || RecoveringOverlaps(it->first) ||
                      health_.StateOf(it->first) != colltest::v1::GROUP_STATE_SERVING;
    if (busy || left > absl::ZeroDuration()) {
      if (!busy) next = std::min(next, left);
      ++it;
      continue;
    }
    stopping_.insert(stopping_.end(), it->first.begin(), it->first.end());
    idle.push_back(std::move(it->second));
    it = groups_.erase(it);
  }
  return next;
}

void WorkerPoolImpl::StopIdleGroup(const std::shared_ptr<WorkerGroup>& group) {
  const DeviceList& devices = group->devices();
  group->Stop(kShutdownGrace);
  // Said before the devices leave stopping_: a start on them waits for that, so its own message
  // cannot be overwritten by this one.
  health_.Serving(devices, absl::StrCat(kIdleExitMessagePrefix, "no case for ",
                                        absl::FormatDuration(options_.idle_timeout),
                                        ": the workers exited; the next case starts them again"));
  absl::MutexLock lock(&mu_);
  idle_exited_.insert(devices);
  for (uint32_t d : devices) stopping_.erase(std::find(stopping_.begin(), stopping_.end(), d));
}

void WorkerPoolImpl::IdleLoop() {
  while (true) {
    std::vector<std::shared_ptr<WorkerGroup>> idle;
    absl::Duration wait;
    {
      absl::MutexLock lock(&mu_);
      if (shut_down_) return;
      wait = TakeIdleGroups(idle);
    }
    // Stopped one by one: each frees its devices for a start that waits for them.
    for (const auto& group : idle) StopIdleGroup(group);
    if (!idle.empty()) continue;
    absl::MutexLock lock(&mu_);
    // A group that turns idle later expires later than `wait`: nothing needs to wake this early.
    mu_.AwaitWithTimeout(absl::Condition(&shut_down_), std::max(wait, absl::Milliseconds(10)));
  }
}

void WorkerPoolImpl::Shutdown() {
  absl::MutexLock shutdown_lock(&shutdown_mu_);
  std::vector<std::shared_ptr<WorkerGroup>> groups;
  {
    absl::MutexLock lock(&mu_);
    shut_down_ = true;
    for (auto& [devices, group] : groups_) groups.push_back(std::move(group));
    groups_.clear();
  }
  ParallelFor(groups.size(), [&](size_t i) { groups[i]->Stop(kShutdownGrace); });
  // A recovery in flight ends soon: its StartGroup refuses to keep a group now, and a canary on
  // a group stopped above fails at once.
  if (recovery_thread_.joinable()) recovery_thread_.join();
  // It may be stopping groups it took out of groups_; they are gone when it returns.
  if (idle_thread_.joinable()) idle_thread_.join();
  {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &WorkerPoolImpl::NoGroupStarting));
  }
  // A case still running on one of `groups` holds it (and its processes, now reaped) until it
  // returns; nothing of it outlives this call but memory.
  fork_thread_.reset();
  dir_.reset();
}

std::vector<int> WorkerPoolImpl::LivePids() const {
  absl::MutexLock lock(&mu_);
  std::vector<int> pids;
  for (const auto& [devices, group] : groups_) {
    std::vector<int> group_pids = group->LivePids();
    pids.insert(pids.end(), group_pids.begin(), group_pids.end());
  }
  return pids;
}

uint64_t WorkerPoolImpl::Restarts() const {
  absl::MutexLock lock(&mu_);
  return restarts_;
}

}  // namespace

bool IsIdleMessage(const colltest::v1::GroupHealth& group) {
  return group.state() == colltest::v1::GROUP_STATE_SERVING &&
         (absl::StartsWith(group.message(), kIdleExitMessagePrefix) ||
          group.message() == kIdleRestartMessage);
}

absl::StatusOr<std::unique_ptr<WorkerPool>> CreateWorkerPool(const WorkerPoolOptions& options) {
  if (options.worker_binary.empty()) {
    return absl::InvalidArgumentError("worker_binary is empty");
  }
  if (access(options.worker_binary.c_str(), X_OK) != 0) {
    return absl::ErrnoToStatus(
        errno, absl::StrCat("worker binary ", options.worker_binary, " is not usable"));
  }
  if (options.backend.empty() || options.backend == "auto") {
    return absl::InvalidArgumentError(
        absl::StrCat("backend \"", options.backend, "\" must be resolved before the pool starts"));
  }
  UnlinkStaleShm();
  absl::StatusOr<std::unique_ptr<RuntimeDir>> dir = RuntimeDir::Create(options.runtime_dir);
  if (!dir.ok()) return dir.status();
  return std::make_unique<WorkerPoolImpl>(options, *std::move(dir));
}

}  // namespace colltest::server
