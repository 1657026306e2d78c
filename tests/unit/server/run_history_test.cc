#include "server/run_history.h"

#include <malloc.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

v1::SweepSpec Spec(const std::string& label) {
  v1::SweepSpec spec;
  spec.set_label(label);
  return spec;
}

v1::CaseResult Case(v1::CaseStatus status) {
  v1::CaseResult c;
  c.set_status(status);
  return c;
}

// Unguessable: 32 hex digits, and consecutive ids share no prefix beyond "r-" (a counter or a
// clock would make neighbours share their leading digits). 100 ids sharing 8 more characters by
// chance has odds of about 2^-32 per pair.
TEST(RunHistoryTest, IdsAreRandomHex) {
  RunHistory history;
  std::set<std::string> ids;
  std::string previous;
  int common_prefixes = 0;
  for (int i = 0; i < 100; ++i) {
    const std::string id = history.Create(Spec(""), "cpu");
    EXPECT_THAT(id, MatchesRegex("r-[0-9a-f]{32}"));
    if (!previous.empty() && id.compare(0, 10, previous, 0, 10) == 0) ++common_prefixes;
    previous = id;
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 100u);
  EXPECT_EQ(common_prefixes, 0);
}

TEST(RunHistoryTest, RecordsTheOwner) {
  RunHistory history;
  const std::string id = history.Create(Spec("x"), "cpu", "ci");
  EXPECT_EQ(history.Get(id)->owner(), "ci");
  EXPECT_EQ(*history.Owner(id), "ci");
  EXPECT_EQ(history.List(0).at(0).owner(), "ci");
  EXPECT_EQ(history.Owner("r-0").status().code(), absl::StatusCode::kNotFound);
}

// A case whose serialized size is about `bytes`.
v1::CaseResult BigCase(size_t bytes) {
  v1::CaseResult c = Case(v1::CASE_STATUS_UNSUPPORTED);
  c.set_message(std::string(bytes, 'x'));
  return c;
}

std::string FinishedRun(RunHistory& history, const std::string& label, int cases,
                        size_t case_bytes) {
  const std::string id = history.Create(Spec(label), "cpu", "owner");
  EXPECT_TRUE(history.MarkRunning(id).ok());
  for (int i = 0; i < cases; ++i) EXPECT_TRUE(history.AddCase(id, BigCase(case_bytes)).ok());
  EXPECT_TRUE(history.Finish(id, v1::RUN_STATE_DONE, "done").ok());
  return id;
}

uint64_t SerializedBytes(const RunHistory& history, const std::vector<std::string>& ids) {
  uint64_t total = 0;
  for (const std::string& id : ids) {
    if (auto run = history.Get(id); run.ok()) total += run->ByteSizeLong();
  }
  return total;
}

TEST(RunHistoryTest, AccountsTheSerializedSizeOfEveryStep) {
  RunHistory history;
  const std::string id = history.Create(Spec("nightly"), "cpu", "ci");
  EXPECT_EQ(history.bytes(), history.Get(id)->ByteSizeLong());
  ASSERT_TRUE(history.MarkRunning(id).ok());
  // Both sides of the 127/128-byte varint boundary of the length prefix.
  for (size_t size : {10, 120, 125, 126, 127, 128, 300, 20000}) {
    ASSERT_TRUE(history.AddCase(id, BigCase(size)).ok());
    EXPECT_EQ(history.bytes(), history.Get(id)->ByteSizeLong()) << size;
  }
  ASSERT_TRUE(history.Finish(id, v1::RUN_STATE_DONE, std::string(500, 'm')).ok());
  EXPECT_EQ(history.bytes(), history.Get(id)->ByteSizeLong());
  const std::string other = FinishedRun(history, "other", 3, 50);
  EXPECT_EQ(history.bytes(), SerializedBytes(history, {id, other}));
}

TEST(RunHistoryTest, BoundedByBytesForgettingTheOldestFinishedFirst) {
  // Each run is about 10 x 1,000 bytes: a 50,000-byte bound holds four of them, not five.
  RunHistory history(/*capacity=*/1000, /*max_bytes=*/50000);
  std::vector<std::string> ids;
  for (int i = 0; i < 20; ++i) {
    ids.push_back(FinishedRun(history, std::to_string(i), 10, 1000));
    EXPECT_LE(history.bytes(), 50000u) << i;
  }
  EXPECT_EQ(history.size(), 4u);
  EXPECT_EQ(history.bytes(), SerializedBytes(history, ids));
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(history.Get(ids[i]).status().code(), absl::StatusCode::kNotFound) << i;
  }
  for (int i = 16; i < 20; ++i) EXPECT_TRUE(history.Get(ids[i]).ok()) << i;
  EXPECT_THAT(std::string(history.Get(ids[0]).status().message()), HasSubstr("50000 bytes"));
}

