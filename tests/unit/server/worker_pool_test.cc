#include "server/workers/worker_pool.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/workers/case_deadline.h"

namespace colltest::server {
namespace {

using colltest::v1::CASE_STATUS_ERROR;
using colltest::v1::CASE_STATUS_HANG;
using colltest::v1::CASE_STATUS_OK;
using colltest::v1::CASE_STATUS_WRONG;
using colltest::v1::RankResult;
using colltest::worker::v1::CaseRequest;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using ::testing::UnorderedElementsAreArray;

std::vector<std::string> ListDir(const std::string& path) {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(path, error)) {
    names.push_back(entry.path().filename().string());
  }
  return names;
}

// Segments created for this process (the controller) by its workers.
std::vector<std::string> OurShm() {
  std::vector<std::string> ours;
  for (const std::string& name : ListDir("/dev/shm")) {
    if (absl::StartsWith(name, absl::StrCat("colltest.", getpid(), "."))) ours.push_back(name);
  }
  return ours;
}

bool Gone(int pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

// True when this process has no child at all, zombies included.
bool NoChildren() { return waitpid(-1, nullptr, WNOHANG) == -1 && errno == ECHILD; }

std::vector<int> Pids(const std::vector<RankResult>& results) {
  // The fake worker reports its pid in its message: "pid=<pid> peers=... resets=...".
  std::vector<int> pids;
  for (const RankResult& r : results) {
    int pid = 0;
    sscanf(r.message().c_str(), "pid=%d", &pid);
    pids.push_back(pid);
  }
  return pids;
}

CaseRequest Case(std::string fault = "", uint32_t timeout_ms = 2000) {
  CaseRequest request;
  request.set_case_id(1);
  request.set_timeout_ms(timeout_ms);
  request.set_fault(std::move(fault));
  return request;
}

// Sets an environment variable for the workers spawned while it lives.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

class WorkerPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = ::testing::TempDir() + "worker_pool_test.XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    parent_ = templ;
    options_.worker_binary = FAKE_WORKER_PATH;
    options_.backend = "cpu";
    options_.runtime_dir = parent_;
    options_.spawn_timeout = absl::Seconds(10);
    options_.grace = absl::Milliseconds(300);
    // These tests look at the pool right after a failure; the recovery tests below turn it on.
    options_.eager_recovery = false;
  }

  void TearDown() override {
    pool_.reset();
    EXPECT_TRUE(NoChildren());
    EXPECT_THAT(OurShm(), IsEmpty());
    EXPECT_THAT(ListDir(parent_), IsEmpty()) << "runtime directory left behind";
    std::error_code ignored;
    std::filesystem::remove_all(parent_, ignored);
  }

  WorkerPool& Pool() {
    if (pool_ == nullptr) {
      absl::StatusOr<std::unique_ptr<WorkerPool>> pool = CreateWorkerPool(options_);
      EXPECT_TRUE(pool.ok()) << pool.status();
      pool_ = *std::move(pool);
    }
    return *pool_;
  }

  std::vector<RankResult> Run(std::vector<uint32_t> devices, const CaseRequest& request) {
    absl::StatusOr<std::vector<RankResult>> results = Pool().RunCase(devices, request);
    EXPECT_TRUE(results.ok()) << results.status();
    return results.ok() ? *results : std::vector<RankResult>();
  }

  void ExpectAllOk(const std::vector<RankResult>& results, std::vector<uint32_t> devices) {
    ASSERT_THAT(results, SizeIs(devices.size()));
    for (size_t rank = 0; rank < results.size(); ++rank) {
      EXPECT_EQ(results[rank].status(), CASE_STATUS_OK) << results[rank].message();
      EXPECT_EQ(results[rank].rank(), rank);
      EXPECT_EQ(results[rank].device(), devices[rank]);
    }
  }

  std::string parent_;
  WorkerPoolOptions options_;
  std::unique_ptr<WorkerPool> pool_;
};

TEST_F(WorkerPoolTest, GroupOfFourRunsACaseWithEveryRankInTheTable) {
  const std::vector<RankResult> results = Run({0, 1, 2, 3}, Case());
  ExpectAllOk(results, {0, 1, 2, 3});
  for (const RankResult& r : results) {
    // The fake refuses Connect unless the table has every rank with openable segments.
    EXPECT_THAT(r.message(), HasSubstr("peers=0,1,2,3"));
  }
  EXPECT_THAT(Pool().LivePids(), UnorderedElementsAreArray(Pids(results)));
  EXPECT_THAT(OurShm(), SizeIs(8));  // two segments per rank
  EXPECT_EQ(Pool().Restarts(), 0u);
}

TEST_F(WorkerPoolTest, LaterCasesReuseTheGroup) {
  const std::vector<int> first = Pids(Run({0, 1}, Case()));
  const std::vector<int> second = Pids(Run({0, 1}, Case()));
  EXPECT_EQ(first, second);
  EXPECT_THAT(Pool().LivePids(), SizeIs(2));
}

TEST_F(WorkerPoolTest, RankFollowsThePositionInTheDeviceList) {
  ExpectAllOk(Run({3, 1}, Case()), {3, 1});
}

// --ranks-per-gpu: devices 0 and 2 are slots of GPU 0, 1 and 3 of GPU 1 (docs/shared-gpu.md).
// Each worker is started on its GPU, is told how many ranks of its group share one and how many
// slots its GPU has, and its result still names colltestd's device index.
TEST_F(WorkerPoolTest, SlotsOfOneGpuStartTheirWorkersOnThatGpuAndSayHowManyShareIt) {
  for (uint32_t d : {0u, 1u, 2u, 3u}) options_.placement.Place(d, d % 2);
  const std::vector<RankResult> shared = Run({0, 2}, Case());
  ExpectAllOk(shared, {0, 2});
  for (const RankResult& r : shared) {
    EXPECT_THAT(r.message(), HasSubstr("gpu=0 ranks_on_device=2 device_slots=2"));
  }
  const std::vector<RankResult> separate = Run({1, 2}, Case());
  ExpectAllOk(separate, {1, 2});
  EXPECT_THAT(separate[0].message(), HasSubstr("gpu=1 ranks_on_device=1 device_slots=2"));
  EXPECT_THAT(separate[1].message(), HasSubstr("gpu=0 ranks_on_device=1 device_slots=2"));
}

