#include "server/workers/worker_group.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "server/workers/case_deadline.h"
#include "server/workers/fan_out.h"
#include "server/workers/rendezvous.h"
#include "server/workers/shm_segments.h"
#include "server/workers/verdict.h"

namespace colltest::server {
namespace {

// A rank that reported a failure (its own watchdog's HANG, a WRONG result from a skipped re-arm or
// a poisoned buffer, an ERROR) may have left barrier epochs, Signal slots or staging buffers in a
// state the next case would trip over, and so may its peers that waited for it.
// How often the watchdog reads the ranks' heartbeats while a case runs.
constexpr absl::Duration kWatchdogPeriod = absl::Milliseconds(50);
// How long the last rank may still take to answer once every peer timed out waiting for it.
constexpr absl::Duration kCulpritGrace = absl::Milliseconds(250);
// How long the ranks of a cancelled case get to notice their cancel word and answer before the
// group is killed (and respawned for the next case). The cpu backend answers within one poll of a
// spin or one call; a GPU rank in a long graph replay may not, and is killed.
constexpr absl::Duration kCancelGrace = absl::Seconds(1);

// The host deadline's progress rule (case_deadline.h): the ranks still out are stopped once every
// one of them has completed no work for the window; one rank that completes work keeps the case
// going, since its peers' waits are bounded by their own timeout.
class ProgressRule {
 public:
  ProgressRule(const std::vector<std::unique_ptr<WorkerProcess>>& ranks, absl::Duration window)
      : ranks_(ranks), window_(window), last_(ranks.size()), moved_(ranks.size(), absl::Now()) {
    for (size_t rank = 0; rank < ranks.size(); ++rank) last_[rank] = ranks[rank]->Progress();
  }
  // The rank that stood still longest when every rank not yet answered stood still past the
  // window (how long in `*still`), or nullopt.
  std::optional<size_t> Stopped(const std::atomic<bool>* answered, absl::Time now,
                                absl::Duration* still) {
    std::optional<size_t> stillest;
    absl::Duration least = absl::InfiniteDuration();
    for (size_t rank = 0; rank < ranks_.size(); ++rank) {
      if (answered[rank].load()) continue;
      const uint64_t progress = ranks_[rank]->Progress();
      if (progress != last_[rank]) {
        last_[rank] = progress;
        moved_[rank] = now;
      }
      least = std::min(least, now - moved_[rank]);
      if (!stillest.has_value() || moved_[rank] < moved_[*stillest]) stillest = rank;
    }
    if (!stillest.has_value() || least <= window_) return std::nullopt;
    *still = least;
    return stillest;
  }

