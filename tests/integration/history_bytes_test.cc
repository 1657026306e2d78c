// The history's byte bound on a real colltestd: sweeps of 4,096 UNSUPPORTED cases (`auto` without
// a tune table is answered by colltestd itself, no worker involved, so they are cheap) push the
// oldest runs out of the history database, and the daemon's memory stays flat, since finished
// runs live in the database, not in memory.
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/daemon.h"

namespace colltest::testing {
namespace {

namespace v1 = ::colltest::v1;

constexpr int kRuns = 60;
constexpr uint32_t kCasesPerRun = 4096;
// About 38 runs of ~650 KB of case results: the bound is passed two thirds of the way through.
constexpr const char* kHistoryBound = "24MiB";

// VmRSS of `pid` in bytes, 0 when unknown.
uint64_t ResidentBytes(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

// Sends this process's stderr to /dev/null while alive: a daemon started meanwhile inherits it and
// does not fill the test log with one warning per UNSUPPORTED case.
class QuietStderr {
 public:
  QuietStderr() : saved_(dup(STDERR_FILENO)) {
    const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    dup2(null, STDERR_FILENO);
    close(null);
  }
  ~QuietStderr() {
    dup2(saved_, STDERR_FILENO);
    close(saved_);
  }
  QuietStderr(const QuietStderr&) = delete;
  QuietStderr& operator=(const QuietStderr&) = delete;

 private:
  int saved_;
};

v1::RunRequest UnsupportedSweep() {
  v1::RunRequest request;
  v1::SweepSpec* spec = request.mutable_spec();
  spec->set_world_size(2);
  for (uint32_t m = 1; m <= kCasesPerRun; ++m) spec->add_m(m);
  spec->add_n(8);
  spec->add_variants(v1::VARIANT_AUTO);
  return request;
}

TEST(HistoryBytesTest, BigRunsPushOutTheOldestAndMemoryStaysBounded) {
  const std::string no_tables = ::testing::TempDir() + "/colltestd_no_tune_tables";
  std::filesystem::create_directories(no_tables);
  std::unique_ptr<Daemon> daemon;
  {
    QuietStderr quiet;
    daemon = Daemon::Start(2, {"--history-max-bytes", kHistoryBound, "--tune-dir", no_tables,
                               "--history-prune-interval", "200ms"});
  }
  ASSERT_NE(daemon, nullptr);
  auto stub = daemon->Stub();
  const v1::RunRequest request = UnsupportedSweep();
  std::vector<std::string> ids;
  uint64_t rss_before = 0;
  for (int i = 0; i < kRuns; ++i) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
    v1::RunResult run;
    const grpc::Status status = stub->Run(&context, request, &run);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_EQ(run.cases_size(), static_cast<int>(kCasesPerRun));
    ASSERT_EQ(run.cases(0).status(), v1::CASE_STATUS_UNSUPPORTED);
    ids.push_back(run.run_id());
    // After one run the gRPC buffers, the run's code paths and the allocator's arenas are warm:
    // what grows from here on is the history.
    if (i == 0) rss_before = ResidentBytes(daemon->pid());
  }
  const uint64_t rss_after = ResidentBytes(daemon->pid());
  ASSERT_GT(rss_before, 0u);
  RecordProperty("rss_growth_kib",
                 static_cast<int>(
                     (static_cast<int64_t>(rss_after) - static_cast<int64_t>(rss_before)) / 1024));
  // The runs are in the database, not in memory: 60 runs of ~650 KB each would add ~40 MiB
  // serialized and ~120 MiB as messages.
  EXPECT_LT(rss_after, rss_before + (uint64_t{30} << 20))
      << "RSS " << rss_before / 1024 << " KiB -> " << rss_after / 1024 << " KiB";

  // The retention pass runs every 200 ms here: the oldest runs go within a few passes.
  const auto status_of = [&](const std::string& id) {
    grpc::ClientContext context;
    v1::GetRunRequest get;
    get.set_run_id(id);
    v1::RunResult run;
    return stub->GetRun(&context, get, &run).error_code();
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (status_of(ids[10]) != grpc::StatusCode::NOT_FOUND &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (int i : {0, 1, 10}) EXPECT_EQ(status_of(ids[i]), grpc::StatusCode::NOT_FOUND) << i;
  grpc::ClientContext context;
  v1::GetRunRequest get;
  get.set_run_id(ids.back());
  v1::RunResult newest;
  ASSERT_TRUE(stub->GetRun(&context, get, &newest).ok());
  EXPECT_EQ(newest.cases_size(), static_cast<int>(kCasesPerRun));
}

}  // namespace
}  // namespace colltest::testing
