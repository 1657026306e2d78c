#include "server/run_queue.h"

#include <atomic>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::server {
namespace {

using namespace std::chrono_literals;

const DeviceArbiter::CancelCheck kNever = [] { return false; };

// Waits until the arbiter has `n` waiters, so the tests order their arrivals deterministically.
void WaitForWaiting(const DeviceArbiter& arbiter, size_t n) {
  for (int i = 0; i < 2000 && arbiter.waiting() != n; ++i) std::this_thread::sleep_for(1ms);
  ASSERT_EQ(arbiter.waiting(), n);
}

TEST(RunQueueTest, DisjointGroupsRunConcurrently) {
  DeviceArbiter arbiter(absl::Milliseconds(5));
  auto a = arbiter.Acquire(std::vector<uint32_t>{0, 1}, kNever);
  auto b = arbiter.Acquire(std::vector<uint32_t>{2, 3}, kNever);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(arbiter.running(), 2u);
  EXPECT_EQ(arbiter.waiting(), 0u);
}

TEST(RunQueueTest, SharedDeviceWaitsAndReportsPosition) {
  DeviceArbiter arbiter(absl::Milliseconds(5));
  auto first = arbiter.Acquire(std::vector<uint32_t>{0, 1}, kNever);
  ASSERT_TRUE(first.ok());
  std::vector<uint32_t> positions;
  std::mutex mu;
  std::atomic<bool> granted{false};
  std::thread waiter([&] {
    auto lease = arbiter.Acquire(std::vector<uint32_t>{1, 2}, kNever, [&](uint32_t ahead) {
      std::lock_guard<std::mutex> lock(mu);
      positions.push_back(ahead);
    });
    EXPECT_TRUE(lease.ok());
    granted = true;
  });
  WaitForWaiting(arbiter, 1);
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(granted);
  first->Release();
  waiter.join();
  EXPECT_TRUE(granted);
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_THAT(positions, ::testing::ElementsAre(1));
}

TEST(RunQueueTest, FifoPerDeviceSoABigGroupIsNotStarved) {
  DeviceArbiter arbiter(absl::Milliseconds(5));
  auto holder = arbiter.Acquire(std::vector<uint32_t>{0}, kNever);
  ASSERT_TRUE(holder.ok());

  std::mutex mu;
  std::vector<std::string> order;
  auto record = [&](const std::string& name) {
    std::lock_guard<std::mutex> lock(mu);
    order.push_back(name);
  };
  // big needs 0 and 1 and queues first; small needs only the free device 1 but must not jump
  // ahead of big, or a stream of small runs could starve big forever.
  std::thread big([&] {
    auto lease = arbiter.Acquire(std::vector<uint32_t>{0, 1}, kNever);
    ASSERT_TRUE(lease.ok());
    record("big");
    std::this_thread::sleep_for(20ms);
  });
  WaitForWaiting(arbiter, 1);
  std::thread small([&] {
    auto lease = arbiter.Acquire(std::vector<uint32_t>{1}, kNever);
    ASSERT_TRUE(lease.ok());
    record("small");
  });
  WaitForWaiting(arbiter, 2);
  // A run on an unrelated device is not held up by either.
  auto other = arbiter.Acquire(std::vector<uint32_t>{5}, kNever);
  ASSERT_TRUE(other.ok());
  std::this_thread::sleep_for(20ms);
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_TRUE(order.empty());
  }
  holder->Release();
  big.join();
  small.join();
  EXPECT_THAT(order, ::testing::ElementsAre("big", "small"));
}

TEST(RunQueueTest, ArrivalOrderOnOneDevice) {
  DeviceArbiter arbiter(absl::Milliseconds(5));
  auto holder = arbiter.Acquire(std::vector<uint32_t>{0}, kNever);
  std::mutex mu;
  std::vector<int> order;
  std::vector<std::thread> threads;
  for (int i = 0; i < 5; ++i) {
    threads.emplace_back([&, i] {
      auto lease = arbiter.Acquire(std::vector<uint32_t>{0}, kNever);
      ASSERT_TRUE(lease.ok());
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(i);
    });
    WaitForWaiting(arbiter, i + 1);
  }
  holder->Release();
  for (auto& t : threads) t.join();
  EXPECT_THAT(order, ::testing::ElementsAre(0, 1, 2, 3, 4));
}

TEST(RunQueueTest, CancelWhileQueued) {
  DeviceArbiter arbiter(absl::Milliseconds(5));
  auto holder = arbiter.Acquire(std::vector<uint32_t>{0}, kNever);
  std::atomic<bool> cancel{false};
  auto result = std::async(std::launch::async, [&] {
    return arbiter.Acquire(std::vector<uint32_t>{0}, [&] { return cancel.load(); });
  });
  WaitForWaiting(arbiter, 1);
  cancel = true;
  arbiter.Wake();
  auto lease = result.get();
  ASSERT_FALSE(lease.ok());
  EXPECT_EQ(lease.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(arbiter.waiting(), 0u);
  EXPECT_EQ(arbiter.running(), 1u);  // the holder keeps its devices
}

TEST(RunQueueTest, CancelledWaiterUnblocksThoseBehindIt) {
  DeviceArbiter arbiter(absl::Milliseconds(5));
  auto holder = arbiter.Acquire(std::vector<uint32_t>{0}, kNever);
  std::atomic<bool> cancel{false};
  // blocked waits for 0 and 1; behind it, a run on 1 alone is held back only by FIFO.
  auto blocked = std::async(std::launch::async, [&] {
    return arbiter.Acquire(std::vector<uint32_t>{0, 1}, [&] { return cancel.load(); });
  });
  WaitForWaiting(arbiter, 1);
  auto behind = std::async(std::launch::async,
                           [&] { return arbiter.Acquire(std::vector<uint32_t>{1}, kNever); });
  WaitForWaiting(arbiter, 2);
  cancel = true;
  EXPECT_FALSE(blocked.get().ok());
  EXPECT_TRUE(behind.get().ok());
}

TEST(RunQueueTest, LeaseReleasesOnDestruction) {
  DeviceArbiter arbiter(absl::Milliseconds(5));
  {
    auto lease = arbiter.Acquire(std::vector<uint32_t>{0}, kNever);
    ASSERT_TRUE(lease.ok());
    DeviceArbiter::Lease moved = *std::move(lease);
    EXPECT_EQ(arbiter.running(), 1u);
  }
  EXPECT_EQ(arbiter.running(), 0u);
}

}  // namespace
}  // namespace colltest::server
