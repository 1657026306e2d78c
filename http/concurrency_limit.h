// At most N holders at once, a caller waiting a bounded time for its turn: the gateway serves only
// a few reads of whole runs at once (each holds its run in memory, as the service's reply and as
// the gateway's copy, while it is written), so that many readers cannot add up to gigabytes.
#pragma once

#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace colltest::http {

class ConcurrencyLimit {
 public:
  // A turn; released when destroyed.
  class Permit {
   public:
    explicit Permit(ConcurrencyLimit* limit) : limit_(limit) {}
    Permit(Permit&& other) noexcept : limit_(other.limit_) { other.limit_ = nullptr; }
    Permit& operator=(Permit&&) = delete;
    Permit(const Permit&) = delete;
    Permit& operator=(const Permit&) = delete;
    ~Permit();

   private:
    ConcurrencyLimit* limit_;
  };

  explicit ConcurrencyLimit(int limit);  // a limit below 1 counts as 1

  // A turn within `wait`, or nullopt when all `limit()` were taken for that long.
  std::optional<Permit> Acquire(absl::Duration wait);

  int limit() const { return limit_; }

 private:
  void Release();

  const int limit_;
  absl::Mutex mu_;
  int held_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace colltest::http
