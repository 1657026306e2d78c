#include "server/runs/run_queue.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <string>
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

// Whether a priority ticket of `claim` may go ahead of a normal run that `passed_by` checks went
// ahead of: once per caller, by every run of that one check.
bool MayPass(const std::map<std::string, uint64_t>& passed_by, const PriorityClaim& claim) {
  auto it = passed_by.find(claim.caller);
  return it == passed_by.end() || it->second == claim.check;
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

DeviceArbiter::TicketIt DeviceArbiter::FrontEnd() {
  return std::find_if(waiting_.begin(), waiting_.end(),
                      [](const Ticket& t) { return t.rank == Rank::kNormal; });
}

bool DeviceArbiter::HolderPassedBy(const Ticket& ticket) const {
  return std::any_of(holding_.begin(), holding_.end(), [&](const auto& entry) {
    const Ticket& held = entry.second;
    return held.priority == RunPriority::kNormal && Overlap(held.devices, ticket.devices) &&
           !MayPass(held.passed_by, ticket.claim);
  });
}

DeviceArbiter::TicketIt DeviceArbiter::EnqueuePriority(Ticket ticket) {
  // Behind every ticket it may not pass: a front ticket (a run that yielded waits for its next
  // case, not for later checks), a normal waiter another check of this caller passed, and every
  // ticket of the same caller. Another caller's priority ticket that waits behind a run (rank
  // kNormal) does not hold it back. List order is service order, which is all CanStart looks at.
  auto pos = waiting_.begin();
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
    const bool normal_waiter = it->priority == RunPriority::kNormal && it->rank == Rank::kNormal;
    if (normal_waiter && MayPass(it->passed_by, ticket.claim)) continue;
    const bool other_caller_waiting_behind_a_run = it->priority == RunPriority::kPriority &&
                                                   it->rank == Rank::kNormal &&
                                                   it->claim.caller != ticket.claim.caller;
    if (!other_caller_waiting_behind_a_run) pos = std::next(it);
  }
  const bool at_front =
      std::all_of(waiting_.begin(), pos, [](const Ticket& t) { return t.rank == Rank::kFront; });
  ticket.rank = Rank::kFront;
  if (!at_front || HolderPassedBy(ticket)) {
    // Waits for a run its caller passed: behind the front (the run will not yield to it).
    ticket.rank = Rank::kNormal;
    if (at_front) pos = FrontEnd();
  }
  // Every run it goes ahead of remembers this check; the overlapping ones only: it delays the
  // others not at all.
  for (auto it = pos; it != waiting_.end(); ++it) {
    if (it->priority == RunPriority::kNormal && Overlap(it->devices, ticket.devices)) {
      it->passed_by.emplace(ticket.claim.caller, ticket.claim.check);
    }
  }
  return waiting_.insert(pos, std::move(ticket));
}

DeviceArbiter::TicketIt DeviceArbiter::EnqueueNormal(Ticket ticket) {
  // A check that holds or waits for these devices when the run queues is ahead of it already: that
  // is its caller's one pass. Counted as a jump, a runner looping checks on two connections kept a
  // 1-case run waiting for three checks (10.1 s on a busy 2-core machine): the one running, the
  // one queued before the run, and the next one, which jumped it.
  const auto note_ahead = [&ticket](const Ticket& other) {
    if (other.priority == RunPriority::kPriority && Overlap(other.devices, ticket.devices)) {
      ticket.passed_by.emplace(other.claim.caller, other.claim.check);
    }
  };
  for (const auto& [id, held] : holding_) note_ahead(held);
  for (const Ticket& waiting : waiting_) note_ahead(waiting);
  return waiting_.insert(waiting_.end(), std::move(ticket));
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

DeviceArbiter::TicketIt DeviceArbiter::PlanYield(Ticket& held) {
  // Only the front: a priority ticket further back waits behind a run its caller passed, which
  // would take the devices in its place. A front ticket that may not pass `held` (another check
  // of a caller it yields to now or yielded to before) goes behind the front, to wait for `held`.
  TicketIt last = waiting_.end();
  std::vector<TicketIt> not_passing;
  for (auto it = waiting_.begin(); it != waiting_.end() && it->rank == Rank::kFront; ++it) {
    if (!Overlap(it->devices, held.devices)) continue;
    // A run that yielded never overlaps a running one: they held their devices at once.
    if (it->priority != RunPriority::kPriority) break;
    if (MayPass(held.passed_by, it->claim)) {
      held.passed_by.emplace(it->claim.caller, it->claim.check);
      last = it;
    } else {
      not_passing.push_back(it);
    }
  }
  const TicketIt front_end = FrontEnd();
  for (TicketIt it : not_passing) {
    it->rank = Rank::kNormal;
    waiting_.splice(front_end, waiting_, it);
  }
  return last;
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
                                                            std::string holder,
                                                            PriorityClaim claim) {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t id = next_ticket_++;
  Ticket ticket{id,
                {devices.begin(), devices.end()},
                priority,
                Rank::kNormal,
                std::move(holder),
                std::move(claim),
                {}};
  TicketIt it = priority == RunPriority::kPriority ? EnqueuePriority(std::move(ticket))
                                                   : EnqueueNormal(std::move(ticket));
  if (absl::Status granted = WaitForGrant(lock, it, cancelled, on_position); !granted.ok()) {
    return granted;
  }
  return Lease(this, id);
}

absl::StatusOr<bool> DeviceArbiter::YieldToPriority(Lease& lease, const CancelCheck& cancelled) {
  if (lease.arbiter_ != this) return false;
  std::unique_lock<std::mutex> lock(mu_);
  auto held = holding_.find(lease.ticket_);
  if (held == holding_.end() || held->second.priority == RunPriority::kPriority) return false;
  const TicketIt last = PlanYield(held->second);
  if (last == waiting_.end()) return false;
  Ticket ticket = std::move(held->second);
  holding_.erase(held);
  // At the front, right behind the tickets it yields to, ahead of every later one and of every
  // normal waiter, so the run gets its devices back before anyone else can take them.
  ticket.rank = Rank::kFront;
  TicketIt it = waiting_.insert(std::next(last), std::move(ticket));
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
