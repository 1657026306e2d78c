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

TEST(RunHistoryTest, IdsAreUniqueAndShaped) {
  RunHistory history;
  std::set<std::string> ids;
  for (int i = 0; i < 100; ++i) ids.insert(history.Create(Spec(""), "cpu"));
  EXPECT_EQ(ids.size(), 100u);
  EXPECT_THAT(*ids.begin(), MatchesRegex("r-[0-9]+-[0-9]+"));
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
