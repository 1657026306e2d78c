// Which groups exist (keyed by their device list), replacing and respawning them, and shutdown.
#include "server/worker_pool.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <set>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "server/fan_out.h"
#include "server/fork_thread.h"
#include "server/runtime_dir.h"
#include "server/shm_segments.h"
#include "server/worker_group.h"

namespace colltest::server {
namespace {

using colltest::v1::RankResult;
using colltest::worker::v1::CaseRequest;

// Time a worker gets to leave by itself (Shutdown RPC) before it is SIGKILLed.
constexpr absl::Duration kShutdownGrace = absl::Milliseconds(500);

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
        fork_thread_(std::make_unique<ForkThread>()) {}
  ~WorkerPoolImpl() override { Shutdown(); }

  absl::StatusOr<std::vector<RankResult>> RunCase(absl::Span<const uint32_t> devices,
                                                  const CaseRequest& request) override;
  void Shutdown() override;
  std::vector<int> LivePids() const override;
  uint64_t Restarts() const override;

 private:
  // The group for exactly `devices`, started (after tearing down any group that shares a device)
  // unless a healthy one exists.
  absl::StatusOr<std::shared_ptr<WorkerGroup>> GroupFor(const DeviceList& devices);
  absl::StatusOr<std::shared_ptr<WorkerGroup>> StartGroup(const DeviceList& devices);
  // Kills a group whose rank died or hung and forgets it, so that the next case respawns it.
  void Retire(const std::shared_ptr<WorkerGroup>& group);
  bool NoGroupStarting() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return starting_ == 0; }

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
};

absl::StatusOr<std::vector<RankResult>> WorkerPoolImpl::RunCase(absl::Span<const uint32_t> devices,
                                                                const CaseRequest& request) {
  const DeviceList key(devices.begin(), devices.end());
  if (key.empty()) return absl::InvalidArgumentError("RunCase needs at least one device");
  if (std::set<uint32_t>(key.begin(), key.end()).size() != key.size()) {
    return absl::InvalidArgumentError("RunCase got the same device twice");
  }
  absl::StatusOr<std::shared_ptr<WorkerGroup>> group = GroupFor(key);
  if (!group.ok()) return group.status();
  WorkerGroup::CaseOutcome outcome = (*group)->RunCase(request);
  if (outcome.failed) Retire(*group);
  return std::move(outcome.ranks);
}

absl::StatusOr<std::shared_ptr<WorkerGroup>> WorkerPoolImpl::GroupFor(const DeviceList& devices) {
  std::shared_ptr<WorkerGroup> group;
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return absl::FailedPreconditionError("the worker pool is shut down");
    if (auto it = groups_.find(devices); it != groups_.end()) group = it->second;
  }
  if (group != nullptr) {
    if (group->AllAlive()) return group;
    // A worker died between cases (OOM killer, device reset, an operator's kill); find out now
    // rather than by failing the next case.
    Retire(group);
  }
  return StartGroup(devices);
}

absl::StatusOr<std::shared_ptr<WorkerGroup>> WorkerPoolImpl::StartGroup(const DeviceList& devices) {
  std::vector<std::shared_ptr<WorkerGroup>> displaced;
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return absl::FailedPreconditionError("the worker pool is shut down");
    // One worker per device at a time: a device's memory and its socket name belong to one worker.
    for (auto it = groups_.begin(); it != groups_.end();) {
      if (Overlap(it->first, devices)) {
        displaced.push_back(std::move(it->second));
        it = groups_.erase(it);
      } else {
        ++it;
      }
    }
    ++starting_;
  }
  for (const auto& group : displaced) group->Stop(kShutdownGrace);

  absl::StatusOr<std::unique_ptr<WorkerGroup>> started =
      WorkerGroup::Start(options_, socket_dir_, devices, *fork_thread_);
  if (started.ok()) {
    absl::MutexLock lock(&mu_);
    if (!shut_down_) {
      std::shared_ptr<WorkerGroup> group = *std::move(started);
      groups_[devices] = group;
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
