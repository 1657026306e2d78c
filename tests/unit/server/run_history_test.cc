#include "server/run_history.h"

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
