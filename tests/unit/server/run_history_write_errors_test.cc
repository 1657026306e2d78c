// RunHistory on a disk that refuses writes (a full one): a case or a final state the database
// refuses is an error naming the state directory and SQLite's reason, counted in
// colltest_history_write_errors_total, and a run whose end could not be written is never answered
// DONE (nor RUNNING) while colltestd runs.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/runs/metrics.h"
#include "server/runs/run_history.h"
#include "store/run_store.h"
#include "tests/unit/store/file_size_limit.h"
#include "tests/unit/store/store_test_util.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;
using store::testing::FileSizeLimit;
using store::testing::ScratchDir;
using ::testing::HasSubstr;
using ::testing::StartsWith;

v1::CaseResult Case(uint32_t index) {
  v1::CaseResult c;
  c.set_index(index);
  c.set_status(v1::CASE_STATUS_OK);
  return c;
}

class RunHistoryWriteErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = store::RunStore::Open(Database());
    ASSERT_TRUE(opened.ok()) << opened.status();
    store_ = *std::move(opened);
    history_ = std::make_unique<RunHistory>(store_.get(), v1::MachineIdentity{}, false, &metrics_);
  }

  std::string Database() const { return dir_.File("history.sqlite3"); }
  // No file of the test grows while it lives: every write that needs room is refused.
  std::unique_ptr<FileSizeLimit> DiskFull() const {
    return std::make_unique<FileSizeLimit>(
        std::initializer_list<std::string>{Database(), Database() + "-wal"});
  }
  std::string RunningRunWithOneCase() {
    absl::StatusOr<std::string> id = history_->Create(v1::SweepSpec{}, "cpu");
    EXPECT_TRUE(id.ok()) << id.status();
    EXPECT_TRUE(history_->MarkRunning(*id).ok());
    EXPECT_TRUE(history_->AddCase(*id, Case(0)).ok());
    return id.value_or("");
  }
  bool CountedWriteErrors(int count) const {
    return metrics_.Render().find(absl::StrCat("colltest_history_write_errors_total ", count)) !=
           std::string::npos;
  }

  ScratchDir dir_;
  Metrics metrics_;
  std::unique_ptr<store::RunStore> store_;
  std::unique_ptr<RunHistory> history_;
};

TEST_F(RunHistoryWriteErrorsTest, ACaseThatCannotBeStoredNamesTheStateDirAndTheReason) {
  const std::string id = RunningRunWithOneCase();
  absl::Status refused;
  {
    auto full = DiskFull();
    refused = history_->AddCase(id, Case(1));
  }
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(refused.message(), absl::StrCat("history: cannot store case 1 of run ", id,
                                            ": disk I/O error (state dir ", dir_.path(), ")"));
  EXPECT_TRUE(CountedWriteErrors(1)) << metrics_.Render();
  // Kept for the run's reply, not in the database.
  EXPECT_EQ(history_->Get(id)->cases_size(), 2);
  EXPECT_EQ(store_->GetRun(id)->cases_size(), 1);
}

TEST_F(RunHistoryWriteErrorsTest, ARunWhoseEndCannotBeWrittenIsFailedNotDoneNorRunning) {
  const std::string id = RunningRunWithOneCase();
  absl::StatusOr<v1::RunResult> finished;
  {
    auto full = DiskFull();
    finished = history_->Finish(id, v1::RUN_STATE_DONE, "1 case: 1 OK");
  }
  ASSERT_TRUE(finished.ok()) << finished.status();
  EXPECT_EQ(finished->state(), v1::RUN_STATE_FAILED);
  EXPECT_THAT(finished->message(),
              StartsWith(absl::StrCat("1 case: 1 OK; history: cannot record the end of run ", id,
                                      ": disk I/O error (state dir ")));
  EXPECT_TRUE(CountedWriteErrors(1)) << metrics_.Render();

  // The database still says RUNNING; this colltestd answers what the run ended as.
  EXPECT_EQ(store_->GetRun(id)->state(), v1::RUN_STATE_RUNNING);
  EXPECT_EQ(history_->Get(id)->state(), v1::RUN_STATE_FAILED);
  EXPECT_EQ(history_->Get(id)->message(), finished->message());
  EXPECT_EQ(history_->Get(id)->cases_size(), 1);
  EXPECT_EQ(*history_->RequestCancel(id), v1::RUN_STATE_FAILED);
  absl::StatusOr<v1::ListRunsResponse> listed = history_->List(v1::ListRunsRequest{});
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->runs(0).state(), v1::RUN_STATE_FAILED);
  EXPECT_EQ(listed->runs(0).finished_unix_ms(), finished->finished_unix_ms());

  // With room again, the next run's creation writes it first.
  ASSERT_TRUE(history_->Create(v1::SweepSpec{}, "cpu").ok());
  absl::StatusOr<v1::RunResult> stored = store_->GetRun(id);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->state(), v1::RUN_STATE_FAILED);
  EXPECT_EQ(stored->message(), finished->message());
  EXPECT_EQ(stored->finished_unix_ms(), finished->finished_unix_ms());
}

TEST_F(RunHistoryWriteErrorsTest, AStartThatCannotBeWrittenIsAnError) {
  absl::StatusOr<std::string> id = history_->Create(v1::SweepSpec{}, "cpu");
  ASSERT_TRUE(id.ok()) << id.status();
  absl::Status refused;
  {
    auto full = DiskFull();
    refused = history_->MarkRunning(*id);
  }
  EXPECT_THAT(refused.message(), HasSubstr(absl::StrCat("history: cannot mark run ", *id,
                                                        " RUNNING: disk I/O error")));
}

}  // namespace
}  // namespace colltest::server
