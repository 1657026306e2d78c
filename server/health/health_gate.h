// What stands between a Health call and the health check, so that a node that runs jobs gets an
// answer in time and is not tested more than asked (docs/neighbours.md):
//  - a verdict at most max_verdict_age_ms old on the same devices, level and pairs is answered
//    from memory (cached), running nothing;
//  - a call with a deadline gives up waiting for devices in time to answer before it, and a BUSY
//    refusal (other processes on the devices) is no error: both answer OK with busy = true, the
//    reason, and the last verdict on those devices (status UNSPECIFIED when there is none);
//  - a check that would run is refused RESOURCE_EXHAUSTED beyond the caller's rate
//    (health_rate_limit.h, --health-rate-per-caller); an answer from memory is not counted;
//  - every answer names the machine and the level, and a fresh one is stamped with its time.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "colltest/v1/colltest.pb.h"
#include "server/health/health_rate_limit.h"
#include "server/runs/run_executor.h"

namespace colltest::server {

// When a check that has not started yet stops waiting for its devices: early enough before the
// call's deadline to answer, max(1 s, 10 % of the time left now). InfiniteFuture without one.
absl::Time GiveUpAt(absl::Time now, absl::Time deadline);

class HealthGate {
 public:
  // Runs one health check (HealthChecker::Check).
  using Checker = std::function<absl::StatusOr<colltest::v1::HealthResponse>(
      const colltest::v1::HealthRequest&, RunObserver&, const std::string& owner)>;
  // The runs holding any of `devices` now (RunExecutor::Holders), for busy_reason.
  using HoldersFn = std::function<std::vector<std::string>(const std::vector<uint32_t>&)>;

  struct Options {
    colltest::v1::MachineIdentity machine;
    std::vector<uint32_t> all_devices;    // what a request without devices checks
    uint32_t health_rate_per_caller = 0;  // checks one caller may start per minute; 0: no limit
    std::function<absl::Time()> now = [] { return absl::Now(); };
  };

  HealthGate(Checker check, HoldersFn holders, Options options);

  // `deadline`: the call's, InfiniteFuture when it has none. Errors are the checker's, except
  // the two busy cases above and the rate limit. `owner` is the caller (auth.h Caller::name).
  absl::StatusOr<colltest::v1::HealthResponse> Check(const colltest::v1::HealthRequest& request,
                                                     RunObserver& observer, absl::Time deadline,
                                                     const std::string& owner = "");

 private:
  // The verdicts remembered: one per devices (in request order), level, and pairs or not.
  // Devices, level, pairs and the kernel plugins named.
  using Key = std::tuple<std::vector<uint32_t>, int, bool, std::vector<std::string>>;
  Key KeyOf(const colltest::v1::HealthRequest& request) const;
  // The busy answer: the last verdict for `key` if any, with the reason.
  colltest::v1::HealthResponse Busy(const Key& key, const std::string& reason) const;
  // Sets what every answer carries.
  void Stamp(const Key& key, colltest::v1::HealthResponse& response) const;

  const Checker check_;
  const HoldersFn holders_;
  const Options options_;
  HealthRateLimit rate_limit_;
  mutable std::mutex mu_;
  std::map<Key, colltest::v1::HealthResponse> last_;
};

}  // namespace colltest::server
