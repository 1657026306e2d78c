// The device arbiter: runs wait here for their group of devices. A run starts when all of its
// devices are free and no run that queued earlier still waits for any of them, so runs on disjoint
// groups go concurrently, runs that share a device go in arrival order, and a big group is never
// starved by a stream of small ones that overlap it. Nothing is dropped; a waiter leaves the queue
// only by getting its devices or by being cancelled.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace colltest::server {

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

  // Blocks until the devices are granted (OK) or `cancelled` returns true (CANCELLED).
  absl::StatusOr<Lease> Acquire(absl::Span<const uint32_t> devices, const CancelCheck& cancelled,
                                const PositionCallback& on_position = nullptr);

  // Makes every waiter re-check its cancellation now instead of at its next poll.
  void Wake();

  size_t waiting() const;
  size_t running() const;

 private:
  struct Ticket {
    uint64_t id;
    std::vector<uint32_t> devices;
  };

  void Release(uint64_t ticket);
  // Both with mu_ held.
  bool CanStart(std::list<Ticket>::const_iterator it) const;
  uint32_t RunsAhead(std::list<Ticket>::const_iterator it) const;

  const absl::Duration poll_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t next_ticket_ = 1;
  std::list<Ticket> waiting_;                          // arrival order
  std::map<uint64_t, std::vector<uint32_t>> holding_;  // granted tickets
};

}  // namespace colltest::server
