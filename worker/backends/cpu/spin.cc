#include "worker/backends/cpu/spin.h"

#include <sched.h>
#include <time.h>

namespace colltest::cpu {

void SpinGuard::RecordHang(int block, int awaited_peer, const char* phase) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!aborted_.load(std::memory_order_relaxed)) {
    record_ = HangRecord{block, awaited_peer, phase};
    aborted_.store(true, std::memory_order_relaxed);
  }
}

HangRecord SpinGuard::record() const {
  std::lock_guard<std::mutex> lock(mu_);
  return record_;
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