 private:
  const std::vector<std::unique_ptr<WorkerProcess>>& ranks_;
  const absl::Duration window_;
  std::vector<uint64_t> last_;
  std::vector<absl::Time> moved_;
};

// True when every rank but `culprit` answered HANG naming it.
bool AllWaitedFor(const std::atomic<int32_t>* waited_for, size_t world, size_t culprit) {
  for (size_t rank = 0; rank < world; ++rank) {
    if (rank != culprit && waited_for[rank].load() != static_cast<int32_t>(culprit)) return false;
  }
  return true;
}

// Every rank answered; some reported a failure (their own verdict) and may have left protocol
// state behind.
bool NeedsReset(absl::Span<const RankFacts> ranks) {
  return std::any_of(ranks.begin(), ranks.end(), [](const RankFacts& r) {
    return r.answer.has_value() && IsFailure(r.answer->status());
  });
}

}  // namespace

using colltest::v1::RankResult;
using colltest::worker::v1::CaseRequest;
using colltest::worker::v1::InitReply;

absl::StatusOr<std::unique_ptr<WorkerGroup>> WorkerGroup::Start(const WorkerPoolOptions& options,
                                                                const std::string& socket_dir,
                                                                absl::Span<const uint32_t> devices,
                                                                ForkThread& fork_thread) {
  std::unique_ptr<WorkerGroup> group(
      new WorkerGroup(std::vector<uint32_t>(devices.begin(), devices.end()), options.grace,
                      options.heartbeat_grace, options.spawn_timeout));
  const size_t world = devices.size();

  std::vector<absl::StatusOr<std::unique_ptr<WorkerProcess>>> spawned(world);
  ParallelFor(world, [&](size_t rank) {
    WorkerSpawnSpec spec;
    spec.worker_binary = options.worker_binary;
    spec.backend = options.backend;
    spec.socket_path = absl::StrCat(socket_dir, "/rank-", devices[rank], ".sock");
    spec.device = devices[rank];
    spec.physical_device = options.placement.Physical(devices[rank]);
    spec.timeout = options.spawn_timeout;
    spawned[rank] = WorkerProcess::Spawn(spec, fork_thread);
  });
  for (size_t rank = 0; rank < world; ++rank) {
    if (!spawned[rank].ok()) {
      // Returning destroys `spawned` and `group`, which kill and reap the ranks that did start.
      const absl::Status& s = spawned[rank].status();
      return absl::Status(s.code(), absl::StrCat("cannot start rank ", rank, " on device ",
                                                 devices[rank], ": ", s.message()));
    }
    group->ranks_.push_back(*std::move(spawned[rank]));
  }

  std::vector<InitReply> init_replies;
  const absl::Status status = Rendezvous(
      group->ranks_, options.max_case_bytes, options.placement.RanksOnOneDevice(devices),
      options.placement.SlotsPerDevice(), options.kernel_plugins, options.spawn_timeout,
      [g = group.get()] { g->Kill(); }, init_replies);
  {
    absl::MutexLock lock(&group->kill_mu_);
    for (const InitReply& reply : init_replies) {
      if (!reply.capabilities().uses_shared_memory_segments()) continue;
      for (const auto& handle : reply.handles()) group->shm_names_.push_back(handle.handle());
    }
  }
  if (!status.ok()) return status;  // the destructor kills the group and unlinks its segments
  return group;
}

WorkerGroup::~WorkerGroup() { Kill(); }

// Everything one RunCase shares between its rank threads and its watchdog.
struct WorkerGroup::CaseWatch {
  explicit CaseWatch(size_t world, std::function<void()> kill)
      : answered(new std::atomic<bool>[world]),
        waited_for(new std::atomic<int32_t>[world]),
        stalled_for(world, absl::ZeroDuration()),
        abandoned(world, false),
        awaited_at_stop(world, -1),
        first(std::move(kill)) {
    for (size_t rank = 0; rank < world; ++rank) {
      answered[rank] = false;
      waited_for[rank] = -1;
    }
  }
  std::unique_ptr<std::atomic<bool>[]> answered;
  // What each rank that answered HANG waited for (-1: it did not, or has not answered yet).
  std::unique_ptr<std::atomic<int32_t>[]> waited_for;
  std::atomic<int64_t> last_answer_ns{0};
  // Written by the watchdog, read after it is joined.
  std::vector<absl::Duration> stalled_for;
  std::vector<bool> abandoned;
  // The peer each rank said it waited for (common/worker_page.h) when the group was stopped.
  std::vector<int32_t> awaited_at_stop;
  // Set when the progress rule stopped the case: how long the ranks still out stood still.
  absl::Duration no_progress_for;
  bool cancel_sent = false;
  bool cancel_killed = false;  // the ranks did not stop within kCancelGrace
  absl::Notification all_answered;
  FirstFailure first;
};

CaseFacts WorkerGroup::RunCase(const CaseRequest& request, const CancelCheck& cancelled) {
  const size_t world = ranks_.size();
  CaseFacts facts;
  facts.deadline = CaseDeadline(request, grace_);
  if (request.variant() == colltest::v1::VARIANT_PLUGIN) {
    facts.plugin = absl::StrCat("plugin:", request.plugin());
  }
  facts.ranks.resize(world);
  // One absolute deadline for all ranks: threads start at slightly different times.
  const auto deadline_at =
      std::chrono::system_clock::now() + absl::ToChronoNanoseconds(facts.deadline);
  for (const auto& process : ranks_) process->SetCancel(false);

  CaseWatch watch(world, [this] { KillRecordingWaits(); });
  {
    absl::MutexLock lock(&kill_mu_);
    watch_ = &watch;
  }
  std::thread watchdog([&] { Watchdog(request, cancelled, watch); });
  ParallelFor(world, [&](size_t rank) { CallRank(rank, request, deadline_at, watch, facts); });
  watch.all_answered.Notify();
  watchdog.join();
  {
    absl::MutexLock lock(&kill_mu_);
    watch_ = nullptr;
  }
  facts.first_failed = watch.first.rank();
  facts.cancelled = watch.cancel_sent;
  facts.cancel_killed = watch.cancel_killed;
  facts.no_progress_for = watch.no_progress_for;
  bool unanswered = false;
  for (size_t rank = 0; rank < world; ++rank) {
    RankFacts& f = facts.ranks[rank];
    f.device = devices_[rank];
    f.awaited_at_stop = watch.awaited_at_stop[rank];
    // The page outlives the process: a rank that died inside a plugin still says where.
    f.plugin_entry = ranks_[rank]->PluginEntryNow(f.plugin_call);
    if (watch.stalled_for[rank] > absl::ZeroDuration()) {
      f.failure = CallFailure::kStalled;
      f.stalled_for = watch.stalled_for[rank];
    }
    if (watch.abandoned[rank]) f.failure = CallFailure::kAbandoned;
    // Stopped by the progress rule: late, as a rank past a deadline is.
    if (watch.no_progress_for > absl::ZeroDuration() && !f.answer.has_value() &&
        f.failure == CallFailure::kKilledByUs) {
      f.failure = CallFailure::kLate;
    }
    unanswered |= !f.answer.has_value();
  }
  // Any unanswered rank leaves the group in an unknown state (peers mid-protocol, buffers unarmed);
  // so does a cancelled case, whose ranks stopped wherever they were.
  if (unanswered) {
    facts.killed = true;
    Kill();
  } else if (facts.cancelled || NeedsReset(facts.ranks)) {
    facts.reset = ResetAll();
    if (!facts.reset) {
      facts.killed = true;
      Kill();
    }
  }
  return facts;
}

void WorkerGroup::CallRank(size_t rank, const CaseRequest& request,
                           std::chrono::system_clock::time_point deadline_at, CaseWatch& watch,
                           CaseFacts& facts) {
  RankFacts& f = facts.ranks[rank];
  WorkerProcess& process = *ranks_[rank];
  grpc::ClientContext context;
  context.set_deadline(deadline_at);
  RankResult reply;
  const grpc::Status error = process.stub().RunCase(&context, request, &reply);
  if (error.ok()) {
    // The worker knows the GPU it uses; the result names colltestd's device index, which differs
    // for a slot of a shared GPU (--ranks-per-gpu).
    reply.set_device(process.device());
    if (reply.status() == colltest::v1::CASE_STATUS_HANG) {
      watch.waited_for[rank] = reply.suspect_peer();
    }
    f.answer = std::move(reply);
    watch.answered[rank] = true;
    watch.last_answer_ns = absl::ToUnixNanos(absl::Now());
    return;
  }
  f.failure = process.ClassifyFailedCall(error);
  f.pid = process.pid();
  if (f.failure == CallFailure::kDied) f.exit = process.ExitDescription();
  f.error_code = error.error_code();
  f.error_message = error.error_message();
  watch.answered[rank] = true;
  if (f.failure != CallFailure::kKilledByUs) watch.first.Record(rank);
}

// The watchdog. A worker beats while it computes and while it spins in a bounded wait, so a
// heartbeat that stands still means the process is stuck (stopped, deadlocked, wedged in a driver
// call), however many calls the case has left. While peers still run, a rank may stand still for
// up to max(timeout, 1 s) + the grace; once every other rank has answered (their waits for it
// timed out), the grace alone. The host deadline is only the backstop for a worker that beats
// without ever answering. It also carries a cancellation to the ranks: their pages' cancel words
// first, and SIGKILL for the group when they have not all answered kCancelGrace later.
void WorkerGroup::Watchdog(const CaseRequest& request, const CancelCheck& cancelled,
                           CaseWatch& watch) {
  const size_t world = ranks_.size();
  const absl::Duration peers_running_limit =
      std::max(CaseTimeout(request), absl::Seconds(1)) + heartbeat_grace_;
  std::vector<uint64_t> last(world);
  std::vector<absl::Time> moved(world, absl::Now());
  ProgressRule progress(ranks_, ProgressWindow(request, grace_));
  absl::Time cancel_at;
  for (size_t rank = 0; rank < world; ++rank) last[rank] = ranks_[rank]->Heartbeat();
  while (!watch.all_answered.WaitForNotificationWithTimeout(kWatchdogPeriod)) {
    const absl::Time now = absl::Now();
    if (!watch.cancel_sent && cancelled && cancelled()) {
      watch.cancel_sent = true;
      cancel_at = now;
      for (const auto& process : ranks_) process->SetCancel(true);
    }
    if (watch.cancel_sent) {
      if (now - cancel_at > kCancelGrace) {
        watch.cancel_killed = true;
        Kill();  // every call still in flight fails at once, as kKilledByUs
        return;
      }
      continue;  // a cancelled case has no culprit to find
    }
    if (const std::optional<size_t> rank =
            progress.Stopped(watch.answered.get(), now, &watch.no_progress_for)) {
      watch.first.Record(*rank);  // kills the group: every call still in flight fails at once
      return;
    }
    size_t answers_in = 0;
    for (size_t rank = 0; rank < world; ++rank) answers_in += watch.answered[rank].load();
    const bool last_one = answers_in + 1 >= world;
    for (size_t rank = 0; rank < world; ++rank) {
      if (watch.answered[rank].load()) continue;
      const uint64_t beat = ranks_[rank]->Heartbeat();
      if (beat != last[rank]) {
        last[rank] = beat;
        moved[rank] = now;
      } else if (now - moved[rank] > (last_one ? heartbeat_grace_ : peers_running_limit)) {
        watch.stalled_for[rank] = now - moved[rank];
        watch.first.Record(rank);  // kills the group: every call still in flight fails at once
        return;
      }
      // Every peer timed out waiting for this rank: the verdict is known, and what is left of
      // the rank's calls waits for peers that are gone. Waiting for it to time out in turn
      // would double the time to detect.
      if (last_one && world > 1 &&
          now - absl::FromUnixNanos(watch.last_answer_ns.load()) > kCulpritGrace &&
          AllWaitedFor(watch.waited_for.get(), world, rank)) {
        // Say which: a still heartbeat means the process is stuck, a moving one that it works on.
        if (now - moved[rank] > kCulpritGrace) {
          watch.stalled_for[rank] = now - moved[rank];
        } else {
          watch.abandoned[rank] = true;
        }
        watch.first.Record(rank);
        return;
      }
    }
  }
}

void WorkerGroup::KillRecordingWaits() {
  {
    absl::MutexLock lock(&kill_mu_);
    if (watch_ != nullptr && !killed_) {
      for (size_t rank = 0; rank < ranks_.size(); ++rank) {
        watch_->awaited_at_stop[rank] = ranks_[rank]->AwaitedPeer();
      }
    }
  }
  Kill();
}

bool WorkerGroup::ResetAll() {
  std::atomic<bool> all_ok = true;
  ParallelFor(ranks_.size(), [&](size_t rank) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         absl::ToChronoNanoseconds(reset_timeout_));
    colltest::worker::v1::ResetReply reply;
    if (!ranks_[rank]->stub().Reset(&context, colltest::worker::v1::ResetRequest(), &reply).ok()) {
      all_ok = false;
    }
  });
  return all_ok;
}

