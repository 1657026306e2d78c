// RunStore's contract over a database on disk: runs and cases in and out, counters, listing with
// filters and pages, retention, baselines, concurrent callers.
#include "store/run_store.h"

#include <google/protobuf/util/message_differencer.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/state_dir.h"
#include "tests/unit/store/store_test_util.h"

namespace colltest::store {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::Machine;
using testing::NewCase;
using testing::NewRun;
using testing::ScratchDir;
namespace v1 = ::colltest::v1;

class RunStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }

  void Reopen() {
    store_.reset();
    absl::StatusOr<std::unique_ptr<RunStore>> opened =
        RunStore::Open(HistoryDatabasePath(dir_.path()));
    ASSERT_TRUE(opened.ok()) << opened.status();
    store_ = *std::move(opened);
  }

  void Insert(const v1::RunResult& run) {
    const absl::Status status = store_->InsertRun(run);
    ASSERT_TRUE(status.ok()) << status;
  }

  std::vector<std::string> Ids(const v1::ListRunsRequest& request,
                               std::string* next_token = nullptr) {
    absl::StatusOr<v1::ListRunsResponse> listed = store_->ListRuns(request);
    EXPECT_TRUE(listed.ok()) << listed.status();
    if (!listed.ok()) return {};
    std::vector<std::string> ids;
    for (const v1::RunSummary& summary : listed->runs()) ids.push_back(summary.run_id());
    if (next_token != nullptr) *next_token = listed->next_page_token();
    return ids;
  }

  ScratchDir dir_;
  std::unique_ptr<RunStore> store_;
};

