// The device arbiter: runs wait here for their group of devices. A run starts when all of its
// devices are free and no run that queued earlier still waits for any of them, so runs on disjoint
// groups go concurrently, runs that share a device go in arrival order, and a big group is never
// starved by a stream of small ones that overlap it. Nothing is dropped; a waiter leaves the queue
// only by getting its devices or by being cancelled.
//
// Priority tickets (health checks) queue ahead of every normal waiter, in arrival order among
// themselves, and a running normal run hands its devices to them between two of its cases
// (YieldToPriority), getting them back ahead of every normal waiter once the priority tickets that
// were waiting when it yielded are through. So a health verdict waits for at most one case of a
// sweep, and the sweep moves on by at least one case between two yields: neither starves.
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

// How a run waits for its devices. A health check's runs are kPriority: they go ahead of every
// waiting run, and a running sweep on their devices hands them over between two of its cases and
// continues after them, so a verdict never waits behind other clients' sweeps (docs/neighbours.md).
enum class RunPriority { kNormal, kPriority };

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
  // names the run for Holders() ("run r-1 of alice").
  absl::StatusOr<Lease> Acquire(absl::Span<const uint32_t> devices, const CancelCheck& cancelled,
                                const PositionCallback& on_position = nullptr,
                                RunPriority priority = RunPriority::kNormal,
                                std::string holder = "");

  // Between two cases of a normal run: when a priority ticket waits for any of the lease's
  // devices, hands all of them over and blocks until they are granted again, ahead of every
  // normal waiter (only the priority tickets that queued before the yield go first). Returns
  // whether it yielded. CANCELLED when `cancelled` returned true while it waited: the lease is
  // then released. A priority lease, or one not held, never yields.
  absl::StatusOr<bool> YieldToPriority(Lease& lease, const CancelCheck& cancelled);

  // Makes every waiter re-check its cancellation now instead of at its next poll.
  void Wake();

  // The names given to Acquire of the runs that hold any of `devices` now.
  std::vector<std::string> Holders(absl::Span<const uint32_t> devices) const;

  size_t waiting() const;
  size_t running() const;

 private:
  // Queue classes in the order they are served; a ticket queues behind every ticket of its own
  // class and of the classes before it.
  enum class Rank { kFront, kNormal };
  struct Ticket {
    uint64_t id;
    std::vector<uint32_t> devices;
    RunPriority priority;
    Rank rank;
    std::string holder;
  };
  using TicketIt = std::list<Ticket>::iterator;

  void Release(uint64_t ticket);
  // All with mu_ held.
  TicketIt Enqueue(Ticket ticket);
  bool CanStart(std::list<Ticket>::const_iterator it) const;
  uint32_t RunsAhead(std::list<Ticket>::const_iterator it) const;
  bool PriorityWaitsFor(const std::vector<uint32_t>& devices) const;
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