bool WorkerGroup::AllAlive() {
  for (const auto& process : ranks_) {
    if (!process->IsAlive()) return false;
  }
  return true;
}

std::vector<int> WorkerGroup::LivePids() {
  std::vector<int> pids;
  for (const auto& process : ranks_) {
    if (process->IsAlive()) pids.push_back(process->pid());
  }
  return pids;
}

void WorkerGroup::Kill() {
  absl::MutexLock lock(&kill_mu_);
  if (!killed_) {
    for (const auto& process : ranks_) process->SendKill();
    std::vector<int> pids;
    for (const auto& process : ranks_) {
      process->Reap();
      pids.push_back(process->pid());
    }
    UnlinkShmOfWorkers(pids);
    killed_ = true;
  }
  UnlinkShmNames(shm_names_);
  shm_names_.clear();
}

void WorkerGroup::Stop(absl::Duration grace) {
  {
    absl::MutexLock lock(&kill_mu_);
    if (killed_) return;
  }
  const absl::Time deadline = absl::Now() + grace;
  ParallelFor(ranks_.size(), [&](size_t rank) {
    WorkerProcess& process = *ranks_[rank];
    if (!process.IsAlive()) return;
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(deadline));
    colltest::worker::v1::ShutdownReply reply;
    if (process.stub().Shutdown(&context, colltest::worker::v1::ShutdownRequest(), &reply).ok()) {
      process.WaitForExit(deadline - absl::Now());
    }
  });
  Kill();
}

}  // namespace colltest::server