TEST_F(RunStoreTest, RunAndCasesRoundTripWithPerRankResultsAcrossReopen) {
  v1::RunResult expected = NewRun("r-1", "nightly", {v1::VARIANT_LAMPORT, v1::VARIANT_ONE_STAGE});
  expected.set_message("running");
  Insert(expected);
  // Added out of order: GetRun returns them by index.
  for (const uint32_t index : {2u, 0u, 1u}) {
    const absl::Status added = store_->AddCase("r-1", NewCase(index, v1::CASE_STATUS_OK, 8));
    ASSERT_TRUE(added.ok()) << added;
  }
  ASSERT_TRUE(store_->SetState("r-1", v1::RUN_STATE_DONE, "3 of 3 cases OK", 5000).ok());
  for (const uint32_t index : {0u, 1u, 2u})
    *expected.add_cases() = NewCase(index, v1::CASE_STATUS_OK, 8);
  expected.set_state(v1::RUN_STATE_DONE);
  expected.set_message("3 of 3 cases OK");
  expected.set_finished_unix_ms(5000);

  Reopen();
  absl::StatusOr<v1::RunResult> got = store_->GetRun("r-1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(MessageDifferencer::Equals(*got, expected)) << "got:\n"
                                                          << got->DebugString() << "want:\n"
                                                          << expected.DebugString();
  EXPECT_EQ(got->cases(1).ranks_size(), 8);
  EXPECT_EQ(store_->schema_version(), 5);
  EXPECT_EQ(*store_->CountRuns(), 1u);
  EXPECT_EQ(*store_->CountCases(), 3u);
}

// A driver upgrade keeps the machine's key (baselines still apply) and each run keeps the
// identity it ran with, so a comparison across the upgrade shows both versions.
TEST_F(RunStoreTest, EachRunKeepsTheIdentityItRanWith) {
  v1::MachineIdentity before = Machine("key-a", "node-a");
  before.set_driver_version("12.8");
  v1::MachineIdentity after = before;
  after.set_driver_version("13.0");
  Insert(NewRun("r-before", "", {v1::VARIANT_LAMPORT}, v1::RUN_STATE_DONE, 1000, before));
  Insert(NewRun("r-after", "", {v1::VARIANT_LAMPORT}, v1::RUN_STATE_DONE, 2000, after));
  Insert(NewRun("r-again", "", {v1::VARIANT_LAMPORT}, v1::RUN_STATE_DONE, 3000, after));
  Reopen();
  EXPECT_EQ(store_->GetRun("r-before")->machine().driver_version(), "12.8");
  EXPECT_EQ(store_->GetRun("r-after")->machine().driver_version(), "13.0");
  EXPECT_EQ(store_->GetRun("r-again")->machine().driver_version(), "13.0");
  EXPECT_EQ(store_->GetRun("r-before")->machine().key(), "key-a");
  EXPECT_EQ(store_->GetRun("r-after")->machine().key(), "key-a");
}

// Where the ranks were placed survives in the history, so that a baseline made of a run that
// shared GPUs is still known as one when a later run is compared with it.
TEST_F(RunStoreTest, EachRunKeepsWhereItsRanksWerePlaced) {
  v1::RunResult shared = NewRun("r-shared", "", {v1::VARIANT_LAMPORT}, v1::RUN_STATE_DONE);
  shared.set_ranks_per_gpu(4);
  Insert(shared);
  v1::RunResult sliced = NewRun("r-sliced", "", {v1::VARIANT_LAMPORT});
  sliced.set_ranks_per_gpu(2);
  sliced.set_time_sliced(true);
  Insert(sliced);
  Insert(NewRun("r-apart", "", {v1::VARIANT_LAMPORT}));
  ASSERT_TRUE(store_->SetState("r-sliced", v1::RUN_STATE_DONE, "", 5000).ok());
  v1::Baseline baseline;
  baseline.set_machine_key("key-a");
  baseline.set_run_id("r-shared");
  ASSERT_TRUE(store_->SetBaseline(baseline, {"alice"}).ok());
  Reopen();
  const std::string from_baseline = store_->GetBaseline("key-a", "")->run_id();
  EXPECT_EQ(store_->GetRun(from_baseline)->ranks_per_gpu(), 4u);
  EXPECT_FALSE(store_->GetRun("r-shared")->time_sliced());
  EXPECT_EQ(store_->GetRun("r-sliced")->ranks_per_gpu(), 2u);
  EXPECT_TRUE(store_->GetRun("r-sliced")->time_sliced());
  EXPECT_EQ(store_->GetRun("r-sliced")->state(), v1::RUN_STATE_DONE);
  EXPECT_EQ(store_->GetRun("r-apart")->ranks_per_gpu(), 0u);
  EXPECT_FALSE(store_->GetRun("r-apart")->time_sliced());
}

TEST_F(RunStoreTest, ErrorsNameTheRun) {
  Insert(NewRun("r-1", "", {}));
  const absl::Status duplicate = store_->InsertRun(NewRun("r-1", "", {}));
  EXPECT_EQ(duplicate.code(), absl::StatusCode::kAlreadyExists) << duplicate;
  EXPECT_THAT(duplicate.message(), HasSubstr("r-1"));

  v1::RunResult with_cases = NewRun("r-2", "", {});
  *with_cases.add_cases() = NewCase(0, v1::CASE_STATUS_OK);
  EXPECT_EQ(store_->InsertRun(with_cases).code(), absl::StatusCode::kInvalidArgument);

  const absl::Status unknown_case = store_->AddCase("r-404", NewCase(0, v1::CASE_STATUS_OK));
  EXPECT_EQ(unknown_case.code(), absl::StatusCode::kNotFound) << unknown_case;
  EXPECT_THAT(unknown_case.message(), HasSubstr("r-404"));
  EXPECT_EQ(store_->GetRun("r-404").status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(store_->GetRun("r-404").status().message(), HasSubstr("r-404"));
  EXPECT_EQ(store_->SetState("r-404", v1::RUN_STATE_DONE, "", 1).code(),
            absl::StatusCode::kNotFound);

  ASSERT_TRUE(store_->AddCase("r-1", NewCase(0, v1::CASE_STATUS_OK)).ok());
  const absl::Status twice = store_->AddCase("r-1", NewCase(0, v1::CASE_STATUS_WRONG));
  EXPECT_EQ(twice.code(), absl::StatusCode::kAlreadyExists) << twice;
  EXPECT_THAT(twice.message(), HasSubstr("record case 0 of run r-1"));
  // The refused case changed no counter (its transaction was rolled back).
  absl::StatusOr<v1::ListRunsResponse> listed = store_->ListRuns({});
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->runs(0).cases(), 1u);
  EXPECT_EQ(listed->runs(0).failed(), 0u);
}

TEST_F(RunStoreTest, CountersCountOkAndUnsupportedAsOkAndWrongHangErrorAsFailed) {
  Insert(NewRun("r-1", "", {}));
  const v1::CaseStatus statuses[] = {v1::CASE_STATUS_OK,    v1::CASE_STATUS_UNSUPPORTED,
                                     v1::CASE_STATUS_WRONG, v1::CASE_STATUS_HANG,
                                     v1::CASE_STATUS_ERROR, v1::CASE_STATUS_OK};
  uint32_t index = 0;
  for (const v1::CaseStatus status : statuses) {
    ASSERT_TRUE(store_->AddCase("r-1", NewCase(index++, status)).ok());
  }
  absl::StatusOr<v1::ListRunsResponse> listed = store_->ListRuns({});
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->runs_size(), 1);
  EXPECT_EQ(listed->runs(0).cases(), 6u);
  EXPECT_EQ(listed->runs(0).ok(), 3u);
  EXPECT_EQ(listed->runs(0).failed(), 3u);
}

