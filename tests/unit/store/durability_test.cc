// What survives a SIGKILL: every case AddCase returned for, with the run's counters; at the next
// start MarkInterrupted ends the run that was left RUNNING.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/run_store.h"
#include "store/state_dir.h"
#include "tests/unit/store/store_test_util.h"

namespace colltest::store {
namespace {

using ::testing::ElementsAre;
using testing::NewCase;
using testing::NewRun;
using testing::ScratchDir;
namespace v1 = ::colltest::v1;

constexpr uint32_t kCases = 25;

// The child: records a RUNNING run and kCases cases, tells the parent, and dies by SIGKILL with
// the store still open (no destructor, no checkpoint, no close). Any failure exits without a word.
[[noreturn]] void RecordAndDie(const std::string& path, int ready_fd) {
  absl::StatusOr<std::unique_ptr<RunStore>> store = RunStore::Open(path);
  if (!store.ok()) _exit(1);
  if (!(*store)->InsertRun(NewRun("r-killed", "nightly", {v1::VARIANT_LAMPORT})).ok()) _exit(1);
  for (uint32_t i = 0; i < kCases; ++i) {
    const v1::CaseStatus status = i % 5 == 4 ? v1::CASE_STATUS_WRONG : v1::CASE_STATUS_OK;
    if (!(*store)->AddCase("r-killed", NewCase(i, status, 1 + i % 8)).ok()) _exit(1);
  }
  if (write(ready_fd, "k", 1) != 1) _exit(1);
  raise(SIGKILL);
  _exit(1);  // not reached
}

TEST(DurabilityTest, CasesSurviveASigkillAndTheRunIsMarkedInterrupted) {
  ScratchDir dir;
  const std::string path = HistoryDatabasePath(dir.path());
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    RecordAndDie(path, fds[1]);
  }
  close(fds[1]);
  char ready = 0;
  ASSERT_EQ(read(fds[0], &ready, 1), 1) << "the child failed before recording its cases";
  close(fds[0]);
  int wstatus = 0;
  ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL);
  // The commits are in the write-ahead log, which the next open reads.
  EXPECT_TRUE(std::filesystem::exists(path + "-wal"));

  absl::StatusOr<std::unique_ptr<RunStore>> store = RunStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<v1::RunResult> run = (*store)->GetRun("r-killed");
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->state(), v1::RUN_STATE_RUNNING);
  ASSERT_EQ(run->cases_size(), static_cast<int>(kCases));
  for (uint32_t i = 0; i < kCases; ++i) {
    EXPECT_EQ(run->cases(i).index(), i);
    EXPECT_EQ(run->cases(i).ranks_size(), static_cast<int>(1 + i % 8));
  }
  absl::StatusOr<v1::ListRunsResponse> listed = (*store)->ListRuns({});
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->runs(0).cases(), kCases);
  EXPECT_EQ(listed->runs(0).ok(), 20u);
  EXPECT_EQ(listed->runs(0).failed(), 5u);

  absl::StatusOr<std::vector<std::string>> interrupted =
      (*store)->MarkInterrupted("colltestd stopped while the run was running", 9000);
  ASSERT_TRUE(interrupted.ok()) << interrupted.status();
  EXPECT_THAT(*interrupted, ElementsAre("r-killed"));
  run = (*store)->GetRun("r-killed");
  EXPECT_EQ(run->state(), v1::RUN_STATE_INTERRUPTED);
  EXPECT_EQ(run->message(), "colltestd stopped while the run was running");
  EXPECT_EQ(run->finished_unix_ms(), 9000);
  EXPECT_EQ(run->cases_size(), static_cast<int>(kCases));
}

TEST(DurabilityTest, MarkInterruptedTouchesOnlyQueuedAndRunningRuns) {
  absl::StatusOr<std::unique_ptr<RunStore>> store = RunStore::Open(":memory:");
  ASSERT_TRUE(store.ok()) << store.status();
  RunStore& s = **store;
  ASSERT_TRUE(s.InsertRun(NewRun("queued", "", {}, v1::RUN_STATE_QUEUED)).ok());
  ASSERT_TRUE(s.InsertRun(NewRun("running", "", {}, v1::RUN_STATE_RUNNING)).ok());
  ASSERT_TRUE(s.InsertRun(NewRun("done", "", {}, v1::RUN_STATE_DONE)).ok());
  ASSERT_TRUE(s.SetState("done", v1::RUN_STATE_DONE, "all OK", 500).ok());
  absl::StatusOr<std::vector<std::string>> ids = s.MarkInterrupted("stopped", 700);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_THAT(*ids, ::testing::UnorderedElementsAre("queued", "running"));
  EXPECT_EQ(s.GetRun("queued")->state(), v1::RUN_STATE_INTERRUPTED);
  EXPECT_EQ(s.GetRun("done")->state(), v1::RUN_STATE_DONE);
  EXPECT_EQ(s.GetRun("done")->message(), "all OK");
  EXPECT_EQ(s.GetRun("done")->finished_unix_ms(), 500);
  EXPECT_TRUE(s.MarkInterrupted("stopped", 800)->empty());
}

}  // namespace
}  // namespace colltest::store
