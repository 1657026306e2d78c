#include "server/runs/run_queue.h"

#include <atomic>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
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

// Records the order in which named events happen on several threads.
class Order {
 public:
  void Add(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    names_.push_back(name);
  }
  std::vector<std::string> names() const {
    std::lock_guard<std::mutex> lock(mu_);
    return names_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> names_;
};

// Acquires `devices` on its own thread, records `name` once granted, holds them for `hold`.
std::thread Take(DeviceArbiter& arbiter, std::vector<uint32_t> devices, RunPriority priority,
                 Order& order, std::string name, std::chrono::milliseconds hold = 10ms) {
  return std::thread([&arbiter, devices, priority, &order, name, hold] {
    auto lease = arbiter.Acquire(devices, kNever, nullptr, priority, name);
    ASSERT_TRUE(lease.ok());
    order.Add(name);
    std::this_thread::sleep_for(hold);
  });
}

TEST(RunQueueTest, PriorityTicketsGoAheadOfEveryNormalWaiterInArrivalOrder) {
  DeviceArbiter arbiter(absl::Milliseconds(5));
  auto holder = arbiter.Acquire(std::vector<uint32_t>{0, 1}, kNever);
  Order order;
  std::vector<std::thread> threads;
  threads.push_back(Take(arbiter, {0, 1}, RunPriority::kNormal, order, "normal 1"));
  WaitForWaiting(arbiter, 1);
  threads.push_back(Take(arbiter, {0}, RunPriority::kNormal, order, "normal 2"));
  WaitForWaiting(arbiter, 2);
  threads.push_back(Take(arbiter, {1}, RunPriority::kPriority, order, "priority 1"));
  WaitForWaiting(arbiter, 3);
  threads.push_back(Take(arbiter, {0, 1}, RunPriority::kPriority, order, "priority 2"));
  WaitForWaiting(arbiter, 4);
  holder->Release();
  for (auto& t : threads) t.join();
  EXPECT_THAT(order.names(),
              ::testing::ElementsAre("priority 1", "priority 2", "normal 1", "normal 2"));
}

TEST(RunQueueTest, RunningRunLendsItsDevicesToAPriorityWaiterAndGetsThemBackFirst) {
  DeviceArbiter arbiter(absl::Milliseconds(5));
  auto sweep = arbiter.Acquire(std::vector<uint32_t>{0, 1}, kNever, nullptr, RunPriority::kNormal,
                               "run r-1 of alice");
  ASSERT_TRUE(sweep.ok());
  Order order;
  std::thread normal = Take(arbiter, {0}, RunPriority::kNormal, order, "normal");
  WaitForWaiting(arbiter, 1);
  // Nobody with priority waits: the sweep keeps its devices and does not block.
  absl::StatusOr<bool> kept = arbiter.YieldToPriority(*sweep, kNever);
  ASSERT_TRUE(kept.ok());
  EXPECT_FALSE(*kept);
  EXPECT_THAT(arbiter.Holders(std::vector<uint32_t>{1}),
              ::testing::ElementsAre("run r-1 of alice"));

  std::thread health = Take(arbiter, {1}, RunPriority::kPriority, order, "health", 30ms);
  WaitForWaiting(arbiter, 2);
  absl::StatusOr<bool> lent = arbiter.YieldToPriority(*sweep, kNever);
  ASSERT_TRUE(lent.ok());
  EXPECT_TRUE(*lent);
  order.Add("sweep again");
  EXPECT_TRUE(sweep->held());
  EXPECT_THAT(arbiter.Holders(std::vector<uint32_t>{0}),
              ::testing::ElementsAre("run r-1 of alice"));
  std::this_thread::sleep_for(20ms);
  EXPECT_THAT(order.names(), ::testing::ElementsAre("health", "sweep again"));
  sweep->Release();
  health.join();
  normal.join();
  EXPECT_THAT(order.names(), ::testing::ElementsAre("health", "sweep again", "normal"));
}

TEST(RunQueueTest, PriorityWaitersNeverStarveARunThatLendsItsDevices) {
  DeviceArbiter arbiter(absl::Milliseconds(5));
  auto sweep = arbiter.Acquire(std::vector<uint32_t>{0}, kNever);
  ASSERT_TRUE(sweep.ok());
  Order order;
  std::vector<std::thread> health;
  health.push_back(Take(arbiter, {0}, RunPriority::kPriority, order, "health 1", 50ms));
  WaitForWaiting(arbiter, 1);
  std::thread sweeper([&] {
    // Three cases; between two of them it lends its devices to whoever has priority then.
    for (int c = 0; c < 3; ++c) {
      if (c > 0) {
        absl::StatusOr<bool> lent = arbiter.YieldToPriority(*sweep, kNever);
        ASSERT_TRUE(lent.ok());
      }
      order.Add(absl::StrCat("case ", c));
    }
  });
  // health 1 holds device 0; health 2 arrives while it does, after the sweep queued to get its
  // devices back: the sweep runs a case before health 2.
  for (int i = 0; i < 2000 && order.names().size() < 2; ++i) std::this_thread::sleep_for(1ms);
  WaitForWaiting(arbiter, 1);  // the sweep, waiting to get device 0 back
  health.push_back(Take(arbiter, {0}, RunPriority::kPriority, order, "health 2", 10ms));
  WaitForWaiting(arbiter, 2);
  sweeper.join();
  sweep->Release();
  for (auto& t : health) t.join();
  EXPECT_THAT(order.names(),
              ::testing::ElementsAre("case 0", "health 1", "case 1", "health 2", "case 2"));
}

TEST(RunQueueTest, PriorityLeaseDoesNotLend) {
  DeviceArbiter arbiter(absl::Milliseconds(5));
  auto health = arbiter.Acquire(std::vector<uint32_t>{0}, kNever, nullptr, RunPriority::kPriority);
  ASSERT_TRUE(health.ok());
  Order order;
  std::thread other = Take(arbiter, {0}, RunPriority::kPriority, order, "other");
  WaitForWaiting(arbiter, 1);
  absl::StatusOr<bool> lent = arbiter.YieldToPriority(*health, kNever);
  ASSERT_TRUE(lent.ok());
  EXPECT_FALSE(*lent);
  EXPECT_TRUE(order.names().empty());
  health->Release();
  other.join();
}

TEST(RunQueueTest, RunCancelledWhileItsDevicesAreLentLetsGoOfThem) {
  DeviceArbiter arbiter(absl::Milliseconds(5));
  auto sweep = arbiter.Acquire(std::vector<uint32_t>{0}, kNever);
  ASSERT_TRUE(sweep.ok());
  Order order;
  std::thread health = Take(arbiter, {0}, RunPriority::kPriority, order, "health", 100ms);
  WaitForWaiting(arbiter, 1);
  std::atomic<bool> cancel{false};
  auto lent = std::async(std::launch::async, [&] {
    return arbiter.YieldToPriority(*sweep, [&] { return cancel.load(); });
  });
  for (int i = 0; i < 2000 && order.names().empty(); ++i) std::this_thread::sleep_for(1ms);
  cancel = true;
  const absl::StatusOr<bool> result = lent.get();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_FALSE(sweep->held());
  health.join();
  EXPECT_EQ(arbiter.running(), 0u);
  EXPECT_EQ(arbiter.waiting(), 0u);
}

// Acquires `devices` as one of `claim`'s priority runs on its own thread, records `name` once
// granted, holds them for `hold`.
std::thread TakeForCheck(DeviceArbiter& arbiter, std::vector<uint32_t> devices, PriorityClaim claim,
                         Order& order, std::string name, std::chrono::milliseconds hold = 10ms) {
  return std::thread([&arbiter, devices, claim, &order, name, hold] {
    auto lease = arbiter.Acquire(devices, kNever, nullptr, RunPriority::kPriority, name, claim);
    ASSERT_TRUE(lease.ok());
    order.Add(name);
    std::this_thread::sleep_for(hold);
  });
}

const PriorityClaim kAliceCheck1{"alice", 1};
const PriorityClaim kAliceCheck2{"alice", 2};
const PriorityClaim kBobCheck1{"bob", 3};

// The fair-queuing rule: a caller's checks go ahead of a waiting run once. Without it, a caller
// looping checks kept another client's run waiting for as long as it looped.
TEST(RunQueueTest, RuleEachCallerPassesAWaitingRunOnce) {
  DeviceArbiter arbiter(absl::Milliseconds(5));
  auto holder = arbiter.Acquire(std::vector<uint32_t>{0}, kNever);
  ASSERT_TRUE(holder.ok());
  Order order;
  std::vector<std::thread> threads;
  threads.push_back(Take(arbiter, {0}, RunPriority::kNormal, order, "run of carol"));
  WaitForWaiting(arbiter, 1);
  threads.push_back(TakeForCheck(arbiter, {0}, kAliceCheck1, order, "alice check 1"));
  WaitForWaiting(arbiter, 2);
  // Another run of the same check passes it too: a check's verdict waits for no other client.
  threads.push_back(TakeForCheck(arbiter, {0}, kAliceCheck1, order, "alice check 1, run 2"));
  WaitForWaiting(arbiter, 3);
  // Alice's next check has had its turn with this run: it queues behind it.
  threads.push_back(TakeForCheck(arbiter, {0}, kAliceCheck2, order, "alice check 2"));
  WaitForWaiting(arbiter, 4);
  holder->Release();
  for (auto& t : threads) t.join();
  EXPECT_THAT(order.names(), ::testing::ElementsAre("alice check 1", "alice check 1, run 2",
                                                    "run of carol", "alice check 2"));
}

// The same rule when the caller's checks were there first: a check holding or waiting for the
// devices when a run queues is its caller's pass. Without it, a runner looping checks on two
// connections held a 1-case run back for three checks (10.1 s): the running one, the one queued
// before the run, and the next, which passed it.
TEST(RunQueueTest, RuleACheckAheadWhenARunQueuesIsItsCallersPass) {
  const PriorityClaim alice_check3{"alice", 4};
  DeviceArbiter arbiter(absl::Milliseconds(5));
  auto running_check = arbiter.Acquire(std::vector<uint32_t>{0}, kNever, nullptr,
                                       RunPriority::kPriority, "alice check 1", kAliceCheck1);
  ASSERT_TRUE(running_check.ok());
  Order order;
  std::vector<std::thread> threads;
  threads.push_back(TakeForCheck(arbiter, {0}, kAliceCheck2, order, "alice check 2"));
  WaitForWaiting(arbiter, 1);
  threads.push_back(Take(arbiter, {0}, RunPriority::kNormal, order, "run of carol"));
  WaitForWaiting(arbiter, 2);
  threads.push_back(TakeForCheck(arbiter, {0}, alice_check3, order, "alice check 3"));
  WaitForWaiting(arbiter, 3);
  running_check->Release();
  for (auto& t : threads) t.join();
  EXPECT_THAT(order.names(),
              ::testing::ElementsAre("alice check 2", "run of carol", "alice check 3"));
}

TEST(RunQueueTest, FirstCheckOfAnotherCallerStillGoesFirst) {
  DeviceArbiter arbiter(absl::Milliseconds(5));
  auto holder = arbiter.Acquire(std::vector<uint32_t>{0}, kNever);
  ASSERT_TRUE(holder.ok());
  Order order;
  std::vector<std::thread> threads;
  threads.push_back(Take(arbiter, {0}, RunPriority::kNormal, order, "run of carol"));
  WaitForWaiting(arbiter, 1);
  threads.push_back(TakeForCheck(arbiter, {0}, kAliceCheck1, order, "alice check 1"));
  WaitForWaiting(arbiter, 2);
  threads.push_back(TakeForCheck(arbiter, {0}, kAliceCheck2, order, "alice check 2"));
  WaitForWaiting(arbiter, 3);
  // Bob has not passed the run yet: his check goes ahead of it, and so of alice's second check,
  // which waits behind the run.
  threads.push_back(TakeForCheck(arbiter, {0}, kBobCheck1, order, "bob check 1"));
  WaitForWaiting(arbiter, 4);
  holder->Release();
  for (auto& t : threads) t.join();
  EXPECT_THAT(order.names(), ::testing::ElementsAre("alice check 1", "bob check 1", "run of carol",
                                                    "alice check 2"));
}

// The same rule for a running run: it yields to each caller's checks once.
TEST(RunQueueTest, RuleARunningRunYieldsToEachCallerOnce) {
  DeviceArbiter arbiter(absl::Milliseconds(5));
  auto sweep = arbiter.Acquire(std::vector<uint32_t>{0, 1}, kNever);
  ASSERT_TRUE(sweep.ok());
  Order order;
  std::thread first = TakeForCheck(arbiter, {0}, kAliceCheck1, order, "alice check 1");
  WaitForWaiting(arbiter, 1);
  absl::StatusOr<bool> lent = arbiter.YieldToPriority(*sweep, kNever);
  ASSERT_TRUE(lent.ok());
  EXPECT_TRUE(*lent);
  first.join();

  // Another run of the same check: the sweep yields again (a check of several runs lets the
  // sweep run one case between two of them).
  std::thread same = TakeForCheck(arbiter, {1}, kAliceCheck1, order, "alice check 1, run 2");
  WaitForWaiting(arbiter, 1);
  lent = arbiter.YieldToPriority(*sweep, kNever);
  ASSERT_TRUE(lent.ok());
  EXPECT_TRUE(*lent);
  same.join();

  std::thread second = TakeForCheck(arbiter, {0}, kAliceCheck2, order, "alice check 2");
  WaitForWaiting(arbiter, 1);
  lent = arbiter.YieldToPriority(*sweep, kNever);
  ASSERT_TRUE(lent.ok());
  EXPECT_FALSE(*lent) << "alice's second check made the sweep yield again";

  std::thread bob = TakeForCheck(arbiter, {1}, kBobCheck1, order, "bob check 1");
  WaitForWaiting(arbiter, 2);
  lent = arbiter.YieldToPriority(*sweep, kNever);
  ASSERT_TRUE(lent.ok());
  EXPECT_TRUE(*lent) << "bob's first check did not make the sweep yield";
  // The sweep went back ahead of alice's second check, which it did not yield to.
  EXPECT_TRUE(sweep->held());
  EXPECT_THAT(order.names(),
              ::testing::ElementsAre("alice check 1", "alice check 1, run 2", "bob check 1"));
  sweep->Release();
  second.join();
  bob.join();
  EXPECT_THAT(order.names(), ::testing::ElementsAre("alice check 1", "alice check 1, run 2",
                                                    "bob check 1", "alice check 2"));
}

}  // namespace
}  // namespace colltest::server
