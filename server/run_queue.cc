#include "server/run_queue.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"

namespace colltest::server {
namespace {

bool Overlap(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  for (uint32_t d : a) {
    if (std::find(b.begin(), b.end(), d) != b.end()) return true;
  }
  return false;
}

}  // namespace

DeviceArbiter::Lease::Lease(Lease&& other) noexcept
    : arbiter_(std::exchange(other.arbiter_, nullptr)), ticket_(other.ticket_) {}

DeviceArbiter::Lease& DeviceArbiter::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    Release();
    arbiter_ = std::exchange(other.arbiter_, nullptr);
    ticket_ = other.ticket_;
  }
  return *this;
}

DeviceArbiter::Lease::~Lease() { Release(); }

void DeviceArbiter::Lease::Release() {
  if (arbiter_ != nullptr) std::exchange(arbiter_, nullptr)->Release(ticket_);
}

DeviceArbiter::TicketIt DeviceArbiter::Enqueue(Ticket ticket) {
  // Behind every ticket of its class and of the classes served before it; list order is service
  // order, which is all CanStart looks at.
  auto pos = waiting_.end();
  if (ticket.rank == Rank::kFront) {
    pos = std::find_if(waiting_.begin(), waiting_.end(),
                       [](const Ticket& t) { return t.rank == Rank::kNormal; });
  }
  return waiting_.insert(pos, std::move(ticket));
}

bool DeviceArbiter::CanStart(std::list<Ticket>::const_iterator it) const {
  for (const auto& [id, held] : holding_) {
    if (Overlap(it->devices, held.devices)) return false;
  }
  for (auto earlier = waiting_.begin(); earlier != it; ++earlier) {
    if (Overlap(it->devices, earlier->devices)) return false;
  }
  return true;
}

uint32_t DeviceArbiter::RunsAhead(std::list<Ticket>::const_iterator it) const {
  uint32_t ahead = 0;
  for (const auto& [id, held] : holding_) ahead += Overlap(it->devices, held.devices) ? 1 : 0;
  for (auto earlier = waiting_.begin(); earlier != it; ++earlier) {
    ahead += Overlap(it->devices, earlier->devices) ? 1 : 0;
  }
  return ahead;
}

bool DeviceArbiter::PriorityWaitsFor(const std::vector<uint32_t>& devices) const {
  return std::any_of(waiting_.begin(), waiting_.end(), [&](const Ticket& t) {
    return t.priority == RunPriority::kPriority && Overlap(t.devices, devices);
  });
}

absl::Status DeviceArbiter::WaitForGrant(std::unique_lock<std::mutex>& lock, TicketIt it,
                                         const CancelCheck& cancelled,
                                         const PositionCallback& on_position) {
  int64_t reported = -1;
  while (true) {
    if (CanStart(it)) {
      const uint64_t id = it->id;
      holding_.emplace(id, std::move(*it));
      waiting_.erase(it);
      return absl::OkStatus();
    }
    const uint32_t ahead = RunsAhead(it);
    // Callbacks may take other locks or write to a network stream: never under ours.
    lock.unlock();
    const bool give_up = cancelled && cancelled();
    if (!give_up && on_position && ahead != reported) {
      on_position(ahead);
      reported = ahead;
    }
    lock.lock();
    if (give_up) {
      waiting_.erase(it);
      // This waiter may have been the one holding back later ones.
      cv_.notify_all();
      return absl::CancelledError("cancelled while waiting for devices");
    }
    if (CanStart(it)) continue;
    cv_.wait_for(lock, absl::ToChronoNanoseconds(poll_));
  }
}

absl::StatusOr<DeviceArbiter::Lease> DeviceArbiter::Acquire(absl::Span<const uint32_t> devices,
                                                            const CancelCheck& cancelled,
                                                            const PositionCallback& on_position,
                                                            RunPriority priority,
                                                            std::string holder) {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t id = next_ticket_++;
  const Rank rank = priority == RunPriority::kPriority ? Rank::kFront : Rank::kNormal;
  TicketIt it =
      Enqueue(Ticket{id, {devices.begin(), devices.end()}, priority, rank, std::move(holder)});
  if (absl::Status granted = WaitForGrant(lock, it, cancelled, on_position); !granted.ok()) {
    return granted;
  }
  return Lease(this, id);
}

absl::StatusOr<bool> DeviceArbiter::YieldToPriority(Lease& lease, const CancelCheck& cancelled) {
  if (lease.arbiter_ != this) return false;
  std::unique_lock<std::mutex> lock(mu_);
  auto held = holding_.find(lease.ticket_);
  if (held == holding_.end() || held->second.priority == RunPriority::kPriority ||
      !PriorityWaitsFor(held->second.devices)) {
    return false;
  }
  Ticket ticket = std::move(held->second);
  holding_.erase(held);
  // Front class: behind the priority tickets waiting now, ahead of every later one and of every
  // normal waiter, so the run gets its devices back before anyone else can take them.
  ticket.rank = Rank::kFront;
  TicketIt it = Enqueue(std::move(ticket));
  cv_.notify_all();
  if (absl::Status granted = WaitForGrant(lock, it, cancelled, nullptr); !granted.ok()) {
    lease.arbiter_ = nullptr;  // its ticket is gone: nothing to release
    return granted;
  }
  return true;
}

void DeviceArbiter::Release(uint64_t ticket) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    holding_.erase(ticket);
  }
  cv_.notify_all();
}

void DeviceArbiter::Wake() { cv_.notify_all(); }

std::vector<std::string> DeviceArbiter::Holders(absl::Span<const uint32_t> devices) const {
  const std::vector<uint32_t> wanted(devices.begin(), devices.end());
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> holders;
  for (const auto& [id, held] : holding_) {
    if (Overlap(held.devices, wanted)) holders.push_back(held.holder);
  }
  return holders;
}

size_t DeviceArbiter::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiting_.size();
}

size_t DeviceArbiter::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return holding_.size();
}

}  // namespace colltest::server
