// Bounded spinning. Every wait of a kernel goes through SpinUntil: it backs off (pause, then
// yield, then short sleeps) so that 8 ranks of several blocks each make progress on 2 cores, lets
// the block's posted stores drain while it waits, and gives up at the call's deadline, leaving a
// record of who waited for whom so that a hang becomes a typed result.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "worker/backends/cpu/posted_stores.h"
#include "worker/heartbeat.h"

namespace colltest::cpu {

struct HangRecord {
  int block = -1;
  int awaited_peer = -1;
  std::string phase;
};

// One per rank and call: the deadline, the first hang any block of the rank hit, and the peers its
// blocks wait for, which it publishes on the worker's page (worker/heartbeat.h) for the controller.
class SpinGuard {
 public:
  // Starts a call (or a case): no hang, no wait, and a page that names nobody.
  void Arm(std::chrono::steady_clock::time_point deadline);
  bool aborted() const { return aborted_.load(std::memory_order_relaxed); }
  std::chrono::steady_clock::time_point deadline() const { return deadline_; }
  // The first block to time out names the culprit; the others of the rank just stop. From then on
  // the page names that culprit until the next Arm, so that a controller that stops the rank
  // before its answer arrives (host deadline, watchdog) reads the peer the answer names.
  void RecordHang(int block, int awaited_peer, const char* phase);
  HangRecord record() const;
  // Block `block` waits for `peer`, or no longer does. The page names a peer while any block of
  // the rank still waits for one: a block that is done with its wait does not erase the peer that
  // another block still waits for.
  void BeginWait(int block, int peer);
  void EndWait(int block);

 private:
  void PublishLocked() const;

  std::chrono::steady_clock::time_point deadline_{};
  std::atomic<bool> aborted_{false};
  mutable std::mutex mu_;
  HangRecord record_;
  // The peer block b waits for at [b], -1 for none; grown to the grid once, then reused (a wait
  // that spins this long costs far more than the lock).
  std::vector<int> waiting_;
};

void Backoff(uint32_t polls);

// The phase a wait records when the controller cancelled the case (not a hang of any peer).
inline constexpr char kCancelledPhase[] = "cancelled";

// Polls `ready` until it returns true (-> true) or the deadline passes or another block of the
// rank gave up (-> false).
template <class Ready>
bool SpinUntil(SpinGuard& guard, PostedStores& posted, int block, int awaited_peer,
               const char* phase, Ready&& ready) {
  // Long enough that a release-free protocol really races, short enough to cost microseconds;
  // repeated, because blocks of this rank that finish later leave stores behind too.
  constexpr uint32_t kDrainEveryPolls = 48;
  bool announced = false;  // this wait told the controller whom it waits for
  auto leave = [&](bool result) {
    if (announced) guard.EndWait(block);
    return result;
  };
  for (uint32_t polls = 0;; ++polls) {
    if (ready()) return leave(true);
    if (polls % kDrainEveryPolls == kDrainEveryPolls - 1) posted.Drain();
    if ((polls & 15) == 15) {
      worker::Beat();
      if (!announced && awaited_peer >= 0) {
        guard.BeginWait(block, awaited_peer);
        announced = true;
      }
      if (guard.aborted()) return leave(false);
      if (worker::CancelRequested()) {
        guard.RecordHang(block, -1, kCancelledPhase);
        return leave(false);
      }
      if (std::chrono::steady_clock::now() > guard.deadline()) {
        guard.RecordHang(block, awaited_peer, phase);
        return leave(false);
      }
    }
    Backoff(polls);
  }
}

}  // namespace colltest::cpu
