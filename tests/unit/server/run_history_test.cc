#include "server/runs/run_history.h"

#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/run_store.h"

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

v1::CaseResult Case(v1::CaseStatus status, uint32_t index = 0) {
  v1::CaseResult c;
  c.set_index(index);
  c.set_status(status);
  return c;
}

// A history over an in-memory database, as the service makes for tests.
class RunHistoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = store::RunStore::Open(":memory:");
    ASSERT_TRUE(opened.ok()) << opened.status();
    store_ = *std::move(opened);
    v1::MachineIdentity machine;
    machine.set_key("0123456789abcdef");
    machine.set_hostname("node-7");
    history_ = std::make_unique<RunHistory>(store_.get(), machine);
  }

  std::string Create(const std::string& label, const std::string& owner = "") {
    absl::StatusOr<std::string> id = history_->Create(Spec(label), "cpu", owner);
    EXPECT_TRUE(id.ok()) << id.status();
    return id.value_or("");
  }

  std::vector<v1::RunSummary> List(uint32_t limit) {
    v1::ListRunsRequest request;
    request.set_limit(limit);
    absl::StatusOr<v1::ListRunsResponse> listed = history_->List(request);
    EXPECT_TRUE(listed.ok()) << listed.status();
    return std::vector<v1::RunSummary>(listed->runs().begin(), listed->runs().end());
  }

  std::unique_ptr<store::RunStore> store_;
  std::unique_ptr<RunHistory> history_;
};

// Unguessable: 32 hex digits, and consecutive ids share no prefix beyond "r-" (a counter or a
// clock would make neighbours share their leading digits). 100 ids sharing 8 more characters by
// chance has odds of about 2^-32 per pair.
TEST_F(RunHistoryTest, IdsAreRandomHex) {
  std::set<std::string> ids;
  std::string previous;
  int common_prefixes = 0;
  for (int i = 0; i < 100; ++i) {
    const std::string id = Create("");
    EXPECT_THAT(id, MatchesRegex("r-[0-9a-f]{32}"));
    if (!previous.empty() && id.compare(0, 10, previous, 0, 10) == 0) ++common_prefixes;
    previous = id;
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 100u);
  EXPECT_EQ(common_prefixes, 0);
}

TEST_F(RunHistoryTest, RecordsTheOwnerAndTheMachine) {
  const std::string id = Create("x", "ci");
  EXPECT_EQ(history_->Get(id)->owner(), "ci");
  EXPECT_EQ(history_->Get(id)->machine().hostname(), "node-7");
  EXPECT_EQ(*history_->Owner(id), "ci");
  EXPECT_EQ(List(0).at(0).owner(), "ci");
  EXPECT_EQ(history_->Owner("r-0").status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(history_->Finish(id, v1::RUN_STATE_CANCELLED).ok());
  // From the database now.
  EXPECT_EQ(*history_->Owner(id), "ci");
  EXPECT_EQ(history_->Get(id)->machine().key(), "0123456789abcdef");
}

TEST_F(RunHistoryTest, LifeOfARun) {
  const std::string id = Create("nightly");
  auto run = history_->Get(id);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->state(), v1::RUN_STATE_QUEUED);
  EXPECT_EQ(run->backend(), "cpu");
  EXPECT_GT(run->created_unix_ms(), 0);

  // Cases only land on a running run.
  EXPECT_EQ(history_->AddCase(id, Case(v1::CASE_STATUS_OK)).code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(history_->MarkRunning(id).ok());
  EXPECT_EQ(history_->MarkRunning(id).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(history_->AddCase(id, Case(v1::CASE_STATUS_OK, 0)).ok());
  ASSERT_TRUE(history_->AddCase(id, Case(v1::CASE_STATUS_HANG, 1)).ok());
  ASSERT_TRUE(history_->AddCase(id, Case(v1::CASE_STATUS_UNSUPPORTED, 2)).ok());
  // What a listing says while it runs comes from the database: written through.
  EXPECT_EQ(List(0).at(0).state(), v1::RUN_STATE_RUNNING);
  EXPECT_EQ(List(0).at(0).cases(), 3u);
  EXPECT_EQ(history_->Finish(id, v1::RUN_STATE_RUNNING).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<v1::RunResult> finished = history_->Finish(id, v1::RUN_STATE_DONE, "3 cases");
  ASSERT_TRUE(finished.ok());
  EXPECT_EQ(finished->cases_size(), 3);
  EXPECT_EQ(history_->Finish(id, v1::RUN_STATE_CANCELLED).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(history_->active(), 0u);

  run = history_->Get(id);
  EXPECT_EQ(run->state(), v1::RUN_STATE_DONE);
  EXPECT_EQ(run->cases_size(), 3);
  EXPECT_EQ(run->message(), "3 cases");
  EXPECT_GE(run->finished_unix_ms(), run->created_unix_ms());

  const auto list = List(0);
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].cases(), 3u);
  EXPECT_EQ(list[0].ok(), 2u);  // OK and UNSUPPORTED
  EXPECT_EQ(list[0].failed(), 1u);
  EXPECT_EQ(list[0].label(), "nightly");
}

TEST_F(RunHistoryTest, UnknownIds) {
  EXPECT_EQ(history_->Get("r-1-1").status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(history_->Get("r-1-1").status().message()), HasSubstr("r-1-1"));
  EXPECT_EQ(history_->RequestCancel("nope").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(history_->MarkRunning("nope").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(history_->Finish("nope", v1::RUN_STATE_DONE).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_FALSE(history_->CancelRequested("nope"));
}

TEST_F(RunHistoryTest, ListIsNewestFirstAndLimited) {
  for (int i = 0; i < 60; ++i) Create(std::to_string(i));
  auto list = List(0);
  ASSERT_EQ(list.size(), 50u);  // the default limit
  EXPECT_EQ(list[0].label(), "59");
  EXPECT_EQ(list[49].label(), "10");
  list = List(3);
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[2].label(), "57");
}

TEST_F(RunHistoryTest, CancelFlags) {
  const std::string id = Create("");
  EXPECT_FALSE(history_->CancelRequested(id));
  auto state = history_->RequestCancel(id);
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(*state, v1::RUN_STATE_QUEUED);
  EXPECT_TRUE(history_->CancelRequested(id));

  const std::string done = Create("");
  ASSERT_TRUE(history_->Finish(done, v1::RUN_STATE_DONE).ok());
  state = history_->RequestCancel(done);
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(*state, v1::RUN_STATE_DONE);
  EXPECT_FALSE(history_->CancelRequested(done));
}

TEST_F(RunHistoryTest, ConcurrentWriters) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        const std::string id = Create("");
        EXPECT_TRUE(history_->MarkRunning(id).ok());
        EXPECT_TRUE(history_->AddCase(id, Case(v1::CASE_STATUS_OK)).ok());
        EXPECT_TRUE(history_->Finish(id, v1::RUN_STATE_DONE).ok());
        List(10);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(history_->active(), 0u);
  EXPECT_EQ(*store_->CountRuns(), 400u);
  EXPECT_EQ(*store_->CountCases(), 400u);
}

}  // namespace
}  // namespace colltest::server