TEST_F(WorkerPoolTest, CrashedRankIsNamedAndTheGroupRespawns) {
  const std::vector<int> before = Pids(Run({0, 1, 2, 3}, Case()));

  const std::vector<RankResult> crashed = Run({0, 1, 2, 3}, Case("crash:2"));
  ASSERT_THAT(crashed, SizeIs(4));
  EXPECT_EQ(crashed[2].status(), CASE_STATUS_ERROR);
  EXPECT_EQ(crashed[2].message(),
            absl::StrCat("rank 2 (pid ", before[2], ") died: killed by signal 9"));
  EXPECT_EQ(crashed[2].rank(), 2u);
  EXPECT_EQ(crashed[2].device(), 2u);
  for (int pid : before) EXPECT_TRUE(Gone(pid)) << pid;
  EXPECT_THAT(Pool().LivePids(), IsEmpty());
  EXPECT_THAT(OurShm(), IsEmpty());
  EXPECT_EQ(Pool().Restarts(), 1u);

  const std::vector<RankResult> after = Run({0, 1, 2, 3}, Case());
  ExpectAllOk(after, {0, 1, 2, 3});
  for (int pid : Pids(after)) EXPECT_THAT(before, ::testing::Not(::testing::Contains(pid)));
  EXPECT_EQ(Pool().Restarts(), 1u);
}

TEST_F(WorkerPoolTest, PeersWaitingForACrashedRankAreAbortedAtOnce) {
  Run({0, 1, 2, 3}, Case());
  const absl::Time start = absl::Now();
  const std::vector<RankResult> results = Run({0, 1, 2, 3}, Case("crash_wait:2", 20000));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5)) << "waited for the peers' deadlines";
  ASSERT_THAT(results, SizeIs(4));
  EXPECT_THAT(results[2].message(), HasSubstr("rank 2"));
  EXPECT_THAT(results[2].message(), HasSubstr("died"));
  for (int rank : {0, 1, 3}) {
    EXPECT_EQ(results[rank].status(), CASE_STATUS_ERROR);
    EXPECT_EQ(results[rank].message(), "aborted: group torn down after rank 2 failed");
    EXPECT_EQ(results[rank].rank(), static_cast<uint32_t>(rank));
  }
  EXPECT_EQ(Pool().Restarts(), 1u);
}

TEST_F(WorkerPoolTest, ExitStatusOfADeadRankIsReported) {
  const std::vector<RankResult> results = Run({0, 1}, Case("exit:1"));
  ASSERT_THAT(results, SizeIs(2));
  EXPECT_EQ(results[1].status(), CASE_STATUS_ERROR);
  EXPECT_THAT(results[1].message(), HasSubstr("died: exited with status 3"));
}

TEST_F(WorkerPoolTest, HungRankIsNamedWithinTheProgressWindow) {
  // A worker that completes no work and never answers, its heartbeat not watched: the host
  // deadline's progress rule finds it one window after its last progress.
  options_.heartbeat_grace = absl::Hours(1);
  Run({0, 1, 2}, Case());
  const CaseRequest request = Case("hang:1", 1000);
  const absl::Time start = absl::Now();
  const std::vector<RankResult> results = Run({0, 1, 2}, request);
  const absl::Duration elapsed = absl::Now() - start;
  const absl::Duration window = ProgressWindow(request, options_.grace);
  EXPECT_EQ(window, absl::Milliseconds(2300));
  EXPECT_LT(elapsed, window + absl::Seconds(1));
  EXPECT_GE(elapsed, window);
  ASSERT_THAT(results, SizeIs(3));
  EXPECT_EQ(results[1].status(), CASE_STATUS_HANG);
  EXPECT_EQ(results[1].message(), "rank 1 did not answer: no progress for 2.3s");
  EXPECT_EQ(results[1].suspect_peer(), -1);
  EXPECT_EQ(results[1].phase(), "host deadline");
  EXPECT_EQ(results[0].status(), CASE_STATUS_OK);
  EXPECT_EQ(results[2].status(), CASE_STATUS_OK);
  EXPECT_THAT(Pool().LivePids(), IsEmpty());
  EXPECT_EQ(Pool().Restarts(), 1u);
  ExpectAllOk(Run({0, 1, 2}, Case()), {0, 1, 2});
}

// A rank that keeps completing work is never stopped by the progress rule, however long it runs:
// 3 s of work, past the 2.3 s window and the 1.3 s a fixed deadline of the old formula allowed.
TEST_F(WorkerPoolTest, ARankThatKeepsProgressingIsNotLate) {
  options_.heartbeat_grace = absl::Hours(1);
  Run({0, 1, 2}, Case());
  const absl::Time start = absl::Now();
  const std::vector<RankResult> results = Run({0, 1, 2}, Case("slow:1", 1000));
  EXPECT_GE(absl::Now() - start, absl::Seconds(3));
  ExpectAllOk(results, {0, 1, 2});
}

