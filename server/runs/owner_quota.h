// How many runs one caller may have queued or running at once. The device queue is FIFO, so
// without a bound one client that submits a thousand runs makes every other client wait behind
// all of them; with it, a client's share of the queue is bounded and the others' runs interleave.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"

namespace colltest::server {

inline constexpr uint32_t kDefaultMaxActiveRunsPerOwner = 16;

class OwnerQuota {
 public:
  // Holds one of an owner's slots; gives it back when destroyed.
  class Slot {
   public:
    Slot() = default;
    Slot(Slot&& other) noexcept : quota_(other.quota_), owner_(std::move(other.owner_)) {
      other.quota_ = nullptr;
    }
    Slot& operator=(Slot&& other) = delete;
    Slot(const Slot&) = delete;
    ~Slot();

   private:
    friend class OwnerQuota;
    Slot(OwnerQuota* quota, std::string owner) : quota_(quota), owner_(std::move(owner)) {}
    OwnerQuota* quota_ = nullptr;
    std::string owner_;
  };

  // 0: no limit.
  explicit OwnerQuota(uint32_t max_per_owner) : max_(max_per_owner) {}

  // A slot for `owner`, or RESOURCE_EXHAUSTED naming the owner, the count and the flag. Owners
  // are counted by CallerKey (caller_key.h): with authentication off, every connection of one
  // address is the same owner ("peer:ipv4:127.0.0.1", whatever the port).
  absl::StatusOr<Slot> Take(const std::string& owner);
  // The runs counted against `owner`'s CallerKey.
  uint32_t active(const std::string& owner) const;

 private:
  void Give(const std::string& owner);

  const uint32_t max_;
  mutable std::mutex mu_;
  std::map<std::string, uint32_t> active_;
};

}  // namespace colltest::server