TEST_F(RunStoreTest, SetStateSetsFinishedOnlyForATerminalState) {
  Insert(NewRun("r-1", "", {}, v1::RUN_STATE_QUEUED));
  ASSERT_TRUE(store_->SetState("r-1", v1::RUN_STATE_RUNNING, "started", 111).ok());
  EXPECT_EQ(store_->GetRun("r-1")->finished_unix_ms(), 0);
  EXPECT_EQ(store_->GetRun("r-1")->message(), "started");
  ASSERT_TRUE(store_->SetState("r-1", v1::RUN_STATE_CANCELLED, "cancelled by request", 222).ok());
  EXPECT_EQ(store_->GetRun("r-1")->finished_unix_ms(), 222);
  EXPECT_EQ(store_->GetRun("r-1")->state(), v1::RUN_STATE_CANCELLED);
}

TEST_F(RunStoreTest, InMemoryDatabaseWorks) {
  absl::StatusOr<std::unique_ptr<RunStore>> memory = RunStore::Open(":memory:");
  ASSERT_TRUE(memory.ok()) << memory.status();
  ASSERT_TRUE((*memory)->InsertRun(NewRun("r-1", "x", {v1::VARIANT_NCCL})).ok());
  ASSERT_TRUE((*memory)->AddCase("r-1", NewCase(0, v1::CASE_STATUS_OK)).ok());
  EXPECT_EQ((*memory)->GetRun("r-1")->cases_size(), 1);
  EXPECT_EQ((*memory)->schema_version(), 5);
}

// Seven runs, seq 1..7 (r-1 oldest):
//   r-1 nightly DONE    t=1000 {LAMPORT}
//   r-2 pr      DONE    t=2000 {ONE_STAGE}
//   r-3 nightly FAILED  t=3000 {LAMPORT, NCCL}
//   r-4 nightly DONE    t=4000 {NCCL}
//   r-5 pr      RUNNING t=5000 {LAMPORT}
//   r-6 nightly DONE    t=6000 {LAMPORT, ONE_STAGE}
//   r-7 other   DONE    t=7000 {}
class ListRunsTest : public RunStoreTest {
 protected:
  void SetUp() override {
    RunStoreTest::SetUp();
    const v1::MachineIdentity b = Machine("key-b", "node-b");
    Insert(NewRun("r-1", "nightly", {v1::VARIANT_LAMPORT}, v1::RUN_STATE_DONE, 1000));
    Insert(NewRun("r-2", "pr", {v1::VARIANT_ONE_STAGE}, v1::RUN_STATE_DONE, 2000));
    Insert(NewRun("r-3", "nightly", {v1::VARIANT_LAMPORT, v1::VARIANT_NCCL}, v1::RUN_STATE_FAILED,
                  3000, b));
    Insert(NewRun("r-4", "nightly", {v1::VARIANT_NCCL}, v1::RUN_STATE_DONE, 4000));
    Insert(NewRun("r-5", "pr", {v1::VARIANT_LAMPORT}, v1::RUN_STATE_RUNNING, 5000));
    Insert(NewRun("r-6", "nightly", {v1::VARIANT_LAMPORT, v1::VARIANT_ONE_STAGE},
                  v1::RUN_STATE_DONE, 6000));
    Insert(NewRun("r-7", "other", {}, v1::RUN_STATE_DONE, 7000, v1::MachineIdentity()));
  }
};

