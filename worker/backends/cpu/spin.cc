#include "worker/backends/cpu/spin.h"

#include <sched.h>
#include <time.h>

namespace colltest::cpu {

void SpinGuard::Arm(std::chrono::steady_clock::time_point deadline) {
  deadline_ = deadline;
  aborted_.store(false, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  record_ = HangRecord{};
  waiting_.assign(waiting_.size(), -1);
  PublishLocked();
}

void SpinGuard::RecordHang(int block, int awaited_peer, const char* phase) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!aborted_.load(std::memory_order_relaxed)) {
    record_ = HangRecord{block, awaited_peer, phase};
    aborted_.store(true, std::memory_order_relaxed);
    PublishLocked();
  }
}

HangRecord SpinGuard::record() const {
  std::lock_guard<std::mutex> lock(mu_);
  return record_;
}

void SpinGuard::BeginWait(int block, int peer) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t at = static_cast<size_t>(block);
  if (waiting_.size() <= at) waiting_.resize(at + 1, -1);
  waiting_[at] = peer;
  PublishLocked();
}

void SpinGuard::EndWait(int block) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t at = static_cast<size_t>(block);
  if (at < waiting_.size()) waiting_[at] = -1;
  PublishLocked();
}

// Under mu_, so that two blocks that start and end waits at once leave the page as the last of
// them found the waits, never as an older view.
void SpinGuard::PublishLocked() const {
  if (aborted_.load(std::memory_order_relaxed)) {
    worker::Awaiting(record_.awaited_peer);
    return;
  }
  int peer = -1;
  for (int p : waiting_) {
    if (p >= 0) peer = p;
  }
  worker::Awaiting(peer);
}

void Backoff(uint32_t polls) {
  if (polls < 8) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  } else if (polls < 512) {
    // More ranks than cores: yielding hands the core to the rank we are waiting for.
    sched_yield();
  } else {
    // Long waits (a peer not scheduled, or a real hang) should not burn a core.
    timespec ts{0, 50'000};
    nanosleep(&ts, nullptr);
  }
}

}  // namespace colltest::cpu