TEST(RunHistoryTest, ARunningRunIsNeverEvictedByBytes) {
  RunHistory history(/*capacity=*/1000, /*max_bytes=*/20000);
  const std::string old_done = FinishedRun(history, "old", 5, 1000);
  const std::string running = history.Create(Spec("long"), "cpu");
  ASSERT_TRUE(history.MarkRunning(running).ok());
  // The running run alone grows past the bound: the finished one makes room, the running one
  // keeps every case.
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(history.AddCase(running, BigCase(1000)).ok());
  EXPECT_EQ(history.Get(old_done).status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(history.Get(running).ok());
  EXPECT_EQ(history.Get(running)->cases_size(), 40);
  EXPECT_GT(history.bytes(), 20000u);

  // Once finished it is still readable by whoever waited for it; the next run pushes it out.
  ASSERT_TRUE(history.Finish(running, v1::RUN_STATE_DONE).ok());
  EXPECT_TRUE(history.Get(running).ok());
  const std::string next = FinishedRun(history, "next", 1, 100);
  EXPECT_EQ(history.Get(running).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(history.Get(next).ok());
  EXPECT_LE(history.bytes(), 20000u);
}

TEST(RunHistoryTest, LifeOfARun) {
  RunHistory history;
  const std::string id = history.Create(Spec("nightly"), "cpu");
  auto run = history.Get(id);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->state(), v1::RUN_STATE_QUEUED);
  EXPECT_EQ(run->backend(), "cpu");
  EXPECT_GT(run->created_unix_ms(), 0);

  // Cases only land on a running run.
  EXPECT_EQ(history.AddCase(id, Case(v1::CASE_STATUS_OK)).code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(history.MarkRunning(id).ok());
  EXPECT_EQ(history.MarkRunning(id).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(history.AddCase(id, Case(v1::CASE_STATUS_OK)).ok());
  ASSERT_TRUE(history.AddCase(id, Case(v1::CASE_STATUS_HANG)).ok());
  ASSERT_TRUE(history.AddCase(id, Case(v1::CASE_STATUS_UNSUPPORTED)).ok());
  EXPECT_EQ(history.Finish(id, v1::RUN_STATE_RUNNING).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(history.Finish(id, v1::RUN_STATE_DONE, "3 cases").ok());
  EXPECT_EQ(history.Finish(id, v1::RUN_STATE_CANCELLED).code(),
            absl::StatusCode::kFailedPrecondition);

  run = history.Get(id);
  EXPECT_EQ(run->state(), v1::RUN_STATE_DONE);
  EXPECT_EQ(run->cases_size(), 3);
  EXPECT_EQ(run->message(), "3 cases");
  EXPECT_GE(run->finished_unix_ms(), run->created_unix_ms());

  const auto list = history.List(0);
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].cases(), 3u);
  EXPECT_EQ(list[0].ok(), 1u);
  EXPECT_EQ(list[0].failed(), 1u);
  EXPECT_EQ(list[0].label(), "nightly");
}

TEST(RunHistoryTest, UnknownIds) {
  RunHistory history;
  EXPECT_EQ(history.Get("r-1-1").status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(history.Get("r-1-1").status().message()), HasSubstr("r-1-1"));
  EXPECT_EQ(history.RequestCancel("nope").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(history.MarkRunning("nope").code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(history.CancelRequested("nope"));
}

TEST(RunHistoryTest, ListIsNewestFirstAndLimited) {
  RunHistory history;
  for (int i = 0; i < 60; ++i) history.Create(Spec(std::to_string(i)), "cpu");
  auto list = history.List(0);
  ASSERT_EQ(list.size(), 50u);  // the default limit
  EXPECT_EQ(list[0].label(), "59");
  EXPECT_EQ(list[49].label(), "10");
  list = history.List(3);
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[2].label(), "57");
}

TEST(RunHistoryTest, BoundedKeepingTheNewestAndTheActive) {
  RunHistory history(10);
  const std::string active = history.Create(Spec("active"), "cpu");
  std::vector<std::string> ids;
  for (int i = 0; i < 25; ++i) {
    ids.push_back(history.Create(Spec(std::to_string(i)), "cpu"));
    ASSERT_TRUE(history.Finish(ids.back(), v1::RUN_STATE_DONE).ok());
  }
  EXPECT_EQ(history.size(), 10u);
  EXPECT_TRUE(history.Get(active).ok()) << "an active run must not be forgotten";
  EXPECT_TRUE(history.Get(ids.back()).ok());
  EXPECT_FALSE(history.Get(ids[0]).ok());
  EXPECT_FALSE(history.Get(ids[15]).ok());
  EXPECT_TRUE(history.Get(ids[16]).ok());
}

TEST(RunHistoryTest, DefaultCapacityIsOneThousand) {
  RunHistory history;
  std::string first;
  for (int i = 0; i < 1005; ++i) {
    const std::string id = history.Create(Spec(""), "cpu");
    if (i == 0) first = id;
    ASSERT_TRUE(history.Finish(id, v1::RUN_STATE_DONE).ok());
  }
  EXPECT_EQ(history.size(), 1000u);
  EXPECT_FALSE(history.Get(first).ok());
}

TEST(RunHistoryTest, CancelFlags) {
  RunHistory history;
  const std::string id = history.Create(Spec(""), "cpu");
  EXPECT_FALSE(history.CancelRequested(id));
  auto state = history.RequestCancel(id);
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(*state, v1::RUN_STATE_QUEUED);
  EXPECT_TRUE(history.CancelRequested(id));

  const std::string done = history.Create(Spec(""), "cpu");
  ASSERT_TRUE(history.Finish(done, v1::RUN_STATE_DONE).ok());
  state = history.RequestCancel(done);
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(*state, v1::RUN_STATE_DONE);
  EXPECT_FALSE(history.CancelRequested(done));
}

// Like the cases of `--variants auto` without a tune table: about 160 bytes serialized.
v1::CaseResult UnsupportedCase(uint32_t m) {
  v1::CaseResult c = Case(v1::CASE_STATUS_UNSUPPORTED);
  c.set_index(m - 1);
  c.set_variant(v1::VARIANT_AUTO);
  c.set_world_size(4);
  c.set_m(m);
  c.set_n(8);
  c.set_message("auto: no tune table in --tune-dir covers this shape; run `colltest tune` first");
  c.set_wall_ms(0.01);
  return c;
}

std::string UnsupportedSweep(RunHistory& history, uint32_t cases) {
  const std::string id = history.Create(Spec("flood"), "cpu", "owner");
  EXPECT_TRUE(history.MarkRunning(id).ok());
  for (uint32_t m = 1; m <= cases; ++m) EXPECT_TRUE(history.AddCase(id, UnsupportedCase(m)).ok());
  EXPECT_TRUE(history.Finish(id, v1::RUN_STATE_DONE, "4096 unsupported").ok());
  return id;
}

// Bytes the allocator has handed out, over every arena.
uint64_t HeapInUse() { return mallinfo2().uordblks; }

TEST(RunHistoryTest, FinishedRunsAreKeptSerializedAndReadBackWhole) {
  RunHistory history;
  const std::string id = history.Create(Spec("nightly"), "cpu", "ci");
  ASSERT_TRUE(history.MarkRunning(id).ok());
  for (uint32_t m = 1; m <= 5; ++m) ASSERT_TRUE(history.AddCase(id, UnsupportedCase(m)).ok());
  EXPECT_EQ(history.decoded_runs(), 1u);
  v1::RunResult expected = *history.Get(id);

  ASSERT_TRUE(history.Finish(id, v1::RUN_STATE_CANCELLED, "stopped").ok());
  EXPECT_EQ(history.decoded_runs(), 0u);
  const v1::RunResult run = *history.Get(id);
  expected.set_state(v1::RUN_STATE_CANCELLED);
  expected.set_message("stopped");
  expected.set_finished_unix_ms(run.finished_unix_ms());
  EXPECT_GT(run.finished_unix_ms(), 0);
  EXPECT_EQ(run.SerializeAsString(), expected.SerializeAsString());
  EXPECT_EQ(history.bytes(), run.ByteSizeLong());
  EXPECT_EQ(*history.Owner(id), "ci");
  EXPECT_EQ(*history.RequestCancel(id), v1::RUN_STATE_CANCELLED);
  EXPECT_EQ(history.MarkRunning(id).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(history.AddCase(id, Case(v1::CASE_STATUS_OK)).code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(RunHistoryTest, ListSummarizesFinishedAndActiveRuns) {
  RunHistory history;
  const std::string done = history.Create(Spec("done"), "cpu", "a");
  ASSERT_TRUE(history.MarkRunning(done).ok());
  for (v1::CaseStatus status : {v1::CASE_STATUS_OK, v1::CASE_STATUS_OK, v1::CASE_STATUS_WRONG,
                                v1::CASE_STATUS_UNSUPPORTED}) {
    ASSERT_TRUE(history.AddCase(done, Case(status)).ok());
  }
  ASSERT_TRUE(history.Finish(done, v1::RUN_STATE_FAILED, "x").ok());
  const std::string running = history.Create(Spec("running"), "cpu", "b");
  ASSERT_TRUE(history.MarkRunning(running).ok());
  ASSERT_TRUE(history.AddCase(running, Case(v1::CASE_STATUS_HANG)).ok());

  const auto list = history.List(0);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].run_id(), running);
  EXPECT_EQ(list[0].state(), v1::RUN_STATE_RUNNING);
  EXPECT_EQ(list[0].cases(), 1u);
  EXPECT_EQ(list[0].failed(), 1u);
  EXPECT_EQ(list[1].run_id(), done);
  EXPECT_EQ(list[1].state(), v1::RUN_STATE_FAILED);
  EXPECT_EQ(list[1].label(), "done");
  EXPECT_EQ(list[1].owner(), "a");
  EXPECT_EQ(list[1].cases(), 4u);
  EXPECT_EQ(list[1].ok(), 2u);
  EXPECT_EQ(list[1].failed(), 1u);
  EXPECT_EQ(list[1].created_unix_ms(), history.Get(done)->created_unix_ms());
}

// Decoded, a run of 4,096 such cases holds about 3 times its serialized size; kept serialized the
// heap grows by little more than the bytes counted.
TEST(RunHistoryTest, HeapFollowsTheSerializedBytes) {
  RunHistory history;
  const uint64_t before = HeapInUse();
  for (int i = 0; i < 8; ++i) UnsupportedSweep(history, 4096);
  const uint64_t grown = HeapInUse() - before;
  EXPECT_GT(history.bytes(), uint64_t{8} * 4096 * 100);
  EXPECT_LT(grown, history.bytes() * 5 / 4)
      << "heap +" << grown << " bytes for " << history.bytes() << " serialized";
}

// Runs forgotten by the byte bound give their memory back to the allocator.
TEST(RunHistoryTest, EvictedRunsReleaseTheirMemory) {
  constexpr uint64_t kBound = uint64_t{4} << 20;
  const uint64_t before = HeapInUse();
  {
    RunHistory history(/*capacity=*/1000, kBound);
    for (int i = 0; i < 40; ++i) UnsupportedSweep(history, 4096);
    EXPECT_LE(history.bytes(), kBound);
    EXPECT_LT(HeapInUse() - before, kBound * 5 / 4) << "heap after 40 runs of ~650 KB";
  }
  EXPECT_LT(HeapInUse() - before, uint64_t{64} << 10) << "heap once the history is gone";
}

// Readers parse a finished run outside the lock while writers evict it: a Get sees the whole run
// or NOT_FOUND.
TEST(RunHistoryTest, GetRacesEviction) {
  RunHistory history(/*capacity=*/3);
  std::mutex mu;
  std::vector<std::string> ids;
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    while (!stop) {
      std::string id;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (!ids.empty()) id = ids.back();
      }
      if (id.empty()) continue;
      auto run = history.Get(id);
      if (run.ok()) {
        EXPECT_EQ(run->cases_size(), 64);
      } else {
        EXPECT_EQ(run.status().code(), absl::StatusCode::kNotFound);
      }
    }
  });
  for (int i = 0; i < 300; ++i) {
    const std::string id = UnsupportedSweep(history, 64);
    std::lock_guard<std::mutex> lock(mu);
    ids.push_back(id);
  }
  stop = true;
  reader.join();
  EXPECT_EQ(history.size(), 3u);
}

TEST(RunHistoryTest, DefaultByteBoundIs128MiB) {
  RunHistory history;
  std::vector<std::string> ids;
  // Runs of about 1 MiB: 128 of them fit, not 129.
  for (int i = 0; i < 140; ++i) ids.push_back(FinishedRun(history, "", 1, (size_t{1} << 20) - 200));
  EXPECT_LE(history.bytes(), uint64_t{128} << 20);
  EXPECT_GT(history.bytes(), uint64_t{127} << 20);
  EXPECT_EQ(history.size(), 128u);
}

TEST(RunHistoryTest, ConcurrentWriters) {
  RunHistory history(50);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) {
        const std::string id = history.Create(Spec(""), "cpu");
        EXPECT_TRUE(history.MarkRunning(id).ok());
        EXPECT_TRUE(history.AddCase(id, Case(v1::CASE_STATUS_OK)).ok());
        EXPECT_TRUE(history.Finish(id, v1::RUN_STATE_DONE).ok());
        history.List(10);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(history.size(), 50u);
}

}  // namespace
}  // namespace colltest::server
