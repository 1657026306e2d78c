#include "server/worker_group.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "server/case_deadline.h"
#include "server/fan_out.h"
#include "server/rendezvous.h"
#include "server/shm_segments.h"

namespace colltest::server {
namespace {

// A rank that reported a failure (its own watchdog's HANG, a WRONG result from a skipped re-arm or
// a poisoned buffer, an ERROR) may have left barrier epochs, Signal slots or staging buffers in a
// state the next case would trip over, and so may its peers that waited for it.
// How often the watchdog reads the ranks' heartbeats while a case runs.
constexpr absl::Duration kWatchdogPeriod = absl::Milliseconds(50);
// How long the last rank may still take to answer once every peer timed out waiting for it.
constexpr absl::Duration kCulpritGrace = absl::Milliseconds(250);

// True when every rank but `culprit` answered HANG naming it.
bool AllWaitedFor(const std::atomic<int32_t>* waited_for, size_t world, size_t culprit) {
  for (size_t rank = 0; rank < world; ++rank) {
    if (rank != culprit && waited_for[rank].load() != static_cast<int32_t>(culprit)) return false;
  }
  return true;
}

bool NeedsReset(absl::Span<const colltest::v1::RankResult> ranks) {
  return std::any_of(ranks.begin(), ranks.end(), [](const colltest::v1::RankResult& r) {
    return r.status() != colltest::v1::CASE_STATUS_OK &&
           r.status() != colltest::v1::CASE_STATUS_UNSUPPORTED;
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
                      options.heartbeat_grace, options.spawn_timeout, options.backend == "cpu"));
  const size_t world = devices.size();

  std::vector<absl::StatusOr<std::unique_ptr<WorkerProcess>>> spawned(world);
  ParallelFor(world, [&](size_t rank) {
    WorkerSpawnSpec spec;
    spec.worker_binary = options.worker_binary;
    spec.backend = options.backend;
    spec.socket_path = absl::StrCat(socket_dir, "/rank-", devices[rank], ".sock");
    spec.device = devices[rank];
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
      group->ranks_, options.max_case_bytes, options.spawn_timeout,
      [g = group.get()] { g->Kill(); }, init_replies);
  if (group->exports_shm_) {
    absl::MutexLock lock(&group->kill_mu_);
    for (const InitReply& reply : init_replies) {
      for (const auto& handle : reply.handles()) group->shm_names_.push_back(handle.handle());
    }
  }
  if (!status.ok()) return status;  // the destructor kills the group and unlinks its segments
  return group;
}

WorkerGroup::~WorkerGroup() { Kill(); }

WorkerGroup::CaseOutcome WorkerGroup::RunCase(const CaseRequest& request) {
  const size_t world = ranks_.size();
  const absl::Duration deadline = CaseDeadline(request, grace_);
  // One absolute deadline for all ranks: threads start at slightly different times.
  const auto deadline_at = std::chrono::system_clock::now() + absl::ToChronoNanoseconds(deadline);

  std::vector<std::optional<RankResult>> answers(world);
  std::vector<CallFailure> failures(world, CallFailure::kError);
  std::vector<grpc::Status> errors(world);
  FirstFailure first([this] { Kill(); });
  // The watchdog. A worker beats while it computes and while it spins in a bounded wait, so a
  // heartbeat that stands still means the process is stuck (stopped, deadlocked, wedged in a
  // driver call), however many calls the case has left. While peers still run, a rank may stand
  // still for up to max(timeout, 1 s) + the grace; once every other rank has answered (their
  // waits for it timed out), the grace alone. The host deadline above is only the backstop for a
  // worker that beats without ever answering.
  const absl::Duration peers_running_limit =
      std::max(CaseTimeout(request), absl::Seconds(1)) + heartbeat_grace_;
  std::unique_ptr<std::atomic<bool>[]> answered(new std::atomic<bool>[world]);
  for (size_t rank = 0; rank < world; ++rank) answered[rank] = false;
  // What each rank that answered HANG waited for (-1: it did not, or has not answered yet).
  std::unique_ptr<std::atomic<int32_t>[]> waited_for(new std::atomic<int32_t>[world]);
  for (size_t rank = 0; rank < world; ++rank) waited_for[rank] = -1;
  std::atomic<int64_t> last_answer_ns{0};
  // Written by the watchdog, read after it is joined.
  std::vector<absl::Duration> stalled_for(world, absl::ZeroDuration());
  std::vector<bool> abandoned(world, false);
  absl::Notification all_answered;
  std::thread watchdog([&] {
    std::vector<uint64_t> last(world);
    std::vector<absl::Time> moved(world, absl::Now());
    for (size_t rank = 0; rank < world; ++rank) last[rank] = ranks_[rank]->Heartbeat();
    while (!all_answered.WaitForNotificationWithTimeout(kWatchdogPeriod)) {
      const absl::Time now = absl::Now();
      size_t answers_in = 0;
      for (size_t rank = 0; rank < world; ++rank) answers_in += answered[rank].load();
      const bool last_one = answers_in + 1 >= world;
      for (size_t rank = 0; rank < world; ++rank) {
        if (answered[rank].load()) continue;
        const uint64_t beat = ranks_[rank]->Heartbeat();
        if (beat != last[rank]) {
          last[rank] = beat;
          moved[rank] = now;
        } else if (now - moved[rank] > (last_one ? heartbeat_grace_ : peers_running_limit)) {
          stalled_for[rank] = now - moved[rank];
          first.Record(rank);  // kills the group: every call still in flight fails at once
          return;
        }
        // Every peer timed out waiting for this rank: the verdict is known, and what is left of
        // the rank's calls waits for peers that are gone. Waiting for it to time out in turn
        // would double the time to detect.
        if (last_one && world > 1 &&
            now - absl::FromUnixNanos(last_answer_ns.load()) > kCulpritGrace &&
            AllWaitedFor(waited_for.get(), world, rank)) {
          // Say which: a still heartbeat means the process is stuck, a moving one that it works on.
          if (now - moved[rank] > kCulpritGrace) {
            stalled_for[rank] = now - moved[rank];
          } else {
            abandoned[rank] = true;
          }
          first.Record(rank);
          return;
        }
      }
    }
  });
  ParallelFor(world, [&](size_t rank) {
    grpc::ClientContext context;
    context.set_deadline(deadline_at);
    RankResult reply;
    errors[rank] = ranks_[rank]->stub().RunCase(&context, request, &reply);
    if (errors[rank].ok()) {
      if (reply.status() == colltest::v1::CASE_STATUS_HANG) waited_for[rank] = reply.suspect_peer();
      answers[rank] = std::move(reply);
      answered[rank] = true;
      last_answer_ns = absl::ToUnixNanos(absl::Now());
      return;
    }
    failures[rank] = ranks_[rank]->ClassifyFailedCall(errors[rank]);
    answered[rank] = true;
    if (failures[rank] != CallFailure::kKilledByUs) first.Record(rank);
  });
  all_answered.Notify();
  watchdog.join();
  for (size_t rank = 0; rank < world; ++rank) {
    if (stalled_for[rank] > absl::ZeroDuration()) failures[rank] = CallFailure::kStalled;
    if (abandoned[rank]) failures[rank] = CallFailure::kAbandoned;
  }

  CaseOutcome outcome;
  outcome.ranks.resize(world);
  const std::optional<size_t> culprit = first.rank();
  for (size_t rank = 0; rank < world; ++rank) {
    RankResult& result = outcome.ranks[rank];
    if (answers[rank].has_value()) {
      result = *std::move(answers[rank]);
    } else {
      outcome.failed = true;
      result.set_suspect_peer(-1);
      switch (failures[rank]) {
        case CallFailure::kDied:
          result.set_status(colltest::v1::CASE_STATUS_ERROR);
          result.set_message(RankDiedMessage(rank, *ranks_[rank]));
          break;
        case CallFailure::kAbandoned:
          result.set_status(colltest::v1::CASE_STATUS_HANG);
          result.set_message(absl::StrCat("rank ", rank, " (pid ", ranks_[rank]->pid(),
                                          ") had not answered when every peer had timed out "
                                          "waiting for it: killed"));
          result.set_phase("watchdog");
          break;
        case CallFailure::kStalled:
          result.set_status(colltest::v1::CASE_STATUS_HANG);
          result.set_message(absl::StrCat(
              "rank ", rank, " (pid ", ranks_[rank]->pid(), ") made no progress for ",
              absl::FormatDuration(absl::Trunc(stalled_for[rank], absl::Milliseconds(100))),
              " (no heartbeat), alive but stuck: killed"));
          result.set_phase("watchdog");
          break;
        case CallFailure::kLate:
          result.set_status(colltest::v1::CASE_STATUS_HANG);
          result.set_message(absl::StrCat("rank ", rank, " did not answer within ",
                                          absl::FormatDuration(deadline)));
          result.set_phase("host deadline");
          break;
        case CallFailure::kError:
          result.set_status(colltest::v1::CASE_STATUS_ERROR);
          result.set_message(absl::StrCat(
              "rank ", rank, " RunCase failed: ",
              absl::StatusCodeToString(static_cast<absl::StatusCode>(errors[rank].error_code())),
              ": ", errors[rank].error_message()));
          break;
        case CallFailure::kKilledByUs:
          result.set_status(colltest::v1::CASE_STATUS_ERROR);
          result.set_message(
              culprit.has_value()
                  ? absl::StrCat("aborted: group torn down after rank ", *culprit, " failed")
                  : "aborted: group torn down");
          break;
      }
    }
    result.set_rank(static_cast<uint32_t>(rank));
    result.set_device(devices_[rank]);
  }
  // Any unanswered rank leaves the group in an unknown state (peers mid-protocol, buffers unarmed).
  if (outcome.failed) {
    Kill();
  } else if (NeedsReset(outcome.ranks)) {
    outcome.reset = ResetAll();
    if (!outcome.reset) {
      outcome.failed = true;
      Kill();
    }
  }
  return outcome;
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