// A rank that completes work forever without answering: the wall cap ends it.
TEST_F(WorkerPoolTest, TheWallCapEndsARankThatProgressesWithoutAnswering) {
  options_.heartbeat_grace = absl::Hours(1);
  Run({0, 1, 2}, Case());
  const CaseRequest request = Case("grind:1", 1000);
  const absl::Time start = absl::Now();
  const std::vector<RankResult> results = Run({0, 1, 2}, request);
  const absl::Duration elapsed = absl::Now() - start;
  EXPECT_EQ(CaseDeadline(request, options_.grace), absl::Milliseconds(4600));
  EXPECT_GE(elapsed, CaseDeadline(request, options_.grace));
  EXPECT_LT(elapsed, CaseDeadline(request, options_.grace) + absl::Seconds(1));
  ASSERT_THAT(results, SizeIs(3));
  EXPECT_EQ(results[1].status(), CASE_STATUS_HANG);
  EXPECT_EQ(results[1].message(), "rank 1 did not answer within 4.6s");
  EXPECT_EQ(results[0].status(), CASE_STATUS_OK);
  EXPECT_EQ(results[2].status(), CASE_STATUS_OK);
}

// The one verdict rule: whoever ran out of time first, ranks that were waiting for a peer name it.
TEST_F(WorkerPoolTest, HostDeadlineNamesTheRankThePeersWereWaitingFor) {
  options_.heartbeat_grace = absl::Hours(1);  // every rank beats: only the host deadline ends it
  Run({0, 1, 2, 3}, Case());
  const std::vector<RankResult> results = Run({0, 1, 2, 3}, Case("late:2", 300));
  ASSERT_THAT(results, SizeIs(4));
  for (uint32_t rank : {0u, 1u, 3u}) {
    EXPECT_EQ(results[rank].status(), CASE_STATUS_HANG) << results[rank].message();
    EXPECT_EQ(results[rank].suspect_peer(), 2) << results[rank].message();
    EXPECT_THAT(results[rank].message(), HasSubstr("waited for rank 2"));
  }
  EXPECT_EQ(results[2].status(), CASE_STATUS_HANG);
  EXPECT_EQ(results[2].suspect_peer(), -1);
}

TEST_F(WorkerPoolTest, CancelledCaseStopsAtOnceAndTheSameWorkersAreResetForTheNext) {
  const std::vector<int> before = Pids(Run({0, 1, 2, 3}, Case()));
  std::atomic<bool> cancel = false;
  std::thread canceller([&] {
    absl::SleepFor(absl::Milliseconds(300));
    cancel = true;
  });
  const absl::Time start = absl::Now();
  const absl::StatusOr<std::vector<RankResult>> stopped =
      Pool().RunCase({0, 1, 2, 3}, Case("spin_cancel", 600000), [&] { return cancel.load(); });
  const absl::Duration elapsed = absl::Now() - start;
  canceller.join();
  EXPECT_EQ(stopped.status().code(), absl::StatusCode::kCancelled) << stopped.status();
  EXPECT_THAT(stopped.status().message(), HasSubstr("stopped mid-protocol"));
  EXPECT_LT(elapsed, absl::Milliseconds(300) + absl::Milliseconds(700)) << "not stopped at once";
  const std::vector<RankResult> after = Run({0, 1, 2, 3}, Case());
  ExpectAllOk(after, {0, 1, 2, 3});
  EXPECT_EQ(Pids(after), before) << "a case that stopped when asked needs no respawn";
  EXPECT_THAT(after[0].message(), HasSubstr("resets=1"));
  EXPECT_EQ(Pool().Restarts(), 0u);
}

TEST_F(WorkerPoolTest, CancelledCaseThatDoesNotStopIsKilledAfterOneSecond) {
  const std::vector<int> before = Pids(Run({0, 1}, Case()));
  std::atomic<bool> cancel = false;
  std::thread canceller([&] {
    absl::SleepFor(absl::Milliseconds(200));
    cancel = true;
  });
  const absl::Time start = absl::Now();
  const absl::StatusOr<std::vector<RankResult>> stopped =
      Pool().RunCase({0, 1}, Case("spin_deaf", 600000), [&] { return cancel.load(); });
  const absl::Duration elapsed = absl::Now() - start;
  canceller.join();
  EXPECT_EQ(stopped.status().code(), absl::StatusCode::kCancelled) << stopped.status();
  EXPECT_THAT(stopped.status().message(), HasSubstr("did not stop within 1 s"));
  EXPECT_GE(elapsed, absl::Milliseconds(200) + absl::Seconds(1));
  EXPECT_LT(elapsed, absl::Milliseconds(200) + absl::Seconds(2));
  for (int pid : before) EXPECT_TRUE(Gone(pid)) << pid;
  ExpectAllOk(Run({0, 1}, Case()), {0, 1});
  EXPECT_EQ(Pool().Restarts(), 1u);
}

