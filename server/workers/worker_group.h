// One group of W workers (rank i on devices[i]): started together, run cases together, and killed
// together, since a rank that loses a peer cannot go on alone.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "colltest/v1/colltest.pb.h"
#include "colltest/v1/worker.pb.h"
#include "server/workers/case_facts.h"
#include "server/workers/fork_thread.h"
#include "server/workers/worker_pool_options.h"
#include "server/workers/worker_process.h"

namespace colltest::server {

class WorkerGroup {
 public:
  // Spawns one worker per device (sockets in `socket_dir`) and rendezvouses them. A group that
  // cannot start is killed and cleaned up before the error, which names the rank, is returned.
  static absl::StatusOr<std::unique_ptr<WorkerGroup>> Start(const WorkerPoolOptions& options,
                                                            const std::string& socket_dir,
                                                            absl::Span<const uint32_t> devices,
                                                            ForkThread& fork_thread);
  ~WorkerGroup();  // Kill()

  WorkerGroup(const WorkerGroup&) = delete;
  WorkerGroup& operator=(const WorkerGroup&) = delete;

  const std::vector<uint32_t>& devices() const { return devices_; }

  // Polled every 50 ms while a case runs; true stops the case (Cancel, client gone, shutdown).
  using CancelCheck = std::function<bool()>;
  // Sends the case to every rank at once and returns what happened, facts only
  // (server/workers/verdict.h RankVerdicts makes the ranks' results of them). The first rank found
  // dead or late gets the whole group SIGKILLed at once (its peers may be stuck in a barrier
  // waiting for it). When every rank answered but some reported a failure, every rank is Reset
  // before the next case; a group that cannot be reset is killed. Not to be called concurrently on
  // one group. Once `cancelled` returns true, every rank's cancel word is set; ranks that have not
  // answered 1 s later are killed with their group.
  CaseFacts RunCase(const colltest::worker::v1::CaseRequest& request,
                    const CancelCheck& cancelled = nullptr);

  bool AllAlive();
  std::vector<int> LivePids();

  // SIGKILLs every rank, reaps them, removes their sockets and shared-memory segments. Idempotent,
  // safe from any thread, also while a case runs.
  void Kill();
  // Asks every rank to shut down, waiting up to `grace`, then Kill()s what is left.
  void Stop(absl::Duration grace);

 private:
  WorkerGroup(std::vector<uint32_t> devices, absl::Duration grace, absl::Duration heartbeat_grace,
              absl::Duration reset_timeout)
      : devices_(std::move(devices)),
        grace_(grace),
        heartbeat_grace_(heartbeat_grace),
        reset_timeout_(reset_timeout) {}

  struct CaseWatch;
  void Watchdog(const colltest::worker::v1::CaseRequest& request, const CancelCheck& cancelled,
                CaseWatch& watch);
  // One rank's RunCase call: its answer, or how the call failed, into facts.ranks[rank].
  void CallRank(size_t rank, const colltest::worker::v1::CaseRequest& request,
                std::chrono::system_clock::time_point deadline_at, CaseWatch& watch,
                CaseFacts& facts);
  // Notes whom every rank waits for (the verdict needs it once they are dead), then Kill()s.
  void KillRecordingWaits();
  // Reset on every rank at once; false when any rank did not confirm.
  bool ResetAll();

  const std::vector<uint32_t> devices_;
  const absl::Duration grace_;
  const absl::Duration heartbeat_grace_;
  const absl::Duration reset_timeout_;
  // Set once by Start, before the group is shared with any other thread.
  std::vector<std::unique_ptr<WorkerProcess>> ranks_;

  absl::Mutex kill_mu_;
  bool killed_ ABSL_GUARDED_BY(kill_mu_) = false;
  // Recorded from the Init replies of ranks whose backend announced that its buffer handles are
  // shared-memory segments (Capabilities.uses_shared_memory_segments); Start's abort may
  // have killed the group before they are known.
  std::vector<std::string> shm_names_ ABSL_GUARDED_BY(kill_mu_);
  CaseWatch* watch_ ABSL_GUARDED_BY(kill_mu_) = nullptr;  // the case running now, if any
};

}  // namespace colltest::server