TEST_F(ListRunsTest, NewestFirstWithEverySummaryField) {
  ASSERT_TRUE(store_->AddCase("r-3", NewCase(0, v1::CASE_STATUS_OK)).ok());
  ASSERT_TRUE(store_->AddCase("r-3", NewCase(1, v1::CASE_STATUS_HANG)).ok());
  ASSERT_TRUE(store_->SetState("r-3", v1::RUN_STATE_FAILED, "hang", 3500).ok());
  EXPECT_THAT(Ids({}), ElementsAre("r-7", "r-6", "r-5", "r-4", "r-3", "r-2", "r-1"));

  v1::ListRunsRequest request;
  request.set_variant(v1::VARIANT_NCCL);
  request.set_state(v1::RUN_STATE_FAILED);
  absl::StatusOr<v1::ListRunsResponse> listed = store_->ListRuns(request);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->runs_size(), 1);
  v1::RunSummary want;
  want.set_run_id("r-3");
  want.set_state(v1::RUN_STATE_FAILED);
  want.set_cases(2);
  want.set_ok(1);
  want.set_failed(1);
  want.set_created_unix_ms(3000);
  want.set_label("nightly");
  want.set_owner("alice");
  want.set_backend("cpu");
  want.set_finished_unix_ms(3500);
  want.add_variants(v1::VARIANT_LAMPORT);
  want.add_variants(v1::VARIANT_NCCL);
  want.set_machine_key("key-b");
  want.set_hostname("node-b");
  // The request as stored: what a history list shows (world, m, n, dtype) without the cases.
  *want.mutable_spec() = NewRun("r-3", "nightly", {v1::VARIANT_LAMPORT, v1::VARIANT_NCCL}).spec();
  EXPECT_TRUE(MessageDifferencer::Equals(listed->runs(0), want)) << listed->runs(0).DebugString();
  EXPECT_THAT(listed->next_page_token(), IsEmpty());
}

TEST_F(ListRunsTest, FiltersCombineWithAnd) {
  v1::ListRunsRequest label;
  label.set_label("nightly");
  EXPECT_THAT(Ids(label), ElementsAre("r-6", "r-4", "r-3", "r-1"));

  v1::ListRunsRequest state;
  state.set_state(v1::RUN_STATE_DONE);
  EXPECT_THAT(Ids(state), ElementsAre("r-7", "r-6", "r-4", "r-2", "r-1"));

  v1::ListRunsRequest since;
  since.set_since_unix_ms(5000);
  EXPECT_THAT(Ids(since), ElementsAre("r-7", "r-6", "r-5"));

  v1::ListRunsRequest variant;
  variant.set_variant(v1::VARIANT_LAMPORT);
  EXPECT_THAT(Ids(variant), ElementsAre("r-6", "r-5", "r-3", "r-1"));

  v1::ListRunsRequest machine;
  machine.set_machine_key("key-b");
  EXPECT_THAT(Ids(machine), ElementsAre("r-3"));
  machine.set_machine_key("key-a");
  EXPECT_THAT(Ids(machine), ElementsAre("r-6", "r-5", "r-4", "r-2", "r-1"));

  v1::ListRunsRequest all = label;
  all.set_state(v1::RUN_STATE_DONE);
  all.set_variant(v1::VARIANT_LAMPORT);
  EXPECT_THAT(Ids(all), ElementsAre("r-6", "r-1"));
  all.set_since_unix_ms(2000);
  EXPECT_THAT(Ids(all), ElementsAre("r-6"));
  all.set_label("pr");
  EXPECT_THAT(Ids(all), IsEmpty());
}