TEST_F(WorkerPoolTest, RuntimeDirectoriesOfDeadControllersAreRemovedAtCreation) {
  // A dead controller's directory: its lock file is there, and nobody holds the lock.
  const std::string dead = parent_ + "/colltest-dead00";
  std::filesystem::create_directory(dead);
  std::ofstream(dead + "/controller.lock").put('x');
  std::ofstream(dead + "/rank-0.sock").put('x');
  // A live controller's: the lock is held (here by this test).
  const std::string live = parent_ + "/colltest-live00";
  std::filesystem::create_directory(live);
  const int held = open((live + "/controller.lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  ASSERT_GE(held, 0);
  ASSERT_EQ(flock(held, LOCK_EX | LOCK_NB), 0);
  // Not colltestd's: no lock file.
  const std::string other = parent_ + "/colltest-other0";
  std::filesystem::create_directory(other);

  Pool();
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_TRUE(std::filesystem::exists(live));
  EXPECT_TRUE(std::filesystem::exists(other));
  close(held);
  std::filesystem::remove_all(live);
  std::filesystem::remove_all(other);
}

TEST_F(WorkerPoolTest, RankWhoseHeartbeatStandsStillIsKilledByTheWatchdog) {
  options_.heartbeat_grace = absl::Milliseconds(400);
  Run({0, 1, 2}, Case());
  // The fake never beats; once ranks 0 and 2 have answered, rank 1 has the grace alone.
  const CaseRequest request = Case("hang:1", 20000);
  const absl::Time start = absl::Now();
  const std::vector<RankResult> results = Run({0, 1, 2}, request);
  const absl::Duration elapsed = absl::Now() - start;
  EXPECT_LT(elapsed, absl::Milliseconds(400) + absl::Seconds(1)) << "waited for the deadline";
  ASSERT_THAT(results, SizeIs(3));
  EXPECT_EQ(results[1].status(), CASE_STATUS_HANG);
  EXPECT_THAT(results[1].message(), HasSubstr("made no progress for"));
  EXPECT_THAT(results[1].message(), HasSubstr("alive but stuck: killed"));
  EXPECT_EQ(results[1].phase(), "watchdog");
  EXPECT_EQ(results[0].status(), CASE_STATUS_OK);
  EXPECT_EQ(results[2].status(), CASE_STATUS_OK);
  EXPECT_THAT(Pool().LivePids(), IsEmpty());
  ExpectAllOk(Run({0, 1, 2}, Case()), {0, 1, 2});
}

TEST_F(WorkerPoolTest, RankEveryPeerTimedOutWaitingForIsNotWaitedForInTurn) {
  Run({0, 1, 2}, Case());
  // Rank 2 keeps working (it beats) but ranks 0 and 1 already report waiting for it: the verdict
  // is known, and the rank gets a short grace, not its own timeout.
  const absl::Time start = absl::Now();
  const std::vector<RankResult> results = Run({0, 1, 2}, Case("busy:2", 20000));
  const absl::Duration elapsed = absl::Now() - start;
  EXPECT_LT(elapsed, absl::Seconds(1)) << "waited for the busy rank";
  ASSERT_THAT(results, SizeIs(3));
  EXPECT_EQ(results[2].status(), CASE_STATUS_HANG);
  EXPECT_THAT(results[2].message(),
              HasSubstr("had not answered when every peer had timed out waiting for it"));
  EXPECT_EQ(results[2].phase(), "watchdog");
  EXPECT_EQ(results[0].suspect_peer(), 2);
  ExpectAllOk(Run({0, 1, 2}, Case()), {0, 1, 2});
}

TEST_F(WorkerPoolTest, WhilePeersStillRunAStillHeartbeatHasTheCaseTimeoutToo) {
  options_.heartbeat_grace = absl::Milliseconds(300);
  Run({0, 1}, Case());
  // Both ranks hang without beating: neither is the last one, so the limit is the case timeout
  // (1 s) plus the grace, not the grace alone.
  CaseRequest request = Case("hang_all", 1000);
  request.set_iters(20);  // a host deadline of 5.3 s, well after the watchdog's 1.3 s
  const absl::Time start = absl::Now();
  const std::vector<RankResult> results = Run({0, 1}, request);
  const absl::Duration elapsed = absl::Now() - start;
  EXPECT_GE(elapsed, absl::Milliseconds(1300));
  EXPECT_LT(elapsed, absl::Milliseconds(1300) + absl::Seconds(1));
  ASSERT_THAT(results, SizeIs(2));
  EXPECT_TRUE(results[0].phase() == "watchdog" || results[1].phase() == "watchdog")
      << results[0].ShortDebugString() << " / " << results[1].ShortDebugString();
}

TEST_F(WorkerPoolTest, EveryRankIsResetAfterACaseThatFailed) {
  const std::vector<RankResult> wrong = Run({0, 1}, Case("wrong:1"));
  ASSERT_THAT(wrong, SizeIs(2));
  EXPECT_EQ(wrong[1].status(), CASE_STATUS_WRONG);
  const std::vector<RankResult> next = Run({0, 1}, Case());
  ExpectAllOk(next, {0, 1});
  EXPECT_EQ(Pids(next), Pids(wrong));
  for (const RankResult& r : next) EXPECT_THAT(r.message(), HasSubstr("resets=1"));
  EXPECT_EQ(Pool().Restarts(), 0u);
}

TEST_F(WorkerPoolTest, GroupThatCannotBeResetIsRespawned) {
  const std::vector<RankResult> wrong = Run({0, 1}, Case("wrong_stuck:1"));
  ASSERT_THAT(wrong, SizeIs(2));
  EXPECT_EQ(wrong[1].status(), CASE_STATUS_WRONG);
  EXPECT_THAT(Pool().LivePids(), IsEmpty());
  EXPECT_EQ(Pool().Restarts(), 1u);
  const std::vector<RankResult> next = Run({0, 1}, Case());
  ExpectAllOk(next, {0, 1});
  for (const RankResult& r : next) EXPECT_THAT(r.message(), HasSubstr("resets=0"));
}

TEST_F(WorkerPoolTest, WorkerKilledWhileIdleIsReplacedBeforeTheNextCase) {
  const std::vector<int> before = Pids(Run({0, 1}, Case()));
  ASSERT_EQ(kill(before[0], SIGKILL), 0);
  // LivePids reaps what has exited; no readiness to wait for but the kernel's.
  while (Pool().LivePids().size() == 2) std::this_thread::yield();
  const std::vector<RankResult> after = Run({0, 1}, Case());
  ExpectAllOk(after, {0, 1});
  ASSERT_THAT(after, SizeIs(2));
  EXPECT_NE(Pids(after)[0], before[0]);
  EXPECT_NE(Pids(after)[1], before[1]);
  EXPECT_TRUE(Gone(before[1]));
  EXPECT_EQ(Pool().Restarts(), 1u);
}

TEST_F(WorkerPoolTest, ShutdownLeavesNoProcessSocketSegmentOrDirectory) {
  std::vector<int> pids = Pids(Run({0, 1, 2, 3}, Case("crash:3")));
  const std::vector<int> second = Pids(Run({0, 1, 2, 3}, Case()));
  const std::vector<int> other = Pids(Run({4, 5}, Case()));
  pids.insert(pids.end(), second.begin(), second.end());
  pids.insert(pids.end(), other.begin(), other.end());
  ASSERT_THAT(ListDir(parent_), SizeIs(1));
  const std::string runtime_dir = parent_ + "/" + ListDir(parent_)[0];
  EXPECT_THAT(ListDir(runtime_dir), SizeIs(7));  // rank-<device>.sock, controller.lock
  EXPECT_EQ(std::filesystem::status(runtime_dir).permissions(), std::filesystem::perms::owner_all);

  Pool().Shutdown();
  EXPECT_THAT(Pool().LivePids(), IsEmpty());
  for (int pid : pids) {
    if (pid != 0) {
      EXPECT_TRUE(Gone(pid)) << pid;
    }
  }
  EXPECT_TRUE(NoChildren());
  EXPECT_THAT(OurShm(), IsEmpty());
  EXPECT_THAT(ListDir(parent_), IsEmpty());

  Pool().Shutdown();  // idempotent
  const absl::StatusOr<std::vector<RankResult>> late = Pool().RunCase({0}, Case());
  EXPECT_EQ(late.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(WorkerPoolTest, DestructorShutsDown) {
  Run({0, 1}, Case());
  pool_.reset();
  EXPECT_TRUE(NoChildren());
}

TEST_F(WorkerPoolTest, OverlappingGroupReplacesTheFirst) {
  const std::vector<int> first = Pids(Run({0, 1}, Case()));
  const std::vector<int> second = Pids(Run({1, 2}, Case()));
  for (int pid : first) EXPECT_TRUE(Gone(pid)) << pid;
  EXPECT_THAT(Pool().LivePids(), UnorderedElementsAreArray(second));
  EXPECT_EQ(Pool().Restarts(), 0u);
}

TEST_F(WorkerPoolTest, DisjointGroupsCoexistAndRunConcurrently) {
  Pool();
  std::vector<RankResult> a, b;
  std::thread ta([&] { a = Run({0, 1}, Case()); });
  std::thread tb([&] { b = Run({2, 3}, Case()); });
  ta.join();
  tb.join();
  ExpectAllOk(a, {0, 1});
  ExpectAllOk(b, {2, 3});
  EXPECT_THAT(Pool().LivePids(), SizeIs(4));
  // A hang in one group does not disturb the other.
  std::vector<RankResult> hung, fine;
  std::thread th([&] { hung = Run({0, 1}, Case("hang:0", 1000)); });
  std::thread tf([&] { fine = Run({2, 3}, Case()); });
  th.join();
  tf.join();
  ASSERT_THAT(hung, SizeIs(2));
  EXPECT_EQ(hung[0].status(), CASE_STATUS_HANG);
  ExpectAllOk(fine, {2, 3});
  EXPECT_EQ(Pids(fine), Pids(b));
}

TEST_F(WorkerPoolTest, SameDeviceTwiceIsRefused) {
  EXPECT_EQ(Pool().RunCase({1, 1}, Case()).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Pool().RunCase({}, Case()).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(WorkerPoolTest, InitFailureNamesTheRankAndLeavesNothing) {
  ScopedEnv env("FAKE_WORKER_FAIL_INIT_DEVICE", "2");
  const absl::StatusOr<std::vector<RankResult>> results = Pool().RunCase({0, 1, 2, 3}, Case());
  ASSERT_FALSE(results.ok());
  EXPECT_EQ(results.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(results.status().message(), HasSubstr("rank 2 (device 2) Init failed"));
  EXPECT_THAT(Pool().LivePids(), IsEmpty());
  EXPECT_TRUE(NoChildren());
  EXPECT_THAT(OurShm(), IsEmpty());
}

// The grid is the same on every rank only when every device keeps as many blocks co-resident.
TEST_F(WorkerPoolTest, DevicesThatKeepFewerBlocksCoResidentAreRefusedNamingTheRank) {
  ScopedEnv env("FAKE_WORKER_SMALL_DEVICE", "1");
  const absl::StatusOr<std::vector<RankResult>> results = Pool().RunCase({0, 1}, Case());
  ASSERT_FALSE(results.ok());
  EXPECT_EQ(results.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(results.status().message(),
              HasSubstr("rank 1 (fake) keeps 66 blocks co-resident and rank 0 (fake) 132"));
  EXPECT_TRUE(NoChildren());
  EXPECT_THAT(OurShm(), IsEmpty());
}

TEST_F(WorkerPoolTest, WorkerThatExitsBeforeItIsReadyIsReported) {
  ScopedEnv env("FAKE_WORKER_EXIT_BEFORE_READY", "1");
  const absl::StatusOr<std::vector<RankResult>> results = Pool().RunCase({0, 1}, Case());
  ASSERT_FALSE(results.ok());
  EXPECT_THAT(results.status().message(), HasSubstr("cannot start rank 0 on device 0"));
  EXPECT_THAT(results.status().message(),
              HasSubstr("exited before it was ready: exited with status 7"));
  EXPECT_TRUE(NoChildren());
}

TEST_F(WorkerPoolTest, WorkerThatNeverGetsReadyTimesOut) {
  ScopedEnv env("FAKE_WORKER_NO_READY", "1");
  options_.spawn_timeout = absl::Milliseconds(500);
  const absl::Time start = absl::Now();
  const absl::StatusOr<std::vector<RankResult>> results = Pool().RunCase({0, 1}, Case());
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  ASSERT_FALSE(results.ok());
  EXPECT_EQ(results.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(results.status().message(), HasSubstr("was not ready within"));
  EXPECT_TRUE(NoChildren());
}

TEST_F(WorkerPoolTest, WorkerThatCannotBeExecutedIsReported) {
  options_.worker_binary = parent_ + "/not-a-program";
  std::ofstream(options_.worker_binary) << "not a program\n";
  chmod(options_.worker_binary.c_str(), 0755);
  const absl::StatusOr<std::vector<RankResult>> results = Pool().RunCase({0}, Case());
  ASSERT_FALSE(results.ok());
  EXPECT_THAT(results.status().message(), HasSubstr("cannot execute"));
  EXPECT_TRUE(NoChildren());
  std::filesystem::remove(options_.worker_binary);
}

TEST_F(WorkerPoolTest, MissingWorkerBinaryIsRefusedAtCreation) {
  options_.worker_binary = parent_ + "/no-such-worker";
  const absl::StatusOr<std::unique_ptr<WorkerPool>> pool = CreateWorkerPool(options_);
  EXPECT_FALSE(pool.ok());
  EXPECT_THAT(pool.status().message(), HasSubstr("no-such-worker"));
  options_.worker_binary = FAKE_WORKER_PATH;
  options_.backend = "auto";
  EXPECT_EQ(CreateWorkerPool(options_).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(WorkerPoolTest, SegmentsOfDeadControllersAreRemovedAtCreation) {
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  ASSERT_GT(dead, 0);
  ASSERT_EQ(waitpid(dead, nullptr, 0), dead);
  const std::string stale = absl::StrCat("/colltest.", dead, ".1.0");
  const std::string live = absl::StrCat("/colltest.", getppid(), ".1.0");  // our parent lives
  for (const std::string& name : {stale, live}) {
    const int fd = shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
    ASSERT_GE(fd, 0) << name;
    close(fd);
  }
  Pool();
  EXPECT_FALSE(std::filesystem::exists("/dev/shm" + stale));
  EXPECT_TRUE(std::filesystem::exists("/dev/shm" + live));
  shm_unlink(live.c_str());
  shm_unlink(stale.c_str());
}

// The state of the group of `devices` once it has left RECOVERING, waiting at most `limit`.
colltest::v1::GroupHealth SettledState(WorkerPool& pool, const std::vector<uint32_t>& devices,
                                       absl::Duration limit) {
  const absl::Time end = absl::Now() + limit;
  colltest::v1::GroupHealth found;
  while (absl::Now() < end) {
    for (const colltest::v1::GroupHealth& g : pool.GroupStates()) {
      if (std::vector<uint32_t>(g.devices().begin(), g.devices().end()) == devices) found = g;
    }
    if (found.state() != colltest::v1::GROUP_STATE_RECOVERING &&
        found.state() != colltest::v1::GROUP_STATE_UNSPECIFIED) {
      break;
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  return found;
}

class RecoveryTest : public WorkerPoolTest {
 protected:
  void SetUp() override {
    WorkerPoolTest::SetUp();
    options_.eager_recovery = true;
    options_.canary = Case();
    options_.canary.set_variant(colltest::v1::VARIANT_LAMPORT);
    options_.on_state_change = [this](const colltest::v1::GroupHealth& g) {
      absl::MutexLock lock(&mu_);
      transitions_.push_back(g.state());
    };
  }
  std::vector<colltest::v1::GroupState> Transitions() {
    absl::MutexLock lock(&mu_);
    return transitions_;
  }

  absl::Mutex mu_;
  std::vector<colltest::v1::GroupState> transitions_;
};

// A respawn whose workers cannot start at once (under MPS a new client's context is refused while
// the server cleans up after a dead one) is tried again a second later, not left DEGRADED until
// the next request.
TEST_F(RecoveryTest, RespawnThatFailsIsTriedAgain) {
  Run({0, 1}, Case());
  // Beside the runtime directory, which the fixture expects empty at the end.
  const std::string marks = absl::StrCat(parent_, "-init-marks");
  ASSERT_TRUE(std::filesystem::create_directory(marks));
  struct RemoveMarks {
    std::string dir;
    ~RemoveMarks() { std::filesystem::remove_all(dir); }
  } remove_marks{marks};
  // One Init fails, whichever rank's comes first: the group's first respawn.
  const ScopedEnv fail_once("FAKE_WORKER_INIT_FAILURES", absl::StrCat(marks, ":1").c_str());
  Run({0, 1}, Case("crash:1"));
  const colltest::v1::GroupHealth state = SettledState(Pool(), {0, 1}, absl::Seconds(20));
  EXPECT_EQ(state.state(), colltest::v1::GROUP_STATE_SERVING) << state.message();
  EXPECT_EQ(state.message(), "respawned (at attempt 2) and passed the canary");
  ExpectAllOk(Run({0, 1}, Case()), {0, 1});
}

TEST_F(RecoveryTest, FailedGroupIsRespawnedAndServesAfterItsCanaryWithoutWaitingForARequest) {
  const std::vector<int> before = Pids(Run({0, 1, 2, 3}, Case()));
  Run({0, 1, 2, 3}, Case("crash:2"));
  const colltest::v1::GroupHealth state = SettledState(Pool(), {0, 1, 2, 3}, absl::Seconds(10));
  EXPECT_EQ(state.state(), colltest::v1::GROUP_STATE_SERVING) << state.message();
  EXPECT_EQ(state.message(), "respawned and passed the canary");
  EXPECT_EQ(state.recoveries(), 1u);
  EXPECT_EQ(state.respawns(), 1u);
  EXPECT_GT(state.last_recovery_ms(), 0.0);
  EXPECT_LT(state.last_recovery_ms(), 3000.0);
  // Respawned before any request asked for it.
  const std::vector<int> respawned = Pool().LivePids();
  ASSERT_THAT(respawned, SizeIs(4));
  for (int pid : respawned) EXPECT_THAT(before, ::testing::Not(::testing::Contains(pid)));
  EXPECT_THAT(Transitions(),
              ElementsAre(colltest::v1::GROUP_STATE_SERVING, colltest::v1::GROUP_STATE_RECOVERING,
                          colltest::v1::GROUP_STATE_SERVING));
  // The next case runs on the recovered workers; the canary was their first case.
  const std::vector<RankResult> next = Run({0, 1, 2, 3}, Case());
  ExpectAllOk(next, {0, 1, 2, 3});
  EXPECT_THAT(Pids(next), UnorderedElementsAreArray(respawned));
}

TEST_F(RecoveryTest, GroupWhoseRanksAnsweredAFailureIsResetAndCanariedOnTheSameWorkers) {
  const std::vector<int> before = Pids(Run({0, 1}, Case()));
  Run({0, 1}, Case("wrong:1"));
  const colltest::v1::GroupHealth state = SettledState(Pool(), {0, 1}, absl::Seconds(10));
  EXPECT_EQ(state.state(), colltest::v1::GROUP_STATE_SERVING) << state.message();
  EXPECT_EQ(state.message(), "reset and passed the canary");
  EXPECT_EQ(state.recoveries(), 1u);
  EXPECT_EQ(state.respawns(), 0u);
  const std::vector<RankResult> next = Run({0, 1}, Case());
  EXPECT_EQ(Pids(next), before);
  // One Reset after the failed case; the canary passed and needed none.
  for (const RankResult& r : next) EXPECT_THAT(r.message(), HasSubstr("resets=1"));
}

TEST_F(RecoveryTest, CaseArrivingDuringRecoveryWaitsForItAndRuns) {
  Run({0, 1}, Case());
  Run({0, 1}, Case("crash:1"));
  // No wait: this case finds the group recovering (or just recovered) and must run on it.
  const std::vector<RankResult> next = Run({0, 1}, Case());
  ExpectAllOk(next, {0, 1});
  EXPECT_EQ(SettledState(Pool(), {0, 1}, absl::Seconds(1)).state(),
            colltest::v1::GROUP_STATE_SERVING);
  EXPECT_EQ(Pool().Restarts(), 1u);
}

TEST_F(RecoveryTest, OverlappingGroupWaitsForTheRecoveryToSettle) {
  Run({0, 1, 2, 3}, Case());
  Run({0, 1, 2, 3}, Case("hang:3", 500));
  ExpectAllOk(Run({2, 3}, Case()), {2, 3});
  // The pair displaced the recovered group; the group's record keeps its last verdict.
  EXPECT_EQ(SettledState(Pool(), {0, 1, 2, 3}, absl::Seconds(1)).state(),
            colltest::v1::GROUP_STATE_SERVING);
  EXPECT_THAT(Pool().LivePids(), SizeIs(2));
}

TEST_F(RecoveryTest, GroupFailingItsCanaryIsDegradedAndRefusesCasesNamingWhy) {
  options_.canary.set_fault("wrong:1");
  Run({0, 1}, Case());
  Run({0, 1}, Case("crash:0"));
  const colltest::v1::GroupHealth state = SettledState(Pool(), {0, 1}, absl::Seconds(10));
  EXPECT_EQ(state.state(), colltest::v1::GROUP_STATE_DEGRADED);
  EXPECT_THAT(state.message(), HasSubstr("canary failed: rank 1"));
  EXPECT_THAT(Pool().LivePids(), IsEmpty());
  // Every request is a new attempt; this one fails its canary again and says so.
  absl::StatusOr<std::vector<RankResult>> refused = Pool().RunCase({0, 1}, Case());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(refused.status().message(), HasSubstr("devices 0,1 are DEGRADED"));
  EXPECT_THAT(OurShm(), IsEmpty());
}

TEST_F(RecoveryTest, WorkerKilledWhileIdleIsRecoveredThroughTheCanary) {
  const std::vector<int> before = Pids(Run({0, 1}, Case()));
  ASSERT_EQ(kill(before[1], SIGKILL), 0);
  while (Pool().LivePids().size() == 2) std::this_thread::yield();
  ExpectAllOk(Run({0, 1}, Case()), {0, 1});
  const colltest::v1::GroupHealth state = SettledState(Pool(), {0, 1}, absl::Seconds(1));
  EXPECT_EQ(state.state(), colltest::v1::GROUP_STATE_SERVING);
  EXPECT_EQ(state.recoveries(), 1u);
  EXPECT_EQ(state.message(), "respawned and passed the canary");
}

TEST_F(RecoveryTest, ShutdownDuringARecoveryLeavesNothing) {
  Run({0, 1, 2, 3}, Case());
  Run({0, 1, 2, 3}, Case("crash:1"));
  Pool().Shutdown();  // TearDown checks processes, segments and the directory
  EXPECT_THAT(Pool().LivePids(), IsEmpty());
}

// The group of exactly `devices` as GroupStates reports it; state UNSPECIFIED when none.
colltest::v1::GroupHealth StateOf(WorkerPool& pool, const std::vector<uint32_t>& devices) {
  for (const colltest::v1::GroupHealth& g : pool.GroupStates()) {
    if (std::vector<uint32_t>(g.devices().begin(), g.devices().end()) == devices) return g;
  }
  return {};
}

// Waits (bounded) until the group of `devices` says its workers exited for idleness, which it
// says once they are reaped and their files removed; returns how long that took.
absl::Duration WaitForIdleExit(WorkerPool& pool, const std::vector<uint32_t>& devices,
                               absl::Duration limit) {
  const absl::Time start = absl::Now();
  while (!absl::StartsWith(StateOf(pool, devices).message(), kIdleExitMessagePrefix) &&
         absl::Now() - start < limit) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  return absl::Now() - start;
}

class IdleTest : public WorkerPoolTest {
 protected:
  void SetUp() override {
    WorkerPoolTest::SetUp();
    options_.idle_timeout = absl::Milliseconds(300);
    // A canary that fails: any group that ran it would be DEGRADED and refuse the case, so a case
    // that runs proves no canary ran.
    options_.canary = Case("wrong:1");
    options_.canary.set_variant(colltest::v1::VARIANT_LAMPORT);
  }
};

TEST_F(IdleTest, IdleGroupExitsCleanlyAndTheNextCaseStartsItAgainWithoutACanary) {
  const std::vector<int> before = Pids(Run({0, 1}, Case()));
  EXPECT_LT(WaitForIdleExit(Pool(), {0, 1}, absl::Seconds(5)), absl::Seconds(2));
  EXPECT_THAT(Pool().LivePids(), IsEmpty());
  for (int pid : before) EXPECT_TRUE(Gone(pid)) << pid;
  EXPECT_TRUE(NoChildren()) << "reaped";
  EXPECT_THAT(OurShm(), IsEmpty());
  ASSERT_THAT(ListDir(parent_), SizeIs(1));
  EXPECT_THAT(ListDir(parent_ + "/" + ListDir(parent_)[0]), ElementsAre("controller.lock"))
      << "sockets left behind";
  colltest::v1::GroupHealth idle = StateOf(Pool(), {0, 1});
  EXPECT_EQ(idle.state(), colltest::v1::GROUP_STATE_SERVING);
  EXPECT_THAT(idle.message(), ::testing::StartsWith(kIdleExitMessagePrefix));
  EXPECT_TRUE(IsIdleMessage(idle));
  EXPECT_EQ(idle.recoveries(), 0u);
  EXPECT_EQ(Pool().Restarts(), 0u) << "an idle exit is no restart";

  const std::vector<RankResult> after = Run({0, 1}, Case());
  ExpectAllOk(after, {0, 1});
  for (int pid : Pids(after)) EXPECT_THAT(before, ::testing::Not(::testing::Contains(pid)));
  const colltest::v1::GroupHealth again = StateOf(Pool(), {0, 1});
  EXPECT_EQ(again.state(), colltest::v1::GROUP_STATE_SERVING);
  EXPECT_EQ(again.message(), kIdleRestartMessage);
  EXPECT_EQ(again.recoveries(), 0u);
  EXPECT_EQ(Pool().Restarts(), 0u);
}

TEST_F(IdleTest, GroupInUseKeepsItsWorkersAndOnlyTheIdleOneExits) {
  const std::vector<int> idle = Pids(Run({2, 3}, Case()));
  // A case three idle timeouts long: its group is not idle while it runs, however long.
  std::atomic<bool> cancel = false;
  absl::StatusOr<std::vector<RankResult>> long_case;
  std::thread runner([&] {
    long_case = Pool().RunCase({0, 1}, Case("spin_cancel", 600000), [&] { return cancel.load(); });
  });
  std::vector<int> busy;
  for (int i = 0; i < 1000 && busy.size() < 2; ++i) {
    busy.clear();
    for (int pid : Pool().LivePids()) {
      if (std::find(idle.begin(), idle.end(), pid) == idle.end()) busy.push_back(pid);
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_THAT(busy, SizeIs(2));
  if (busy.size() == 2) absl::SleepFor(3 * options_.idle_timeout);
  EXPECT_LT(WaitForIdleExit(Pool(), {2, 3}, absl::Seconds(5)), absl::Seconds(2));
  for (int pid : idle) EXPECT_TRUE(Gone(pid)) << "idle group " << pid;
  EXPECT_THAT(Pool().LivePids(), UnorderedElementsAreArray(busy));
  for (int pid : busy) EXPECT_FALSE(Gone(pid)) << "busy group " << pid;
  cancel = true;
  runner.join();
  // Stopped when asked, by its ranks: CANCELLED with every rank's answer, nobody killed.
  EXPECT_EQ(long_case.status().code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(long_case.status().message(), HasSubstr("stopped mid-protocol"));
  EXPECT_EQ(Pool().Restarts(), 0u);
}

TEST_F(IdleTest, ZeroTimeoutKeepsTheWorkers) {
  options_.idle_timeout = absl::ZeroDuration();
  const std::vector<int> pids = Pids(Run({0, 1}, Case()));
  absl::SleepFor(absl::Milliseconds(600));
  EXPECT_THAT(Pool().LivePids(), UnorderedElementsAreArray(pids));
}

TEST(CaseDeadlineTest, TheWindowIsTwoTimeoutsAndTheCapGrowsWithTheCalls) {
  const absl::Duration grace = absl::Seconds(2);
  CaseRequest request;
  EXPECT_EQ(ProgressWindow(request, grace), absl::Seconds(12));  // 0 means 5 s
  EXPECT_EQ(CaseDeadline(request, grace), absl::Seconds(24));
  request.set_timeout_ms(200);
  EXPECT_EQ(ProgressWindow(request, grace), absl::Seconds(4));  // 1 s floor
  request.set_timeout_ms(2000);
  request.set_stress_calls(1000);
  EXPECT_EQ(CaseDeadline(request, grace), absl::Seconds(6 * 1002));
  request.set_stress_calls(0);
  request.set_warmup(5);
  request.set_iters(20);
  EXPECT_EQ(CaseDeadline(request, grace), absl::Seconds(6 * 27));
  request.set_mode(colltest::v1::MODE_GRAPH);  // one untimed replay of up to kGraphCalls
  EXPECT_EQ(CaseDeadline(request, grace), absl::Seconds(6 * 43));
}

}  // namespace
}  // namespace colltest::server
