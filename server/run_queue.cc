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

bool DeviceArbiter::CanStart(std::list<Ticket>::const_iterator it) const {
  for (const auto& [id, devices] : holding_) {
    if (Overlap(it->devices, devices)) return false;
  }
  for (auto earlier = waiting_.begin(); earlier != it; ++earlier) {
    if (Overlap(it->devices, earlier->devices)) return false;
  }
  return true;
}

uint32_t DeviceArbiter::RunsAhead(std::list<Ticket>::const_iterator it) const {
  uint32_t ahead = 0;
  for (const auto& [id, devices] : holding_) ahead += Overlap(it->devices, devices) ? 1 : 0;
  for (auto earlier = waiting_.begin(); earlier != it; ++earlier) {
    ahead += Overlap(it->devices, earlier->devices) ? 1 : 0;
  }
  return ahead;
}

absl::StatusOr<DeviceArbiter::Lease> DeviceArbiter::Acquire(absl::Span<const uint32_t> devices,
                                                            const CancelCheck& cancelled,
                                                            const PositionCallback& on_position) {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t id = next_ticket_++;
  auto it = waiting_.insert(waiting_.end(), Ticket{id, {devices.begin(), devices.end()}});
  int64_t reported = -1;
  while (true) {
    if (CanStart(it)) {
      holding_.emplace(id, std::move(it->devices));
      waiting_.erase(it);
      return Lease(this, id);
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

void DeviceArbiter::Release(uint64_t ticket) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    holding_.erase(ticket);
  }
  cv_.notify_all();
}

void DeviceArbiter::Wake() { cv_.notify_all(); }

size_t DeviceArbiter::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiting_.size();
}

size_t DeviceArbiter::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return holding_.size();
}

}  // namespace colltest::server