TEST_F(ListRunsTest, ThreePagesThenNoToken) {
  v1::ListRunsRequest request;
  request.set_limit(3);
  std::string token;
  EXPECT_THAT(Ids(request, &token), ElementsAre("r-7", "r-6", "r-5"));
  ASSERT_FALSE(token.empty());
  // A run added between pages lands on the first page, not in the next ones.
  Insert(NewRun("r-8", "nightly", {}, v1::RUN_STATE_DONE, 8000));
  request.set_page_token(token);
  EXPECT_THAT(Ids(request, &token), ElementsAre("r-4", "r-3", "r-2"));
  ASSERT_FALSE(token.empty());
  request.set_page_token(token);
  EXPECT_THAT(Ids(request, &token), ElementsAre("r-1"));
  EXPECT_THAT(token, IsEmpty());
}

TEST_F(ListRunsTest, APageOfExactlyLimitRowsAtTheEndHasNoToken) {
  v1::ListRunsRequest request;
  request.set_label("nightly");
  request.set_limit(2);
  std::string token;
  EXPECT_THAT(Ids(request, &token), ElementsAre("r-6", "r-4"));
  ASSERT_FALSE(token.empty());
  request.set_page_token(token);
  EXPECT_THAT(Ids(request, &token), ElementsAre("r-3", "r-1"));
  EXPECT_THAT(token, IsEmpty());
}

TEST_F(ListRunsTest, RefusesATokenItDidNotIssueAndALimitAboveTheMaximum) {
  for (const char* token :
       {"x", "s", "s0", "s-3", "s03", "s+3", "s3 ", "3", "s9999999999999999999"}) {
    v1::ListRunsRequest request;
    request.set_page_token(token);
    const absl::Status status = store_->ListRuns(request).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << token;
    EXPECT_EQ(status.message(), "page_token: not a token from a previous ListRuns page") << token;
  }
  v1::ListRunsRequest request;
  request.set_limit(kMaxListLimit + 1);
  const absl::Status status = store_->ListRuns(request).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("limit"));
  request.set_limit(kMaxListLimit);
  EXPECT_TRUE(store_->ListRuns(request).ok());
}

TEST_F(RunStoreTest, LimitZeroMeansTheDefault) {
  for (uint32_t i = 0; i < kDefaultListLimit + 2; ++i) {
    Insert(NewRun("r-" + std::to_string(i), "", {}, v1::RUN_STATE_DONE));
  }
  std::string token;
  EXPECT_EQ(Ids({}, &token).size(), kDefaultListLimit);
  EXPECT_FALSE(token.empty());
}

// Ten runs r-0 (oldest) .. r-9, created at 1000 * i, each with 3 cases; r-0 is a baseline, r-1
// RUNNING, r-2 QUEUED, the rest DONE.
class PruneTest : public RunStoreTest {
 protected:
  void SetUp() override {
    RunStoreTest::SetUp();
    for (int i = 0; i < 10; ++i) {
      const v1::RunState state = i == 1   ? v1::RUN_STATE_RUNNING
                                 : i == 2 ? v1::RUN_STATE_QUEUED
                                          : v1::RUN_STATE_DONE;
      const std::string id = "r-" + std::to_string(i);
      Insert(NewRun(id, "", {v1::VARIANT_LAMPORT}, state, 1000 * i));
      for (uint32_t c = 0; c < 3; ++c) {
        ASSERT_TRUE(store_->AddCase(id, NewCase(c, v1::CASE_STATUS_OK)).ok());
      }
    }
    v1::Baseline baseline;
    baseline.set_machine_key("key-a");
    baseline.set_run_id("r-0");
    ASSERT_TRUE(store_->SetBaseline(baseline, {"alice"}).ok());
  }

