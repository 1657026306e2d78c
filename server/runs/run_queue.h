// The device arbiter: runs wait here for their group of devices. A run starts when all of its
// devices are free and no run that queued earlier still waits for any of them, so runs on disjoint
// groups go concurrently, runs that share a device go in arrival order, and a big group is never
// starved by a stream of small ones that overlap it. Nothing is dropped; a waiter leaves the queue
// only by getting its devices or by being cancelled.
//
// Priority tickets (health checks) go ahead of normal runs, fair-queued per caller: each normal
// run, waiting or running, lets each caller's health checks go ahead of it once (a check already
// holding or waiting for its devices when it queues counts as that once). A priority ticket
// queues ahead of every normal waiter that no other check of its caller has gone ahead of, in
// arrival order among the priority tickets there, and behind the runs its caller already passed,
// like a normal ticket. A running normal run hands its devices to the priority tickets at the
// front between two of its cases (YieldToPriority), once per caller's check, and gets them back
// ahead of every normal waiter once those tickets are through. So the first check of a caller
// waits for at most one case of a sweep; a sweep moves on by at least one case between two
// yields; and a caller that loops health checks delays another client's run by the check running
// and at most one queued before the run (before, a runner looping checks held a 1-case run back
// for as long as it looped: 56 s with one loop, 87 s with two; now 3 s, docs/neighbours.md).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace colltest::server {

// How a run waits for its devices. A health check's runs are kPriority: they go ahead of the
// waiting runs, and a running sweep on their devices hands them over between two of its cases and
// continues after them, so a verdict does not wait behind other clients' sweeps; each caller's
// checks pass a given run only once (docs/neighbours.md).
enum class RunPriority { kNormal, kPriority };

// Whose check a priority ticket belongs to. Every run of one check (`check`, unique per check)
// may pass the runs its check passed; another check of the same `caller` may not pass them again.
// Tickets with the same claim count as one check (the default claim: the arbiter's unit tests).
struct PriorityClaim {
  std::string caller;  // the fair-queuing key: CallerKey(owner)
  uint64_t check = 0;
};

class DeviceArbiter {
 public:
  // Holds a group of devices; releases them when destroyed.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&& other) noexcept;
    ~Lease();
    void Release();
    bool held() const { return arbiter_ != nullptr; }

   private:
    friend class DeviceArbiter;
    Lease(DeviceArbiter* arbiter, uint64_t ticket) : arbiter_(arbiter), ticket_(ticket) {}
    DeviceArbiter* arbiter_ = nullptr;
    uint64_t ticket_ = 0;
  };

  // Returns true when the waiter should give up (the run was cancelled, its client went away).
  using CancelCheck = std::function<bool()>;
  // Called with the number of runs that must finish or start before this one, whenever it changes
  // while the run waits (never if it starts at once). Called without the arbiter's lock held.
  using PositionCallback = std::function<void(uint32_t runs_ahead)>;

  // `poll` bounds how late a cancellation is noticed when nobody calls Wake().
  explicit DeviceArbiter(absl::Duration poll = absl::Milliseconds(50)) : poll_(poll) {}
  DeviceArbiter(const DeviceArbiter&) = delete;
  DeviceArbiter& operator=(const DeviceArbiter&) = delete;

  // Blocks until the devices are granted (OK) or `cancelled` returns true (CANCELLED). `holder`
  // names the run for Holders() ("run r-1 of alice"); `claim` is a priority ticket's check.
  absl::StatusOr<Lease> Acquire(absl::Span<const uint32_t> devices, const CancelCheck& cancelled,
                                const PositionCallback& on_position = nullptr,
                                RunPriority priority = RunPriority::kNormal,
                                std::string holder = "", PriorityClaim claim = {});

  // Between two cases of a normal run: when a priority ticket at the front of the queue waits for
  // any of the lease's devices and no other check of its caller made this run yield before, hands
  // all of them over and blocks until they are granted again, ahead of every normal waiter (only
  // those priority tickets go first). Returns whether it yielded. CANCELLED when `cancelled`
  // returned true while it waited: the lease is then released. A priority lease, or one not held,
  // never yields.
  absl::StatusOr<bool> YieldToPriority(Lease& lease, const CancelCheck& cancelled);

  // Makes every waiter re-check its cancellation now instead of at its next poll.
  void Wake();

  // The names given to Acquire of the runs that hold any of `devices` now.
  std::vector<std::string> Holders(absl::Span<const uint32_t> devices) const;

  size_t waiting() const;
  size_t running() const;

 private:
  // kFront: the head of the queue, served before any normal waiter: priority tickets that passed
  // every normal waiter and the runs that hold their devices, and runs that yielded to them.
  // kNormal: the rest, normal waiters and priority tickets that wait behind a run their caller
  // passed.
  enum class Rank { kFront, kNormal };
  struct Ticket {
    uint64_t id;
    std::vector<uint32_t> devices;
    RunPriority priority;
    Rank rank;
    std::string holder;
    PriorityClaim claim;  // kPriority only
    // kNormal only: the check of each caller whose priority tickets went ahead of this run or
    // made it yield; no other check of those callers may do so again.
    std::map<std::string, uint64_t> passed_by;
  };
  using TicketIt = std::list<Ticket>::iterator;

  void Release(uint64_t ticket);
  // All with mu_ held.
  TicketIt EnqueuePriority(Ticket ticket);
  // At the back; the checks already ahead of it count as their callers' passes.
  TicketIt EnqueueNormal(Ticket ticket);
  // The first ticket behind the front.
  TicketIt FrontEnd();
  // Whether a running normal run on `ticket`'s devices was passed by another check of its caller.
  bool HolderPassedBy(const Ticket& ticket) const;
  bool CanStart(std::list<Ticket>::const_iterator it) const;
  uint32_t RunsAhead(std::list<Ticket>::const_iterator it) const;
  // For `held`, a running normal run about to yield: records the checks it yields to and returns
  // the last of them (end() when none); moves the front tickets it may not yield to behind the
  // front.
  TicketIt PlanYield(Ticket& held);
  // Waits until `it` may start and moves it to holding_, or returns CANCELLED (it is dropped).
  absl::Status WaitForGrant(std::unique_lock<std::mutex>& lock, TicketIt it,
                            const CancelCheck& cancelled, const PositionCallback& on_position);

  const absl::Duration poll_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t next_ticket_ = 1;
  std::list<Ticket> waiting_;           // in the order they are served
  std::map<uint64_t, Ticket> holding_;  // granted tickets
};

}  // namespace colltest::server
