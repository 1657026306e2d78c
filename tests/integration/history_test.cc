// The run history on disk with a real colltestd: runs survive a restart, a SIGKILL during a sweep
// loses no finished case (the run comes back INTERRUPTED), a database colltestd cannot use stops
// it with a message naming the file, one state directory serves one colltestd, and ListRuns'
// filters and pages, baselines and Compare work end to end.
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/daemon.h"

namespace colltest::testing {
namespace {

namespace v1 = ::colltest::v1;
using ::testing::HasSubstr;

// A state directory that outlives the daemons of one test.
class StateDir {
 public:
  StateDir() {
    std::string tmpl = ::testing::TempDir() + "/colltest-history-XXXXXX";
    path_ = mkdtemp(tmpl.data()) != nullptr ? tmpl : "";
  }
  ~StateDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string database() const { return path_ + "/history.sqlite3"; }

 private:
  std::string path_;
};

std::unique_ptr<Daemon> StartOn(const StateDir& dir, std::vector<std::string> extra = {}) {
  extra.insert(extra.begin(), {"--state-dir", dir.path()});
  return Daemon::Start(2, extra);
}

v1::RunResult RunOrDie(Daemon& d, const v1::RunRequest& request) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
  v1::RunResult run;
  const grpc::Status status = d.Stub()->Run(&context, request, &run);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return run;
}

grpc::Status GetRun(Daemon& d, const std::string& id, v1::RunResult* run) {
  grpc::ClientContext context;
  v1::GetRunRequest get;
  get.set_run_id(id);
  return d.Stub()->GetRun(&context, get, run);
}

v1::ListRunsResponse ListRuns(Daemon& d, const v1::ListRunsRequest& request,
                              grpc::Status* status = nullptr) {
  grpc::ClientContext context;
  v1::ListRunsResponse response;
  const grpc::Status s = d.Stub()->ListRuns(&context, request, &response);
  if (status != nullptr) *status = s;
  return response;
}

v1::RunRequest Labelled(v1::RunRequest request, const std::string& label) {
  request.mutable_spec()->set_label(label);
  return request;
}

TEST(HistoryTest, RunsSurviveARestartWithTheirCasesAndMachine) {
  StateDir dir;
  std::string id;
  {
    auto first = StartOn(dir);
    ASSERT_NE(first, nullptr);
    v1::RunRequest request = Labelled(LamportRun(2, 8, 256), "before-restart");
    request.mutable_spec()->add_m(16);
    const v1::RunResult run = RunOrDie(*first, request);
    ASSERT_EQ(run.state(), v1::RUN_STATE_DONE);
    id = run.run_id();
    EXPECT_FALSE(run.machine().key().empty());
    EXPECT_FALSE(run.machine().hostname().empty());
    EXPECT_EQ(first->Stop(), 0);
  }
  auto second = StartOn(dir);
  ASSERT_NE(second, nullptr);
  v1::ListRunsRequest by_label;
  by_label.set_label("before-restart");
  const v1::ListRunsResponse listed = ListRuns(*second, by_label);
  ASSERT_EQ(listed.runs_size(), 1);
  EXPECT_EQ(listed.runs(0).run_id(), id);
  EXPECT_EQ(listed.runs(0).state(), v1::RUN_STATE_DONE);
  EXPECT_EQ(listed.runs(0).ok(), 2u);
  v1::RunResult stored;
  ASSERT_TRUE(GetRun(*second, id, &stored).ok());
  ASSERT_EQ(stored.cases_size(), 2);
  EXPECT_EQ(stored.cases(1).m(), 16u);
  EXPECT_EQ(stored.cases(0).ranks_size(), 2);
  EXPECT_GT(stored.cases(0).ranks(1).timing().median_us(), 0);
  EXPECT_EQ(stored.spec().label(), "before-restart");
  EXPECT_FALSE(stored.machine().hostname().empty());
  EXPECT_EQ(stored.machine().devices_size(), 2);
}

// The acceptance test of crash safety: colltestd is SIGKILLed while a sweep streams; every case
// the client had received is in the database after the restart, and the run is INTERRUPTED.
TEST(HistoryTest, SigkillDuringASweepLosesNoFinishedCase) {
  StateDir dir;
  auto daemon = StartOn(dir);
  ASSERT_NE(daemon, nullptr);
  v1::RunRequest request = Labelled(LamportRun(2, 1, 1024), "killed");
  for (uint32_t m : {2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}) request.mutable_spec()->add_m(m);
  request.mutable_spec()->add_variants(v1::VARIANT_ONE_STAGE);
  request.mutable_spec()->set_iters(200);
  auto stub = daemon->Stub();
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
  auto reader = stub->Sweep(&context, request);
  std::string id;
  std::vector<uint32_t> seen;
  v1::SweepEvent event;
  while (seen.size() < 4 && reader->Read(&event)) {
    id = event.run_id();
    if (event.has_result()) seen.push_back(event.result().index());
  }
  ASSERT_EQ(seen.size(), 4u) << "the sweep ended before 4 cases";
  daemon->Kill();
  context.TryCancel();
  (void)reader->Finish();

  auto restarted = StartOn(dir);
  ASSERT_NE(restarted, nullptr);
  v1::RunResult run;
  ASSERT_TRUE(GetRun(*restarted, id, &run).ok());
  EXPECT_EQ(run.state(), v1::RUN_STATE_INTERRUPTED);
  EXPECT_THAT(run.message(), HasSubstr("the cases it finished are kept"));
  ASSERT_GE(run.cases_size(), static_cast<int>(seen.size()));
  EXPECT_LT(run.cases_size(), 22) << "the run was not interrupted";
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(run.cases(i).index(), seen[i]);
  RecordProperty("cases_seen_by_client", static_cast<int>(seen.size()));
  RecordProperty("cases_in_database", run.cases_size());
  v1::ListRunsRequest interrupted;
  interrupted.set_state(v1::RUN_STATE_INTERRUPTED);
  const v1::ListRunsResponse listed = ListRuns(*restarted, interrupted);
  ASSERT_EQ(listed.runs_size(), 1);
  EXPECT_EQ(listed.runs(0).run_id(), id);
}

TEST(HistoryTest, ACorruptDatabaseStopsColltestdNamingTheFileAndIsLeftAlone) {
  StateDir dir;
  const std::string garbage(8192, '\x5a');
  std::ofstream(dir.database(), std::ios::binary) << garbage;
  const auto [code, output] =
      RunCommand({BinDir() + "/colltestd", "--backend", "cpu", "--cpu-ranks", "2", "--listen",
                  "127.0.0.1:0", "--state-dir", dir.path()});
  EXPECT_NE(code, 0);
  EXPECT_THAT(output, HasSubstr(dir.database()));
  std::ifstream in(dir.database(), std::ios::binary);
  const std::string after((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(after, garbage) << "the database was changed";
}

TEST(HistoryTest, OneColltestdPerStateDirectory) {
  StateDir dir;
  auto first = StartOn(dir);
  ASSERT_NE(first, nullptr);
  const auto [code, output] =
      RunCommand({BinDir() + "/colltestd", "--backend", "cpu", "--cpu-ranks", "2", "--listen",
                  "127.0.0.1:0", "--state-dir", dir.path()});
  EXPECT_NE(code, 0);
  EXPECT_THAT(output,
              HasSubstr("in use by another colltestd (pid " + std::to_string(first->pid()) + ")"));
}

TEST(HistoryTest, ListRunsFiltersAndPages) {
  StateDir dir;
  auto daemon = StartOn(dir);
  ASSERT_NE(daemon, nullptr);
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i)
    ids.push_back(RunOrDie(*daemon, Labelled(LamportRun(2, 8, 64), "page")).run_id());
  v1::RunRequest one_stage = Labelled(LamportRun(2, 8, 64), "other");
  one_stage.mutable_spec()->set_variants(0, v1::VARIANT_ONE_STAGE);
  const std::string other = RunOrDie(*daemon, one_stage).run_id();

  v1::ListRunsRequest by_variant;
  by_variant.set_variant(v1::VARIANT_ONE_STAGE);
  const v1::ListRunsResponse variant = ListRuns(*daemon, by_variant);
  ASSERT_EQ(variant.runs_size(), 1);
  EXPECT_EQ(variant.runs(0).run_id(), other);

  v1::ListRunsRequest page;
  page.set_label("page");
  page.set_limit(2);
  const v1::ListRunsResponse first = ListRuns(*daemon, page);
  ASSERT_EQ(first.runs_size(), 2);
  EXPECT_EQ(first.runs(0).run_id(), ids[2]);  // newest first
  ASSERT_FALSE(first.next_page_token().empty());
  page.set_page_token(first.next_page_token());
  const v1::ListRunsResponse second = ListRuns(*daemon, page);
  ASSERT_EQ(second.runs_size(), 1);
  EXPECT_EQ(second.runs(0).run_id(), ids[0]);
  EXPECT_TRUE(second.next_page_token().empty());

  grpc::Status status;
  page.set_page_token("not-ours");
  ListRuns(*daemon, page, &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("page_token"));
  v1::ListRunsRequest too_many;
  too_many.set_limit(5000);
  ListRuns(*daemon, too_many, &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("limit: 5000"));
}

TEST(HistoryTest, BaselineThenCompareAgainstIt) {
  StateDir dir;
  auto daemon = StartOn(dir);
  ASSERT_NE(daemon, nullptr);
  auto stub = daemon->Stub();
  v1::RunRequest request = LamportRun(2, 8, 256);
  request.mutable_spec()->add_m(64);
  const std::string a = RunOrDie(*daemon, request).run_id();
  const std::string b = RunOrDie(*daemon, request).run_id();

  v1::CompareRequest compare;
  compare.set_run_b(b);
  {
    grpc::ClientContext context;
    v1::CompareResponse response;
    const grpc::Status status = stub->Compare(&context, compare, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND) << "no baseline yet";
    EXPECT_THAT(status.error_message(), HasSubstr("default"));
  }
  {
    grpc::ClientContext context;
    v1::SetBaselineRequest set;
    set.set_run_id(a);
    v1::Baseline baseline;
    ASSERT_TRUE(stub->SetBaseline(&context, set, &baseline).ok());
    EXPECT_EQ(baseline.name(), "default");
    EXPECT_EQ(baseline.run_id(), a);
    EXPECT_FALSE(baseline.machine_key().empty());
  }
  grpc::ClientContext context;
  v1::CompareResponse response;
  ASSERT_TRUE(stub->Compare(&context, compare, &response).ok());
  EXPECT_EQ(response.run_a(), a);
  EXPECT_EQ(response.run_b(), b);
  EXPECT_EQ(response.baseline(), "default");
  ASSERT_EQ(response.cases_size(), 2);
  for (const v1::CaseComparison& c : response.cases()) {
    EXPECT_NE(c.verdict(), v1::COMPARE_VERDICT_ONLY_A);
    EXPECT_NE(c.verdict(), v1::COMPARE_VERDICT_ONLY_B);
    EXPECT_GT(c.ratio(), 0);
  }
}

TEST(HistoryTest, OnlyADoneRunCanBeABaseline) {
  StateDir dir;
  auto daemon = StartOn(dir);
  ASSERT_NE(daemon, nullptr);
  auto stub = daemon->Stub();
  v1::RunRequest request = LamportRun(2, 8, 64);
  request.mutable_spec()->set_label("bad name test");
  const std::string id = RunOrDie(*daemon, request).run_id();
  grpc::ClientContext context;
  v1::SetBaselineRequest set;
  set.set_run_id(id);
  set.set_name("../../etc/passwd");
  v1::Baseline baseline;
  const grpc::Status status = stub->SetBaseline(&context, set, &baseline);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("name:"));
}

}  // namespace
}  // namespace colltest::testing