  // How many runs Prune deleted; a failed Prune fails the test and counts as none.
  uint64_t Pruned(uint64_t max_runs, absl::Duration max_age, int64_t now_ms,
                  uint64_t max_bytes = 0) {
    absl::StatusOr<uint64_t> deleted = store_->Prune(max_runs, max_age, max_bytes, now_ms);
    EXPECT_TRUE(deleted.ok()) << deleted.status();
    return deleted.value_or(0);
  }
};

TEST_F(PruneTest, ByCountKeepsTheNewestTheBaselineAndTheActiveRuns) {
  EXPECT_EQ(Pruned(3, absl::ZeroDuration(), 100000), 4u);
  EXPECT_THAT(Ids({}), ElementsAre("r-9", "r-8", "r-7", "r-2", "r-1", "r-0"));
  EXPECT_EQ(*store_->CountCases(), 18u);  // the deleted runs' cases went with them
  EXPECT_EQ(store_->GetRun("r-0")->cases_size(), 3);
  EXPECT_EQ(Pruned(3, absl::ZeroDuration(), 100000), 0u);
}

TEST_F(PruneTest, ByAgeKeepsTheBaselineAndTheActiveRuns) {
  // now 10000, max age 5 s: runs created before 5000 go (r-0 .. r-4), but r-0, r-1, r-2 stay.
  EXPECT_EQ(Pruned(0, absl::Seconds(5), 10000), 2u);
  EXPECT_THAT(Ids({}), ElementsAre("r-9", "r-8", "r-7", "r-6", "r-5", "r-2", "r-1", "r-0"));
  EXPECT_EQ(*store_->CountCases(), 24u);
  // Variants of deleted runs went with them too: the variant filter lists the same runs.
  v1::ListRunsRequest variant;
  variant.set_variant(v1::VARIANT_LAMPORT);
  EXPECT_EQ(Ids(variant).size(), 8u);
}

TEST_F(PruneTest, ByBytesKeepsTheNewestWithinTheBoundTheBaselineAndTheActiveRuns) {
  uint64_t run_bytes = 0;  // every run here has the same three cases
  const absl::StatusOr<v1::RunResult> newest = store_->GetRun("r-9");
  ASSERT_TRUE(newest.ok()) << newest.status();
  for (const v1::CaseResult& c : newest->cases()) run_bytes += c.ByteSizeLong();
  // 3.5 runs' worth: r-9, r-8, r-7 fit; r-6 and older go, but for r-2, r-1 (active), r-0
  // (baseline).
  EXPECT_EQ(Pruned(0, absl::ZeroDuration(), 100000, run_bytes * 7 / 2), 4u);
  EXPECT_THAT(Ids({}), ElementsAre("r-9", "r-8", "r-7", "r-2", "r-1", "r-0"));
  EXPECT_EQ(Pruned(0, absl::ZeroDuration(), 100000, run_bytes * 7 / 2), 0u);
}

TEST_F(PruneTest, NoBoundDeletesNothingAndBothBoundsCombine) {
  EXPECT_EQ(Pruned(0, absl::ZeroDuration(), 100000), 0u);
  EXPECT_EQ(*store_->CountRuns(), 10u);
  // Count 5 takes r-4 and r-3; age (created before 7000) takes r-6 and r-5.
  EXPECT_EQ(Pruned(5, absl::Seconds(3), 10000), 4u);
  EXPECT_THAT(Ids({}), ElementsAre("r-9", "r-8", "r-7", "r-2", "r-1", "r-0"));
}

