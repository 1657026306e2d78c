// A WorkerPool that runs nothing: every rank answers OK with a plausible timing unless a test
// installs its own behaviour. Lets the service be tested end to end without worker processes.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "server/workers/worker_pool.h"

namespace colltest::server::testing {

class FakeWorkerPool final : public WorkerPool {
 public:
  using Handler = std::function<absl::StatusOr<std::vector<colltest::v1::RankResult>>(
      absl::Span<const uint32_t> devices, const colltest::worker::v1::CaseRequest& request)>;

  struct Call {
    std::vector<uint32_t> devices;
    colltest::worker::v1::CaseRequest request;
  };

  static std::vector<colltest::v1::RankResult> AllOk(absl::Span<const uint32_t> devices,
                                                     double median_us = 10.0) {
    std::vector<colltest::v1::RankResult> out;
    for (uint32_t r = 0; r < devices.size(); ++r) {
      colltest::v1::RankResult& rank = out.emplace_back();
      rank.set_rank(r);
      rank.set_device(devices[r]);
      rank.set_status(colltest::v1::CASE_STATUS_OK);
      rank.set_suspect_peer(-1);
      rank.mutable_timing()->set_median_us(median_us + r);
      rank.mutable_timing()->set_samples(20);
      rank.mutable_diff()->set_first_bad_call(-1);
      rank.mutable_diff()->set_checked(1000);
    }
    return out;
  }

  void SetHandler(Handler handler) {
    std::lock_guard<std::mutex> lock(mu_);
    handler_ = std::move(handler);
  }

  // While closed, RunCase blocks: a test can hold a run in its first case.
  void CloseGate() {
    std::lock_guard<std::mutex> lock(mu_);
    gate_open_ = false;
  }
  void OpenGate() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      gate_open_ = true;
    }
    cv_.notify_all();
  }
  // Waits until `n` calls have entered RunCase.
  void WaitForCalls(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return entered_ >= n; });
  }

  std::vector<Call> calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  size_t cancelled_calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return cancelled_calls_;
  }
  bool shut_down() const {
    std::lock_guard<std::mutex> lock(mu_);
    return shut_down_;
  }

  using WorkerPool::RunCase;
  absl::StatusOr<std::vector<colltest::v1::RankResult>> RunCase(
      absl::Span<const uint32_t> devices, const colltest::worker::v1::CaseRequest& request,
      const std::function<bool()>& cancelled) override {
    Handler handler;
    {
      std::unique_lock<std::mutex> lock(mu_);
      calls_.push_back(Call{{devices.begin(), devices.end()}, request});
      ++entered_;
      cv_.notify_all();
      // A closed gate holds the case like a long-running one: a cancellation stops it.
      while (!cv_.wait_for(lock, std::chrono::milliseconds(10), [&] { return gate_open_; })) {
        if (cancelled && cancelled()) {
          ++cancelled_calls_;
          return absl::CancelledError("the case was stopped: cancelled in the fake pool");
        }
      }
      handler = handler_;
    }
    if (handler) return handler(devices, request);
    return AllOk(devices);
  }

  void Shutdown() override {
    std::lock_guard<std::mutex> lock(mu_);
    shut_down_ = true;
  }
  std::vector<int> LivePids() const override { return {}; }
  uint64_t Restarts() const override { return 0; }
  std::vector<colltest::v1::GroupHealth> GroupStates() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return group_states_;
  }
  void SetGroupStates(std::vector<colltest::v1::GroupHealth> states) {
    std::lock_guard<std::mutex> lock(mu_);
    group_states_ = std::move(states);
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  Handler handler_;
  bool gate_open_ = true;
  size_t entered_ = 0;
  size_t cancelled_calls_ = 0;
  std::vector<Call> calls_;
  bool shut_down_ = false;
  std::vector<colltest::v1::GroupHealth> group_states_;
};

}  // namespace colltest::server::testing