TEST_F(RunStoreTest, BaselinesSetReplaceGetList) {
  Insert(NewRun("r-1", "", {}, v1::RUN_STATE_DONE, 1000, Machine("key-a", "node-a")));
  Insert(NewRun("r-2", "", {}, v1::RUN_STATE_DONE, 2000, Machine("key-a", "node-a")));
  Insert(NewRun("r-3", "", {}, v1::RUN_STATE_DONE, 3000, Machine("key-b", "node-b")));
  v1::Baseline baseline;
  baseline.set_machine_key("key-a");
  baseline.set_run_id("r-1");
  baseline.set_set_unix_ms(10);
  baseline.set_hostname("node-a");
  absl::StatusOr<v1::Baseline> stored = store_->SetBaseline(baseline, {"alice"});
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->name(), "default");
  EXPECT_EQ(stored->set_by(), "alice");

  baseline.set_run_id("r-2");  // replaces (key-a, default), as an admin may
  const BaselineSetter admin{"bob", /*may_replace_any=*/true};
  ASSERT_TRUE(store_->SetBaseline(baseline, admin).ok());
  baseline.set_name("fast");
  ASSERT_TRUE(store_->SetBaseline(baseline, admin).ok());
  baseline.set_machine_key("key-b");
  baseline.set_name("");
  baseline.set_run_id("r-3");
  ASSERT_TRUE(store_->SetBaseline(baseline, admin).ok());

  absl::StatusOr<v1::Baseline> got = store_->GetBaseline("key-a", "");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->run_id(), "r-2");
  EXPECT_EQ(got->set_by(), "bob");
  EXPECT_EQ(got->set_unix_ms(), 10);
  EXPECT_EQ(got->hostname(), "node-a");

  absl::StatusOr<std::vector<v1::Baseline>> all = store_->ListBaselines("");
  ASSERT_TRUE(all.ok()) << all.status();
  std::vector<std::string> listed;
  for (const v1::Baseline& b : *all) {
    listed.push_back(b.machine_key() + "/" + b.name() + "=" + b.run_id());
  }
  EXPECT_THAT(listed, ElementsAre("key-a/default=r-2", "key-a/fast=r-2", "key-b/default=r-3"));
  EXPECT_EQ(store_->ListBaselines("key-b")->size(), 1u);
  EXPECT_THAT(*store_->ListBaselines("key-z"), IsEmpty());
}

TEST_F(RunStoreTest, BaselineNotFoundNamesTheNameAndTheHost) {
  Insert(NewRun("r-1", "", {}, v1::RUN_STATE_DONE, 1000, Machine("key-a", "node-a")));
  const absl::Status known = store_->GetBaseline("key-a", "fast").status();
  EXPECT_EQ(known.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(known.message(), "no baseline named \"fast\" for host node-a");
  const absl::Status unknown = store_->GetBaseline("key-z", "").status();
  EXPECT_EQ(unknown.message(), "no baseline named \"default\" for machine key-z");

  v1::Baseline baseline;
  baseline.set_machine_key("key-a");
  baseline.set_run_id("r-404");
  const absl::Status missing_run = store_->SetBaseline(baseline, {"alice"}).status();
  EXPECT_EQ(missing_run.code(), absl::StatusCode::kNotFound) << missing_run;
  EXPECT_THAT(missing_run.message(), HasSubstr("r-404"));
}

TEST_F(RunStoreTest, ConcurrentWritersAndReadersLoseNothing) {
  constexpr int kThreads = 4;
  constexpr int kCases = 100;
  for (int t = 0; t < kThreads; ++t) Insert(NewRun("r-" + std::to_string(t), "", {}));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t] {
      for (uint32_t c = 0; c < kCases; ++c) {
        const absl::Status status =
            store_->AddCase("r-" + std::to_string(t), NewCase(c, v1::CASE_STATUS_OK, 2));
        EXPECT_TRUE(status.ok()) << status;
        EXPECT_TRUE(store_->ListRuns({}).ok());
        EXPECT_TRUE(store_->GetRun("r-" + std::to_string((t + 1) % kThreads)).ok());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(*store_->CountCases(), static_cast<uint64_t>(kThreads * kCases));
  absl::StatusOr<v1::ListRunsResponse> listed = store_->ListRuns({});
  ASSERT_TRUE(listed.ok()) << listed.status();
  for (const v1::RunSummary& summary : listed->runs()) {
    EXPECT_EQ(summary.cases(), static_cast<uint32_t>(kCases)) << summary.run_id();
  }
}

}  // namespace
}  // namespace colltest::store
