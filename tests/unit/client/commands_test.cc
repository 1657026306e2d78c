// The CLI end to end against an in-process fake colltestd on a loopback port: metadata, streaming,
// error mapping and exit codes, without the real server.
#include "client/commands/commands.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "client/app.h"
#include "client/commands/command_support.h"
#include "client/commands/hints.h"
#include "client/commands/rpc.h"
#include "colltest/v1/colltest.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/unit/client/sample_compare.h"
#include "tests/unit/client/sample_health.h"
#include "tests/unit/client/sample_run.h"

namespace colltest::client {
namespace {

using ::testing::ContainsRegex;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;
using ::testing::StartsWith;

// The outcome of a `tune` sweep by its --world: 2 is all OK.
constexpr uint32_t kTuneWrong = 3;      // lamport WRONG at the last m
constexpr uint32_t kTuneHang = 4;       // two_kernel HANG at the last m
constexpr uint32_t kTuneNoRow = 5;      // every case UNSUPPORTED
constexpr uint32_t kTuneCancelled = 6;  // the run was cancelled
constexpr uint32_t kTuneError = 7;      // one_stage ERROR at the last m
constexpr uint32_t kTuneNoSummary = 8;  // the stream ends without its summary
constexpr uint32_t kTuneRefused = 9;    // the Sweep call fails (too many ranks)

constexpr char kPlacedApart[] =
    "run r-42 shared GPUs (4 ranks per GPU) and baseline apart (run r-apart) ran on separate "
    "GPUs: their timings measure different things; compare runs placed alike";

class FakeColltestd final : public v1::CollectiveTest::Service {
 public:
  grpc::Status ListDevices(grpc::ServerContext* context, const v1::ListDevicesRequest*,
                           v1::ListDevicesResponse* response) override {
    Record(context);
    response->set_backend("cpu");
    response->set_version("test");
    response->set_max_world_size(4);
    response->add_variants(v1::VARIANT_LAMPORT);
    v1::Device* d = response->add_devices();
    d->set_index(0);
    d->set_name("cpu0");
    d->set_backend("cpu");
    v1::GroupHealth* g = response->add_groups();
    g->add_devices(0);
    g->set_state(v1::GROUP_STATE_DEGRADED);
    g->set_message("canary failed");
    return grpc::Status::OK;
  }

  // The fault's kind selects the verdict, so each test can ask for the one it checks. The CLI
  // sends only kinds of the fault grammar, so those stand for the verdicts.
  grpc::Status Health(grpc::ServerContext* context, const v1::HealthRequest* request,
                      v1::HealthResponse* response) override {
    Record(context);
    {
      std::lock_guard<std::mutex> lock(mu_);
      last_health_ = *request;
      health_deadline_ = context->deadline() - std::chrono::system_clock::now();
    }
    static const std::map<std::string, std::string> kVerdictOfKind = {
        {"hang_end_sync", "hang"}, {"crash_rank", "error"},        {"skip_rearm", "unavailable"},
        {"stall_rank", "expire"},  {"skip_canonicalize", "wrong"}, {"poison_staging", "busy"}};
    std::string kind = request->fault().substr(0, request->fault().find(':'));
    if (auto verdict = kVerdictOfKind.find(kind); verdict != kVerdictOfKind.end()) {
      kind = verdict->second;
    }
    if (kind == "sleep") {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    } else if (kind == "expire") {
      return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "Deadline Exceeded");
    } else if (kind == "unavailable") {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "worker pool shutting down");
    }
    if (kind == "busy") {
      *response = testing::SampleHealthBusy();
    } else if (kind == "hang") {
      *response = testing::SampleHealthHang();
    } else if (kind == "error") {
      *response = testing::SampleHealthError();
    } else {
      *response = testing::SampleHealthOk();
      if (kind == "wrong") {
        response->set_status(v1::CASE_STATUS_WRONG);
        response->mutable_pairs(2)->set_status(v1::CASE_STATUS_WRONG);
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status Run(grpc::ServerContext* context, const v1::RunRequest* request,
                   v1::RunResult* response) override {
    Record(context, &request->spec(), "Run");
    if (request->spec().world_size() > 4) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "spec.world_size: 9 ranks requested, 4 devices available");
    }
    if (grpc::Status refused = Refusal(request->spec()); !refused.ok()) return refused;
    *response = RunFor(request->spec());
    return grpc::Status::OK;
  }

  grpc::Status Sweep(grpc::ServerContext* context, const v1::RunRequest* request,
                     grpc::ServerWriter<v1::SweepEvent>* writer) override {
    Record(context, &request->spec(), "Sweep");
    // `tune` sweeps use the world size to pick their outcome (kTune* above).
    const uint32_t world = request->spec().world_size();
    if (request->spec().label() == "tune" ? world == kTuneRefused : world > 4) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "spec.world_size: 9 ranks requested, 4 devices available");
    }
    if (grpc::Status refused = Refusal(request->spec()); !refused.ok()) return refused;
    const v1::RunResult run = RunFor(request->spec());
    v1::SweepEvent event;
    event.set_run_id(run.run_id());
    event.mutable_progress()->set_state(v1::RUN_STATE_RUNNING);
    event.mutable_progress()->set_total(run.cases_size());
    writer->Write(event);
    for (const v1::CaseResult& c : run.cases()) {
      *event.mutable_result() = c;
      writer->Write(event);
    }
    if (request->spec().label() == "no-summary" ||
        (request->spec().label() == "tune" && request->spec().world_size() == kTuneNoSummary)) {
      return grpc::Status::OK;
    }
    *event.mutable_summary() = run;
    writer->Write(event);
    return grpc::Status::OK;
  }

  grpc::Status GetRun(grpc::ServerContext* context, const v1::GetRunRequest* request,
                      v1::RunResult* response) override {
    Record(context);
    if (request->run_id() == "r-int") {
      *response = testing::SampleRun();
      response->set_run_id("r-int");
      response->set_state(v1::RUN_STATE_INTERRUPTED);
      response->set_message("colltestd stopped during the run");
      return grpc::Status::OK;
    }
    if (request->run_id() != "r-42") {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "run " + request->run_id() + " not found");
    }
    *response = testing::SampleRun();
    return grpc::Status::OK;
  }

  // The label "paged" serves r-1 .. r-4 over three pages (tokens p2, p3); any other, r-42.
  grpc::Status ListRuns(grpc::ServerContext* context, const v1::ListRunsRequest* request,
                        v1::ListRunsResponse* response) override {
    Record(context);
    std::lock_guard<std::mutex> lock(mu_);
    last_limit_ = request->limit();
    list_requests_.push_back(*request);
    if (request->label() != "paged") {
      v1::RunSummary* r = response->add_runs();
      r->set_run_id("r-42");
      r->set_state(v1::RUN_STATE_DONE);
      return grpc::Status::OK;
    }
    const std::map<std::string, std::pair<std::vector<std::string>, std::string>> pages = {
        {"", {{"r-1", "r-2"}, "p2"}}, {"p2", {{"r-3"}, "p3"}}, {"p3", {{"r-4"}, ""}}};
    auto page = pages.find(request->page_token());
    if (page == pages.end()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "page_token: not issued here");
    }
    for (const std::string& id : page->second.first) response->add_runs()->set_run_id(id);
    response->set_next_page_token(page->second.second);
    return grpc::Status::OK;
  }

  grpc::Status SetBaseline(grpc::ServerContext* context, const v1::SetBaselineRequest* request,
                           v1::Baseline* response) override {
    Record(context);
    std::lock_guard<std::mutex> lock(mu_);
    last_set_baseline_ = *request;
    response->set_name(request->name().empty() ? "default" : request->name());
    response->set_machine_key("k1");
    response->set_hostname("gpu-7");
    response->set_run_id(request->run_id());
    response->set_set_unix_ms(1700000000000);
    response->set_set_by("ci-bot");
    return grpc::Status::OK;
  }

  grpc::Status ListBaselines(grpc::ServerContext* context, const v1::ListBaselinesRequest* request,
                             v1::ListBaselinesResponse* response) override {
    Record(context);
    std::lock_guard<std::mutex> lock(mu_);
    last_machine_key_ = request->machine_key();
    v1::Baseline* b = response->add_baselines();
    b->set_name("default");
    b->set_machine_key("k1");
    b->set_hostname("gpu-7");
    b->set_run_id("r-base");
    return grpc::Status::OK;
  }

  // The reference selects the verdict: run r-base or baseline "slow" regressed, baseline "missing"
  // does not exist, run r-gone neither; anything else is clean.
  grpc::Status Compare(grpc::ServerContext* context, const v1::CompareRequest* request,
                       v1::CompareResponse* response) override {
    Record(context);
    std::lock_guard<std::mutex> lock(mu_);
    compare_requests_.push_back(*request);
    if (request->baseline() == "missing") {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          "no baseline 'missing' for gpu-7 (machine key k1)");
    }
    if (request->run_a() == "r-gone") {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "run r-gone not found");
    }
    // colltestd refuses runs placed differently (server/runs/compare.h CheckPlacedAlike).
    if (request->run_a() == "r-apart" || request->baseline() == "apart") {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, kPlacedApart);
    }
    const bool slow = request->run_a() == "r-base" || request->baseline() == "slow";
    *response = slow ? testing::SampleComparison() : testing::SampleCleanComparison();
    response->set_run_b(request->run_b());
    return grpc::Status::OK;
  }

  grpc::Status Cancel(grpc::ServerContext* context, const v1::CancelRequest* request,
                      v1::CancelResponse* response) override {
    Record(context);
    response->set_state(v1::RUN_STATE_QUEUED);
    return grpc::Status::OK;
  }

  std::string authorization() {
    std::lock_guard<std::mutex> lock(mu_);
    return authorization_;
  }
  // The calls that carried a spec, in order: "Run" or "Sweep".
  std::vector<std::string> spec_rpcs() {
    std::lock_guard<std::mutex> lock(mu_);
    return spec_rpcs_;
  }
  v1::SweepSpec last_spec() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_spec_;
  }
  uint32_t last_limit() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_limit_;
  }
  std::vector<v1::ListRunsRequest> list_requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return list_requests_;
  }
  v1::SetBaselineRequest last_set_baseline() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_set_baseline_;
  }
  std::string last_machine_key() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_machine_key_;
  }
  std::vector<v1::CompareRequest> compare_requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return compare_requests_;
  }
  v1::HealthRequest last_health() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_health_;
  }
  // What was left of the client's deadline when the call arrived.
  std::chrono::system_clock::duration health_deadline() {
    std::lock_guard<std::mutex> lock(mu_);
    return health_deadline_;
  }

 private:
  // The label "busy" stands for devices that other processes use: refused unless forced. The label
  // "precondition" is another FAILED_PRECONDITION, which is not BUSY.
  static grpc::Status Refusal(const v1::SweepSpec& spec) {
    if (spec.label() == "busy" && !spec.force()) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          "BUSY: devices 0,1 in use by pid 4242 (python3); --force runs anyway");
    }
    if (spec.label() == "precondition") {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "the server is draining");
    }
    return grpc::Status::OK;
  }

  // The label selects the run's outcome, so each test can ask for the verdict it checks.
  static v1::RunResult RunFor(const v1::SweepSpec& spec) {
    if (spec.label() == "tune") return TuneRunFor(spec);
    v1::RunResult run = testing::SampleRun();
    if (spec.label() == "all-ok") {
      run.clear_cases();
      *run.add_cases() = testing::MakeCase(v1::VARIANT_LAMPORT, v1::CASE_STATUS_OK);
      *run.add_cases() = testing::MakeCase(v1::VARIANT_NCCL, v1::CASE_STATUS_UNSUPPORTED);
      // As colltestd words a finished run's message.
      run.set_message("2 cases: 1 OK, 1 UNSUPPORTED");
    } else if (spec.label() == "mixed") {
      // colltestd counts in order of severity, the table in its own order.
      run.set_message("4 cases: 1 OK, 1 UNSUPPORTED, 1 WRONG, 1 HANG");
    } else if (spec.label() == "cancelled") {
      run.set_state(v1::RUN_STATE_CANCELLED);
      run.set_message("cancelled by user");
      run.mutable_cases()->DeleteSubrange(1, run.cases_size() - 1);
    }
    return run;
  }

  // Every case of the spec, timed so that lamport_tb is the fastest at m = 1 and two_kernel at
  // m = 64; the world size selects the failures (kTune* above).
  static v1::RunResult TuneRunFor(const v1::SweepSpec& spec) {
    const uint32_t world = spec.world_size();
    v1::RunResult run;
    run.set_run_id("r-tune");
    run.set_backend("cpu");
    run.set_state(world == kTuneCancelled ? v1::RUN_STATE_CANCELLED : v1::RUN_STATE_DONE);
    if (world == kTuneCancelled) run.set_message("cancelled by user");
    const uint32_t last_m = spec.m(spec.m_size() - 1);
    for (uint32_t m : spec.m()) {
      for (int v : spec.variants()) {
        const v1::Variant variant = static_cast<v1::Variant>(v);
        v1::CaseStatus status = v1::CASE_STATUS_OK;
        if (world == kTuneNoRow) status = v1::CASE_STATUS_UNSUPPORTED;
        if (world == kTuneWrong && variant == v1::VARIANT_LAMPORT && m == last_m) {
          status = v1::CASE_STATUS_WRONG;
        }
        if (world == kTuneHang && variant == v1::VARIANT_TWO_KERNEL && m == last_m) {
          status = v1::CASE_STATUS_HANG;
        }
        if (world == kTuneError && variant == v1::VARIANT_ONE_STAGE && m == last_m) {
          status = v1::CASE_STATUS_ERROR;
        }
        v1::CaseResult c = testing::MakeCase(variant, status);
        c.set_index(run.cases_size());
        c.set_mode(spec.modes(0));
        c.set_world_size(world);
        c.set_m(m);
        c.set_n(spec.n(0));
        c.set_dtype(spec.dtype());
        const double base[] = {0, 10, 12, 8, 7};
        const double per_m[] = {0, 0.1, 0.04, 0.2, 0.3};
        if (status == v1::CASE_STATUS_OK || status == v1::CASE_STATUS_WRONG) {
          c.mutable_timing()->set_median_us(base[v] + per_m[v] * m);
        }
        *run.add_cases() = c;
      }
    }
    return run;
  }

  void Record(grpc::ServerContext* context, const v1::SweepSpec* spec = nullptr,
              const std::string& rpc = "") {
    std::lock_guard<std::mutex> lock(mu_);
    if (!rpc.empty()) spec_rpcs_.push_back(rpc);
    auto it = context->client_metadata().find("authorization");
    authorization_ = it == context->client_metadata().end()
                         ? std::string()
                         : std::string(it->second.data(), it->second.size());
    if (spec != nullptr) last_spec_ = *spec;
  }

  std::mutex mu_;
  std::vector<std::string> spec_rpcs_;
  std::string authorization_;
  v1::SweepSpec last_spec_;
  uint32_t last_limit_ = 0;
  std::vector<v1::ListRunsRequest> list_requests_;
  v1::SetBaselineRequest last_set_baseline_;
  std::string last_machine_key_;
  std::vector<v1::CompareRequest> compare_requests_;
  v1::HealthRequest last_health_;
  std::chrono::system_clock::duration health_deadline_{};
};

class CommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port, 0);
    address_ = "127.0.0.1:" + std::to_string(port);
  }

  void TearDown() override { server_->Shutdown(); }

  int Cli(std::vector<std::string> args) {
    args.insert(args.begin(), {"colltest", "--server", address_});
    std::ostringstream out, err;
    int code = RunCli(args, out, err);
    out_ = out.str();
    err_ = err.str();
    return code;
  }

  FakeColltestd service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  std::string out_;
  std::string err_;
};

TEST_F(CommandsTest, DevicesJson) {
  ASSERT_EQ(Cli({"devices", "--format", "json"}), 0) << err_;
  nlohmann::json json = nlohmann::json::parse(out_);
  EXPECT_EQ(json["backend"], "cpu");
  EXPECT_EQ(json["devices"][0]["name"], "cpu0");
  EXPECT_EQ(json["variants"][0], "lamport");
}

TEST_F(CommandsTest, DevicesShowsGroupStates) {
  ASSERT_EQ(Cli({"devices"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("\ngroup  state     recoveries  last recovery ms  message\n"
                              "0      DEGRADED           0                 -  canary failed\n"));
  ASSERT_EQ(Cli({"devices", "--format", "json"}), 0) << err_;
  nlohmann::json json = nlohmann::json::parse(out_);
  EXPECT_EQ(json["groups"][0]["state"], "DEGRADED");
  EXPECT_EQ(json["groups"][0]["devices"], nlohmann::json::array({0}));
}

TEST_F(CommandsTest, SendsBearerTokenFromFile) {
  const std::string path = ::testing::TempDir() + "/colltest_token";
  std::ofstream(path) << "  s3cret-token\n";
  ASSERT_EQ(Cli({"--token-file", path, "devices"}), 0) << err_;
  EXPECT_EQ(service_.authorization(), "Bearer s3cret-token");
}

TEST_F(CommandsTest, NoTokenNoAuthorizationHeader) {
  ASSERT_EQ(Cli({"devices"}), 0) << err_;
  EXPECT_EQ(service_.authorization(), "");
}

TEST_F(CommandsTest, RunSendsTheSpecAndMapsHangToTwo) {
  EXPECT_EQ(Cli({"run", "--world", "2", "--m", "1,64", "--variants", "all", "--timeout", "2s",
                 "--format", "json"}),
            2)
      << err_;
  const v1::SweepSpec spec = service_.last_spec();
  EXPECT_EQ(spec.world_size(), 2u);
  EXPECT_EQ(spec.m_size(), 2);
  EXPECT_EQ(spec.variants_size(), 1);  // all: the variants ListDevices offers, lamport here
  EXPECT_EQ(spec.timeout_ms(), 2000u);
  nlohmann::json json = nlohmann::json::parse(out_);
  EXPECT_EQ(json["run_id"], "r-42");
  EXPECT_EQ(json["cases"].size(), 4u);
}

TEST_F(CommandsTest, AllOkIsZero) {
  EXPECT_EQ(Cli({"run", "--label", "all-ok"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("2 cases: 1 OK, 1 UNSUPPORTED"));
}

TEST_F(CommandsTest, CancelledRunIsThreeAndStillReported) {
  EXPECT_EQ(Cli({"run", "--label", "cancelled", "--format", "csv"}), 3);
  EXPECT_THAT(out_, StartsWith("run_id,"));
  EXPECT_THAT(err_, HasSubstr("colltest: run r-42 CANCELLED: cancelled by user"));
}

TEST_F(CommandsTest, ServerInvalidArgumentIsPrintedVerbatim) {
  EXPECT_EQ(Cli({"run", "--world", "9"}), 3);
  EXPECT_EQ(err_,
            "colltest: INVALID_ARGUMENT: spec.world_size: 9 ranks requested, 4 devices "
            "available\n");
  EXPECT_EQ(out_, "");
}

TEST_F(CommandsTest, SweepStreamsProgressToStderrAndResultToStdout) {
  EXPECT_EQ(Cli({"sweep", "--format", "junit", "--progress"}), 2);
  EXPECT_THAT(err_, HasSubstr("run r-42\n"));
  EXPECT_THAT(err_, ContainsRegex("\\[1/4\\] lamport eager m=64 n=7168: OK 12.3 us \\(elapsed "
                                  "[0-9.]+s, ETA [0-9]+s\\)\n"));
  EXPECT_THAT(err_, HasSubstr("[4/4] nccl eager m=1 n=7168: UNSUPPORTED (elapsed "));
  EXPECT_THAT(out_, HasSubstr("<testsuite name=\"colltest\" tests=\"4\""));
}

// A stderr that is not a terminal (here a string) gets no progress unless --progress asks.
TEST_F(CommandsTest, SweepWithoutProgressLeavesStderrEmpty) {
  EXPECT_EQ(Cli({"sweep", "--label", "all-ok"}), 0) << err_;
  EXPECT_EQ(err_, "");
  EXPECT_THAT(out_, HasSubstr("2 cases: 1 OK, 1 UNSUPPORTED"));
}

TEST_F(CommandsTest, QuietWinsOverProgress) {
  for (const char* command : {"run", "sweep", "health"}) {
    std::vector<std::string> args = {command, "--progress", "--quiet"};
    if (std::string(command) != "health") args.insert(args.end(), {"--label", "all-ok"});
    EXPECT_EQ(Cli(args), 0) << command << ": " << err_;
    EXPECT_EQ(err_, "") << command;
  }
}

// `run` streams like `sweep` and shows one status line per case (a log's view of the line a
// terminal redraws); its report is the run's as before.
TEST_F(CommandsTest, RunStreamsAndShowsAStatusLinePerCase) {
  EXPECT_EQ(Cli({"run", "--format", "json", "--progress"}), 2) << err_;
  EXPECT_THAT(service_.spec_rpcs(), ElementsAre("Sweep"));
  EXPECT_THAT(err_, StartsWith("run r-42\nrunning\n"));
  EXPECT_THAT(err_, ContainsRegex("\n\\[1/4\\] 25% elapsed [0-9.]+s ETA [0-9]+s\n"));
  EXPECT_THAT(err_, ContainsRegex("\n\\[4/4\\] 100% elapsed [0-9.]+s ETA 0s\n$"));
  EXPECT_EQ(nlohmann::json::parse(out_)["cases"].size(), 4u);
}

TEST_F(CommandsTest, RunWithoutProgressShowsNothing) {
  EXPECT_EQ(Cli({"run", "--label", "all-ok"}), 0) << err_;
  EXPECT_EQ(err_, "");
}

// colltestd's message of a finished run is its status counts, which the table's last line says
// (in another order): the table says it once. JSON keeps the message as a field.
TEST_F(CommandsTest, TableSaysTheStatusCountsOnce) {
  for (const char* command : {"run", "sweep"}) {
    EXPECT_EQ(Cli({command, "--label", "all-ok"}), 0) << err_;
    const size_t first = out_.find("2 cases: 1 OK, 1 UNSUPPORTED");
    ASSERT_NE(first, std::string::npos) << out_;
    EXPECT_EQ(out_.find("2 cases: 1 OK, 1 UNSUPPORTED", first + 1), std::string::npos) << out_;
    EXPECT_EQ(Cli({command, "--label", "mixed"}), 2) << err_;
    EXPECT_THAT(out_, HasSubstr("4 cases: 1 OK, 1 WRONG, 1 HANG, 1 UNSUPPORTED"));
    EXPECT_THAT(out_, Not(HasSubstr("4 cases: 1 OK, 1 UNSUPPORTED, 1 WRONG, 1 HANG")));
  }
  EXPECT_EQ(Cli({"run", "--label", "mixed", "--format", "json"}), 2) << err_;
  EXPECT_EQ(nlohmann::json::parse(out_)["message"],
            "4 cases: 1 OK, 1 UNSUPPORTED, 1 WRONG, 1 HANG");
}

// Another message (a cancelled run's) is not a restatement of the counts and stays.
TEST_F(CommandsTest, TableKeepsAnyOtherRunMessage) {
  EXPECT_EQ(Cli({"run", "--label", "cancelled"}), 3);
  EXPECT_THAT(out_, HasSubstr("cancelled by user"));
}

TEST_F(CommandsTest, HealthWithProgressEndsWithItsElapsedLine) {
  EXPECT_EQ(Cli({"health", "--progress"}), 0) << err_;
  EXPECT_THAT(err_,
              MatchesRegex("health: level quick, [0-9]+\\.[0-9] s elapsed, deadline 200 s\n"));
  EXPECT_THAT(out_, StartsWith("OK: healthy"));
}

TEST_F(CommandsTest, SweepWithoutSummaryIsThree) {
  EXPECT_EQ(Cli({"sweep", "--label", "no-summary"}), 3);
  EXPECT_THAT(err_, HasSubstr("colltest: DATA_LOSS: the sweep stream ended without a summary"));
  EXPECT_THAT(out_, HasSubstr("4 cases"));
}

TEST_F(CommandsTest, OutWritesTheFileInsteadOfStdout) {
  const std::string path = ::testing::TempDir() + "/colltest_out.json";
  EXPECT_EQ(Cli({"get", "r-42", "--format", "json", "--out", path}), 2);
  EXPECT_EQ(out_, "");
  std::ifstream in(path);
  nlohmann::json json = nlohmann::json::parse(in);
  EXPECT_EQ(json["cases"][2]["ranks"][1]["phase"], "start_sync");
}

TEST_F(CommandsTest, UnwritableOutIsThree) {
  EXPECT_EQ(Cli({"get", "r-42", "--out", "/nonexistent/dir/out.txt"}), 3);
  EXPECT_THAT(err_, HasSubstr("--out: cannot write '/nonexistent/dir/out.txt'"));
}

TEST_F(CommandsTest, GetUnknownRunIsThreeWithCodeName) {
  EXPECT_EQ(Cli({"get", "r-404"}), 3);
  EXPECT_EQ(err_, "colltest: NOT_FOUND: run r-404 not found\n");
}

TEST_F(CommandsTest, RunsPassesLimit) {
  EXPECT_EQ(Cli({"runs", "--limit", "7"}), 0) << err_;
  EXPECT_EQ(service_.last_limit(), 7u);
  EXPECT_THAT(out_, HasSubstr("r-42"));
}

TEST_F(CommandsTest, CancelPrintsPreviousState) {
  EXPECT_EQ(Cli({"cancel", "r-42"}), 0) << err_;
  EXPECT_EQ(out_, "run r-42 cancelled (was QUEUED)\n");
}

TEST_F(CommandsTest, RunAndSweepSendStopOnFailure) {
  EXPECT_EQ(Cli({"run", "--label", "all-ok", "--stop-on-failure"}), 0) << err_;
  EXPECT_TRUE(service_.last_spec().stop_on_failure());
  EXPECT_EQ(Cli({"sweep", "--label", "all-ok", "--stop-on-failure"}), 0) << err_;
  EXPECT_TRUE(service_.last_spec().stop_on_failure());
  EXPECT_EQ(Cli({"run", "--label", "all-ok"}), 0) << err_;
  EXPECT_FALSE(service_.last_spec().stop_on_failure());
}

TEST_F(CommandsTest, BusyRefusalOfRunAndSweepIsFiveWithTheMessage) {
  for (const char* command : {"run", "sweep"}) {
    EXPECT_EQ(Cli({command, "--label", "busy", "--format", "json"}), 5) << command;
    EXPECT_EQ(err_,
              "colltest: FAILED_PRECONDITION: BUSY: devices 0,1 in use by pid 4242 (python3); "
              "--force runs anyway\n")
        << command;
    EXPECT_EQ(out_, "") << command;
    EXPECT_FALSE(service_.last_spec().force()) << command;
  }
}

TEST_F(CommandsTest, ForceIsSentAndRunsAnyway) {
  EXPECT_EQ(Cli({"run", "--label", "busy", "--force"}), 2) << err_;
  EXPECT_TRUE(service_.last_spec().force());
  EXPECT_EQ(Cli({"sweep", "--label", "busy", "--force"}), 2) << err_;
  EXPECT_TRUE(service_.last_spec().force());
}

// Only a refusal that says BUSY: other preconditions are errors of the request or the server.
TEST_F(CommandsTest, OtherFailedPreconditionIsThree) {
  EXPECT_EQ(Cli({"run", "--label", "precondition"}), 3);
  EXPECT_EQ(err_, "colltest: FAILED_PRECONDITION: the server is draining\n");
}

TEST(IsBusyRefusalTest, FailedPreconditionStartingWithBusyOnly) {
  EXPECT_TRUE(IsBusyRefusal(absl::FailedPreconditionError("BUSY: devices 0 in use by pid 7")));
  EXPECT_FALSE(IsBusyRefusal(absl::FailedPreconditionError("not BUSY: the server is draining")));
  EXPECT_FALSE(IsBusyRefusal(absl::UnavailableError("BUSY: devices 0 in use by pid 7")));
  EXPECT_FALSE(IsBusyRefusal(absl::OkStatus()));
}

// gRPC sends a deadline as a timeout rounded up to its wire units, so the server may see a little
// more than the client set; the margin still tells 120, 200 and 400 s apart.
void ExpectRemaining(std::chrono::system_clock::duration remaining, std::chrono::seconds set) {
  EXPECT_GT(remaining, set - std::chrono::seconds(10));
  EXPECT_LT(remaining, set + std::chrono::seconds(3));
}

TEST_F(CommandsTest, HealthOkWithASlowPairIsZero) {
  EXPECT_EQ(Cli({"health", "--pairs"}), 0) << err_;
  EXPECT_EQ(err_, "");
  EXPECT_THAT(out_, StartsWith("OK: healthy: 3 ranks, 3 pairs"));
  EXPECT_THAT(out_, HasSubstr("WARN"));
  EXPECT_THAT(out_, HasSubstr("\nhealth: OK in 4.3 s (2 cases)\n"));
  const v1::HealthRequest request = service_.last_health();
  EXPECT_TRUE(request.pairs());
  EXPECT_EQ(request.timeout_ms(), 0u);
  EXPECT_EQ(request.warn_ratio(), 0.0);
  // The default per-case timeout is 5 s: 40 x 5 s.
  ExpectRemaining(service_.health_deadline(), std::chrono::seconds(200));
}

TEST_F(CommandsTest, HealthSendsItsFlagsAndScalesTheDeadlineWithTheTimeout) {
  EXPECT_EQ(Cli({"health", "--timeout", "10s", "--devices", "0,1", "--warn-ratio", "2", "--fault",
                 "skip_canonicalize", "--format", "csv"}),
            1)
      << err_;
  const v1::HealthRequest request = service_.last_health();
  EXPECT_FALSE(request.pairs());
  EXPECT_EQ(request.timeout_ms(), 10000u);
  EXPECT_EQ(request.devices_size(), 2);
  EXPECT_EQ(request.fault(), "skip_canonicalize");
  EXPECT_DOUBLE_EQ(request.warn_ratio(), 2.0);
  ExpectRemaining(service_.health_deadline(), std::chrono::seconds(400));
  EXPECT_THAT(out_, StartsWith("kind,devices,status,"));
  EXPECT_THAT(out_, HasSubstr("\npair,1-2,WRONG,"));
}

TEST_F(CommandsTest, HealthSendsLevelForceAndMaxVerdictAge) {
  EXPECT_EQ(Cli({"health", "--level", "long", "--force", "--max-verdict-age", "60s"}), 0) << err_;
  const v1::HealthRequest request = service_.last_health();
  EXPECT_EQ(request.level(), v1::HEALTH_LEVEL_LONG);
  EXPECT_TRUE(request.force());
  EXPECT_EQ(request.max_verdict_age_ms(), 60000u);
}

// The earlier verdict it carries is a HANG: still 5, with the reason on stderr and the report out.
TEST_F(CommandsTest, HealthBusyIsFiveWithTheReasonOnStderr) {
  EXPECT_EQ(Cli({"health", "--fault", "poison_staging", "--format", "json"}), 5);
  EXPECT_EQ(err_,
            "colltest: BUSY: nothing was checked: devices 0,1 in use by pid 4242 (python3)\n");
  nlohmann::json json = nlohmann::json::parse(out_);
  EXPECT_EQ(json["busy"], true);
  EXPECT_EQ(json["machine"]["hostname"], "node-7");
}

TEST_F(CommandsTest, HealthHangIsTwoAndNamesTheSuspect) {
  EXPECT_EQ(Cli({"health", "--fault", "hang_end_sync:1", "--format", "json"}), 2) << err_;
  nlohmann::json json = nlohmann::json::parse(out_);
  EXPECT_EQ(json["status"], "HANG");
  EXPECT_EQ(json["ranks"][1]["suspect_peer"], 0);
  EXPECT_EQ(json["ranks"][1]["phase"], "lamport phase B");
}

TEST_F(CommandsTest, HealthErrorIsThreeAndStillReported) {
  const std::string path = ::testing::TempDir() + "/colltest_health.xml";
  EXPECT_EQ(Cli({"health", "--fault", "crash_rank:0", "--format", "junit", "--out", path}), 3);
  EXPECT_EQ(out_, "");
  std::ifstream in(path);
  std::stringstream xml;
  xml << in.rdbuf();
  EXPECT_THAT(xml.str(), HasSubstr("<error type=\"ERROR\""));
}

TEST_F(CommandsTest, HealthRpcFailureIsThree) {
  EXPECT_EQ(Cli({"health", "--fault", "skip_rearm"}), 3);
  EXPECT_EQ(err_, "colltest: UNAVAILABLE: worker pool shutting down\n");
  EXPECT_EQ(out_, "");
}

TEST_F(CommandsTest, HealthPastItsDeadlineIsThreeSayingWhichDeadline) {
  EXPECT_EQ(Cli({"health", "--fault", "stall_rank:0", "--timeout", "1s"}), 3);
  EXPECT_THAT(err_, StartsWith("colltest: DEADLINE_EXCEEDED: no health verdict within 2m "
                               "(the level's floor, or a multiple of --timeout"));
  EXPECT_EQ(out_, "");
}

TEST_F(CommandsTest, HealthCallCarriesTheDeadline) {
  Client client(v1::CollectiveTest::NewStub(
                    grpc::CreateChannel(address_, grpc::InsecureChannelCredentials())),
                "");
  v1::HealthRequest request;
  request.set_fault("sleep");
  absl::StatusOr<v1::HealthResponse> response = client.Health(request, absl::Milliseconds(100));
  EXPECT_EQ(response.status().code(), absl::StatusCode::kDeadlineExceeded) << response.status();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool Exists(const std::string& path) { return std::ifstream(path).good(); }

TEST_F(CommandsTest, TuneSweepsOnceAndWritesTheTable) {
  const std::string path = ::testing::TempDir() + "/colltest_tune.json";
  std::remove(path.c_str());
  const int64_t before = absl::ToUnixMillis(absl::Now());
  ASSERT_EQ(Cli({"tune", "--world", "2", "--m", "64,1", "--out", path, "--progress"}), 0) << err_;
  const int64_t after = absl::ToUnixMillis(absl::Now());

  const v1::SweepSpec spec = service_.last_spec();
  EXPECT_EQ(spec.world_size(), 2u);
  EXPECT_THAT(spec.m(), ElementsAre(1, 64));
  EXPECT_THAT(spec.n(), ElementsAre(7168));
  EXPECT_THAT(spec.modes(), ElementsAre(v1::MODE_GRAPH));
  EXPECT_EQ(spec.variants_size(), 4);
  EXPECT_EQ(spec.pattern(), v1::PATTERN_NORMAL);
  EXPECT_EQ(spec.tolerance(), v1::TOLERANCE_STRICT);
  EXPECT_EQ(spec.warmup(), 20u);
  EXPECT_EQ(spec.iters(), 200u);
  EXPECT_EQ(spec.timeout_ms(), 5000u);

  // The sweep's progress, as `sweep` prints it.
  EXPECT_THAT(err_, HasSubstr("run r-tune\n"));
  EXPECT_THAT(err_, HasSubstr("[1/8] one_stage graph m=1 n=7168: OK 10.1 us (elapsed "));
  EXPECT_THAT(err_, HasSubstr("[8/8] lamport_tb graph m=64 n=7168: OK 26.2 us (elapsed "));
  EXPECT_THAT(err_, Not(HasSubstr("warning")));

  EXPECT_THAT(out_, StartsWith("tune W=2 n=7168 bf16 graph  backend cpu  device cpu0  run r-tune"));
  EXPECT_THAT(out_, HasSubstr("\n 1   14336       10.1        12.0      8.2         7.3  lamport_tb"
                              "     1.12x\n"
                              "64  917504       16.4        14.6     20.8        26.2  two_kernel"
                              "     1.13x\n"));
  EXPECT_THAT(out_, HasSubstr("\ncrossovers: lamport_tb up to m=1 (14336 B), two_kernel from "
                              "m=64\n"));

  const nlohmann::json json = nlohmann::json::parse(ReadFile(path));
  EXPECT_EQ(json["kind"], "colltest-tune-table");
  EXPECT_EQ(json["backend"], "cpu");
  EXPECT_EQ(json["device"], "cpu0");
  EXPECT_EQ(json["world"], 2);
  EXPECT_EQ(json["run_id"], "r-tune");
  EXPECT_GE(json["created_unix_ms"].get<int64_t>(), before);
  EXPECT_LE(json["created_unix_ms"].get<int64_t>(), after);
  ASSERT_EQ(json["rows"].size(), 2u);
  EXPECT_EQ(json["rows"][0]["best"], "lamport_tb");
  EXPECT_EQ(json["rows"][1]["best"], "two_kernel");
}

TEST_F(CommandsTest, TuneFormatJsonPrintsWhatItWrites) {
  const std::string path = ::testing::TempDir() + "/colltest_tune_json.json";
  ASSERT_EQ(Cli({"tune", "--world", "2", "--m", "1", "--format", "json", "--out", path}), 0)
      << err_;
  EXPECT_EQ(out_, ReadFile(path));
  EXPECT_EQ(nlohmann::json::parse(out_)["rows"][0]["m"], 1);
  // Without --out the JSON only goes to stdout.
  ASSERT_EQ(Cli({"tune", "--world", "2", "--dtype", "fp32", "--format", "json"}), 0) << err_;
  EXPECT_EQ(nlohmann::json::parse(out_)["dtype"], "fp32");
  EXPECT_EQ(nlohmann::json::parse(out_)["rows"].size(), 9u);
}

TEST_F(CommandsTest, TuneWrongIsOneAndTheTableLeavesTheWrongCaseOut) {
  const std::string path = ::testing::TempDir() + "/colltest_tune_wrong.json";
  EXPECT_EQ(Cli({"tune", "--world", "3", "--m", "1,64", "--out", path}), 1) << err_;
  const nlohmann::json json = nlohmann::json::parse(ReadFile(path));
  ASSERT_EQ(json["rows"].size(), 2u);
  EXPECT_TRUE(json["rows"][0]["us"].contains("lamport"));
  EXPECT_FALSE(json["rows"][1]["us"].contains("lamport"));
  EXPECT_EQ(json["rows"][1]["us"].size(), 3u);
}

TEST_F(CommandsTest, TuneHangIsTwo) {
  EXPECT_EQ(Cli({"tune", "--world", "4", "--m", "1,64"}), 2) << err_;
  EXPECT_THAT(out_, HasSubstr("crossovers: "));
}

TEST_F(CommandsTest, TuneErrorCaseIsThreeWithTheTable) {
  EXPECT_EQ(Cli({"tune", "--world", "7", "--m", "1,64"}), 3) << err_;
  EXPECT_THAT(out_, HasSubstr("crossovers: "));
}

TEST_F(CommandsTest, TuneWithoutAnyRowIsThreeAndWritesNothing) {
  const std::string path = ::testing::TempDir() + "/colltest_tune_none.json";
  std::remove(path.c_str());
  EXPECT_EQ(Cli({"tune", "--world", "5", "--m", "1,64", "--out", path}), 3);
  EXPECT_EQ(out_, "");
  EXPECT_FALSE(Exists(path));
  EXPECT_THAT(err_, HasSubstr("colltest: warning: no tune row for m=1: no variant OK (one_stage "
                              "UNSUPPORTED, two_kernel UNSUPPORTED, lamport UNSUPPORTED, "
                              "lamport_tb UNSUPPORTED, lamport_two_shot UNSUPPORTED)\n"));
  EXPECT_THAT(err_, HasSubstr("colltest: warning: no tune row for m=64: "));
  EXPECT_THAT(err_, HasSubstr("colltest: FAILED_PRECONDITION: run r-tune: no m had an OK variant: "
                              "no tune table written\n"));
}

TEST_F(CommandsTest, TuneCancelledIsThreeAndWritesNothing) {
  const std::string path = ::testing::TempDir() + "/colltest_tune_cancelled.json";
  std::remove(path.c_str());
  EXPECT_EQ(Cli({"tune", "--world", "6", "--m", "1", "--out", path}), 3);
  EXPECT_EQ(out_, "");
  EXPECT_FALSE(Exists(path));
  EXPECT_THAT(err_, HasSubstr("colltest: run r-tune CANCELLED: cancelled by user: no tune table "
                              "written\n"));
}

TEST_F(CommandsTest, TuneWithoutSummaryIsThreeAndWritesNothing) {
  const std::string path = ::testing::TempDir() + "/colltest_tune_partial.json";
  std::remove(path.c_str());
  EXPECT_EQ(Cli({"tune", "--world", "8", "--m", "1", "--out", path}), 3);
  EXPECT_EQ(out_, "");
  EXPECT_FALSE(Exists(path));
  EXPECT_THAT(err_, HasSubstr("colltest: DATA_LOSS: the sweep stream ended without a summary"));
}

TEST_F(CommandsTest, TuneRefusedByTheServerIsThreeAndWritesNothing) {
  const std::string path = ::testing::TempDir() + "/colltest_tune_refused.json";
  std::remove(path.c_str());
  EXPECT_EQ(Cli({"tune", "--world", "9", "--out", path}), 3);
  EXPECT_EQ(err_,
            "colltest: INVALID_ARGUMENT: spec.world_size: 9 ranks requested, 4 devices "
            "available\n");
  EXPECT_EQ(out_, "");
  EXPECT_FALSE(Exists(path));
}

TEST_F(CommandsTest, TuneWithAnEpilogueRecordsItAndAFolderGetsTheDefaultName) {
  const std::string dir = ::testing::TempDir() + "/colltest_tune_folder";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ASSERT_EQ(Cli({"tune", "--world", "2", "--m", "1", "--epilogue", "nvfp4", "--keep-normed",
                 "--nvfp4-global-scale", "64", "--out", dir}),
            0)
      << err_;
  const v1::SweepSpec spec = service_.last_spec();
  EXPECT_THAT(spec.epilogues(), ElementsAre(v1::EPILOGUE_NVFP4));
  EXPECT_TRUE(spec.keep_normed());
  EXPECT_EQ(spec.nvfp4_global_scale(), 64.0f);
  EXPECT_THAT(out_, StartsWith("tune W=2 n=7168 bf16 graph nvfp4 keep_normed  backend cpu"));
  const std::string path = dir + "/tune_cpu_cpu0_w2_bf16_graph_n7168_nvfp4_keep_normed.json";
  EXPECT_THAT(err_, HasSubstr("colltest: tune table written to " + path + "\n"));
  const nlohmann::json json = nlohmann::json::parse(ReadFile(path));
  EXPECT_EQ(json["epilogue"], "nvfp4");
  EXPECT_EQ(json["keep_normed"], true);
  // Epilogue none keeps the name of the tables measured before epilogues were recorded.
  ASSERT_EQ(Cli({"tune", "--world", "2", "--m", "1", "--out", dir}), 0) << err_;
  EXPECT_EQ(
      nlohmann::json::parse(ReadFile(dir + "/tune_cpu_cpu0_w2_bf16_graph_n7168.json"))["epilogue"],
      "none");
  std::filesystem::remove_all(dir);
}

TEST_F(CommandsTest, TuneUnwritableOutIsThree) {
  EXPECT_EQ(Cli({"tune", "--world", "2", "--m", "1", "--out", "/nonexistent/dir/t.json"}), 3);
  EXPECT_THAT(err_, HasSubstr("--out: cannot write '/nonexistent/dir/t.json'"));
}

TEST_F(CommandsTest, GetInterruptedRunIsThreeAndNamesTheState) {
  EXPECT_EQ(Cli({"get", "r-int"}), 3);
  EXPECT_THAT(out_, HasSubstr("state INTERRUPTED"));
  EXPECT_EQ(err_, "colltest: run r-int INTERRUPTED: colltestd stopped during the run\n");
}

TEST_F(CommandsTest, HistorySendsItsFilters) {
  ASSERT_EQ(Cli({"history", "--label", "nightly", "--state", "interrupted", "--since", "2026-11-01",
                 "--variant", "lamport", "--limit", "7", "--page-token", "t-1"}),
            0)
      << err_;
  ASSERT_EQ(service_.list_requests().size(), 1u);
  const v1::ListRunsRequest request = service_.list_requests()[0];
  EXPECT_EQ(request.label(), "nightly");
  EXPECT_EQ(request.state(), v1::RUN_STATE_INTERRUPTED);
  EXPECT_EQ(request.since_unix_ms(), 1793491200000);
  EXPECT_EQ(request.variant(), v1::VARIANT_LAMPORT);
  EXPECT_EQ(request.limit(), 7u);
  EXPECT_EQ(request.page_token(), "t-1");
  EXPECT_THAT(out_, HasSubstr("r-42"));
}

TEST_F(CommandsTest, HistoryShowsOnePageAndTheTokenToContinue) {
  ASSERT_EQ(Cli({"history", "--label", "paged"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("\nr-2 "));
  EXPECT_THAT(out_, Not(HasSubstr("r-3")));
  EXPECT_THAT(out_, HasSubstr("\nmore runs: --page-token p2\n"));
  EXPECT_EQ(service_.list_requests().size(), 1u);
}

TEST_F(CommandsTest, HistoryAllFollowsEveryPage) {
  ASSERT_EQ(Cli({"history", "--label", "paged", "--all", "--format", "json"}), 0) << err_;
  const nlohmann::json json = nlohmann::json::parse(out_);
  ASSERT_EQ(json["runs"].size(), 4u);
  EXPECT_EQ(json["runs"][0]["run_id"], "r-1");
  EXPECT_EQ(json["runs"][3]["run_id"], "r-4");
  EXPECT_EQ(json["next_page_token"], "");
  const std::vector<v1::ListRunsRequest> requests = service_.list_requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[1].page_token(), "p2");
  EXPECT_EQ(requests[2].page_token(), "p3");
  EXPECT_EQ(requests[2].label(), "paged");
}

TEST_F(CommandsTest, HistoryCsvNamesTheTokenOnStderr) {
  ASSERT_EQ(Cli({"history", "--label", "paged", "--format", "csv"}), 0) << err_;
  EXPECT_THAT(out_, StartsWith("run_id,created,"));
  EXPECT_EQ(err_, "colltest: more runs: --page-token p2\n");
}

TEST_F(CommandsTest, RunsIsStillAccepted) {
  ASSERT_EQ(Cli({"runs"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("r-42"));
}

TEST_F(CommandsTest, BaselineSetPrintsWhatWasSet) {
  ASSERT_EQ(Cli({"baseline", "set", "r-42", "--name", "nightly"}), 0) << err_;
  EXPECT_EQ(out_, "baseline nightly of gpu-7 (key k1) = r-42\n");
  EXPECT_EQ(service_.last_set_baseline().run_id(), "r-42");
  EXPECT_EQ(service_.last_set_baseline().name(), "nightly");
  ASSERT_EQ(Cli({"baseline", "set", "r-42"}), 0) << err_;
  EXPECT_EQ(service_.last_set_baseline().name(), "");
  EXPECT_EQ(out_, "baseline default of gpu-7 (key k1) = r-42\n");
}

TEST_F(CommandsTest, BaselineListSendsTheMachineKey) {
  ASSERT_EQ(Cli({"baseline", "list", "--machine-key", "k1", "--format", "json"}), 0) << err_;
  EXPECT_EQ(service_.last_machine_key(), "k1");
  EXPECT_EQ(nlohmann::json::parse(out_)["baselines"][0]["run_id"], "r-base");
}

TEST_F(CommandsTest, CompareRegressionIsFourWithTheReport) {
  EXPECT_EQ(Cli({"compare", "r-base", "r-42"}), 4) << err_;
  EXPECT_EQ(err_, "");
  EXPECT_THAT(out_, StartsWith("compare r-base -> r-42"));
  EXPECT_THAT(out_, HasSubstr("REGRESSION"));
  EXPECT_THAT(out_, ::testing::EndsWith("\n3 of 6 cases regressed (worst: lamport_tb eager w=4 m=1 "
                                        "n=7168 bf16 status OK -> WRONG)\n"));
  const v1::CompareRequest request = service_.compare_requests().back();
  EXPECT_EQ(request.run_a(), "r-base");
  EXPECT_EQ(request.run_b(), "r-42");
  EXPECT_EQ(request.baseline(), "");
}

TEST_F(CommandsTest, CompareCleanIsZero) {
  EXPECT_EQ(Cli({"compare", "r-1", "r-42", "--format", "json"}), 0) << err_;
  EXPECT_EQ(nlohmann::json::parse(out_)["regressed"], false);
}

TEST_F(CommandsTest, CompareWithABaselineSendsItAndTheThreshold) {
  EXPECT_EQ(
      Cli({"compare", "r-42", "--baseline", "slow", "--threshold", "2%", "--format", "junit"}), 4)
      << err_;
  const v1::CompareRequest request = service_.compare_requests().back();
  EXPECT_EQ(request.run_a(), "");
  EXPECT_EQ(request.run_b(), "r-42");
  EXPECT_EQ(request.baseline(), "slow");
  EXPECT_DOUBLE_EQ(request.threshold(), 0.02);
  EXPECT_THAT(out_, HasSubstr("<testsuite name=\"comparison\" tests=\"6\" failures=\"3\""));
}

TEST_F(CommandsTest, CompareRpcErrorIsThree) {
  EXPECT_EQ(Cli({"compare", "r-gone", "r-42"}), 3);
  EXPECT_EQ(err_, "colltest: NOT_FOUND: run r-gone not found\n");
  EXPECT_EQ(out_, "");
}

// Runs placed differently are no regression: the refusal is an error (3), never 4.
TEST_F(CommandsTest, ComparingRunsPlacedDifferentlyIsThreeNotFour) {
  EXPECT_EQ(Cli({"compare", "r-apart", "r-42"}), 3);
  EXPECT_EQ(err_, std::string("colltest: FAILED_PRECONDITION: ") + kPlacedApart + "\n");
  EXPECT_EQ(out_, "");
  EXPECT_EQ(Cli({"run", "--label", "all-ok", "--compare-baseline", "apart"}), 3);
  EXPECT_THAT(out_, HasSubstr("2 cases: 1 OK, 1 UNSUPPORTED"));
  EXPECT_THAT(err_, HasSubstr(kPlacedApart));
}

TEST_F(CommandsTest, RunCompareBaselineRegressionIsFour) {
  EXPECT_EQ(Cli({"run", "--label", "all-ok", "--compare-baseline", "slow"}), 4) << err_;
  const v1::CompareRequest request = service_.compare_requests().back();
  EXPECT_EQ(request.run_b(), "r-42");
  EXPECT_EQ(request.baseline(), "slow");
  EXPECT_EQ(request.run_a(), "");
  // The run's table, then the comparison's.
  const size_t run = out_.find("run r-42  backend cpu");
  const size_t comparison = out_.find("compare r-base -> r-42 (baseline default)");
  ASSERT_NE(run, std::string::npos);
  ASSERT_NE(comparison, std::string::npos);
  EXPECT_LT(run, comparison);
  EXPECT_EQ(err_, "");
}

TEST_F(CommandsTest, RunCompareBaselineWithoutANameAsksForTheDefault) {
  EXPECT_EQ(Cli({"run", "--label", "all-ok", "--compare-baseline", "--compare-threshold", "0.1"}),
            0)
      << err_;
  const v1::CompareRequest request = service_.compare_requests().back();
  EXPECT_EQ(request.baseline(), "");
  EXPECT_DOUBLE_EQ(request.threshold(), 0.1);
  EXPECT_THAT(out_, HasSubstr("\nno regression in 2 cases\n"));
}

TEST_F(CommandsTest, TheRunsOwnFailureOutranksTheRegression) {
  // The sample run has a HANG (2) and a WRONG (1) case.
  EXPECT_EQ(Cli({"run", "--compare-baseline", "slow"}), 2) << err_;
  EXPECT_THAT(out_, HasSubstr("3 of 6 cases regressed"));
  EXPECT_EQ(Cli({"sweep", "--compare-baseline", "slow", "--format", "json"}), 2) << err_;
}

TEST_F(CommandsTest, SweepCompareBaselineJsonEmbedsTheComparison) {
  EXPECT_EQ(Cli({"sweep", "--label", "all-ok", "--compare-baseline", "slow", "--format", "json"}),
            4)
      << err_;
  const nlohmann::json json = nlohmann::json::parse(out_);
  EXPECT_EQ(json["run_id"], "r-42");
  EXPECT_EQ(json["cases"].size(), 2u);
  EXPECT_EQ(json["comparison"]["run_b"], "r-42");
  EXPECT_EQ(json["comparison"]["regressed"], true);
  // Outside a table the verdict is also one line on stderr, for CI logs.
  EXPECT_THAT(err_, HasSubstr("colltest: comparison: 3 of 6 cases regressed"));
}

TEST_F(CommandsTest, RunCompareBaselineJunitHasASecondSuite) {
  EXPECT_EQ(Cli({"run", "--label", "all-ok", "--compare-baseline", "slow", "--format", "junit"}), 4)
      << err_;
  EXPECT_THAT(out_, HasSubstr("<testsuites>\n<testsuite name=\"colltest\" tests=\"2\""));
  EXPECT_THAT(out_, HasSubstr("<testsuite name=\"comparison\" tests=\"6\" failures=\"3\""));
}

TEST_F(CommandsTest, MissingBaselineIsThreeAfterTheRunsReport) {
  EXPECT_EQ(Cli({"run", "--label", "all-ok", "--compare-baseline", "missing"}), 3);
  EXPECT_THAT(out_, HasSubstr("2 cases: 1 OK, 1 UNSUPPORTED"));
  EXPECT_EQ(err_, "colltest: NOT_FOUND: no baseline 'missing' for gpu-7 (machine key k1)\n");
}

TEST_F(CommandsTest, IncompleteRunIsNotCompared) {
  EXPECT_EQ(Cli({"run", "--label", "cancelled", "--compare-baseline", "slow"}), 3);
  EXPECT_TRUE(service_.compare_requests().empty());
  EXPECT_THAT(err_, HasSubstr("colltest: run r-42 CANCELLED: cancelled by user\n"));
  EXPECT_THAT(err_, HasSubstr("colltest: no comparison with the baseline: the run did not "
                              "complete\n"));
}

TEST(HealthDeadlineTest, FortyTimesTheCaseTimeoutAndAtLeastTwoMinutes) {
  EXPECT_EQ(HealthDeadline(0), absl::Seconds(200));  // the server's default 5 s
  EXPECT_EQ(HealthDeadline(5000), absl::Seconds(200));
  EXPECT_EQ(HealthDeadline(1000), absl::Seconds(120));
  EXPECT_EQ(HealthDeadline(1), absl::Seconds(120));
  EXPECT_EQ(HealthDeadline(10000), absl::Seconds(400));
  EXPECT_EQ(HealthDeadline(4294967295u), 40 * absl::Milliseconds(4294967295u));
  // The deeper levels run more cases, so their floors and multiples are larger.
  EXPECT_EQ(HealthDeadline(5000, v1::HEALTH_LEVEL_STANDARD), absl::Minutes(10));
  EXPECT_EQ(HealthDeadline(10000, v1::HEALTH_LEVEL_STANDARD), absl::Minutes(20));
  EXPECT_EQ(HealthDeadline(5000, v1::HEALTH_LEVEL_LONG), absl::Minutes(33) + absl::Seconds(20));
  EXPECT_EQ(HealthDeadline(1000, v1::HEALTH_LEVEL_LONG), absl::Minutes(30));
}

TEST(UnreachableTest, RpcFailureIsThreeWithGrpcCodeNameAddressAndHint) {
  // Port 1 on loopback has no listener: the connection is refused at once.
  std::ostringstream out, err;
  int code = RunCli({"colltest", "--server", "127.0.0.1:1", "devices"}, out, err);
  EXPECT_EQ(code, 3);
  EXPECT_THAT(err.str(), StartsWith("colltest: UNAVAILABLE: server 127.0.0.1:1: "));
  EXPECT_THAT(err.str(), HasSubstr("\nhint: colltestd may not be running at 127.0.0.1:1: start it "
                                   "(colltestd --listen 127.0.0.1:1)"));
}

// The JUnit report CI asked for exists even when there is no run to report.
TEST(UnreachableTest, JunitOutStillGetsTheFailure) {
  const std::string path = ::testing::TempDir() + "/colltest_unreachable.xml";
  for (const char* command : {"run", "sweep", "health", "get"}) {
    std::remove(path.c_str());
    std::vector<std::string> args = {"colltest", "--server", "127.0.0.1:1", command};
    if (std::string(command) == "get") args.push_back("r-1");
    // Variants given: the command's own call is the first to fail, not the listing of the
    // server's variants that precedes a run without them.
    if (std::string(command) == "run" || std::string(command) == "sweep") {
      args.insert(args.end(), {"--variants", "lamport"});
    }
    args.insert(args.end(), {"--format", "junit", "--out", path});
    std::ostringstream out, err;
    EXPECT_EQ(RunCli(args, out, err), 3) << command;
    EXPECT_EQ(out.str(), "") << command;
    std::ifstream in(path);
    std::stringstream xml;
    xml << in.rdbuf();
    EXPECT_THAT(xml.str(), HasSubstr("<error")) << command;
    EXPECT_THAT(xml.str(), HasSubstr("127.0.0.1:1")) << command;
  }
}

// Without --out (or with another format) nothing but the error goes anywhere.
TEST(UnreachableTest, NoReportWithoutJunitOut) {
  const std::string path = ::testing::TempDir() + "/colltest_unreachable.json";
  std::remove(path.c_str());
  std::ostringstream out, err;
  EXPECT_EQ(
      RunCli({"colltest", "--server", "127.0.0.1:1", "run", "--format", "json", "--out", path}, out,
             err),
      3);
  EXPECT_FALSE(std::ifstream(path).good());
  EXPECT_EQ(out.str(), "");
}

// A socket that completes TCP handshakes (the kernel does, up to the backlog) but is never
// accepted: gRPC waits for the server's HTTP/2 settings, so the call runs out its deadline
// without ever being connected.
class SilentListener {
 public:
  SilentListener() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd_, 8) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return;
    }
    address_ = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  }
  ~SilentListener() { close(fd_); }
  const std::string& address() const { return address_; }

 private:
  int fd_ = -1;
  std::string address_;
};

TEST(NotConnectedTest, DeadlineBeforeAnyConnectionIsMarked) {
  SilentListener silent;
  ASSERT_FALSE(silent.address().empty());
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateChannel(silent.address(), grpc::InsecureChannelCredentials());
  Client client(v1::CollectiveTest::NewStub(channel), "", channel);
  absl::StatusOr<v1::HealthResponse> response =
      client.Health(v1::HealthRequest(), absl::Milliseconds(300));
  ASSERT_EQ(response.status().code(), absl::StatusCode::kDeadlineExceeded) << response.status();
  EXPECT_TRUE(IsNotConnected(response.status()));
}

TEST_F(CommandsTest, DeadlineOfAConnectedCallIsNotMarked) {
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateChannel(address_, grpc::InsecureChannelCredentials());
  Client client(v1::CollectiveTest::NewStub(channel), "", channel);
  v1::HealthRequest request;
  request.set_fault("sleep");
  absl::StatusOr<v1::HealthResponse> response = client.Health(request, absl::Milliseconds(100));
  ASSERT_EQ(response.status().code(), absl::StatusCode::kDeadlineExceeded) << response.status();
  EXPECT_FALSE(IsNotConnected(response.status()));
}

TEST(UnreachableTest, TuneIsThree) {
  std::ostringstream out, err;
  EXPECT_EQ(RunCli({"colltest", "--server", "127.0.0.1:1", "tune", "--world", "2"}, out, err), 3);
  EXPECT_THAT(err.str(), StartsWith("colltest: UNAVAILABLE: "));
  EXPECT_EQ(out.str(), "");
}

}  // namespace
}  // namespace colltest::client

namespace colltest::client {
namespace {

// --color: verdicts painted in tables and progress; JSON, CSV and JUnit never.
TEST_F(CommandsTest, ColorAlwaysPaintsTablesAndProgressOnly) {
  EXPECT_EQ(Cli({"--color", "always", "sweep", "--label", "mixed", "--progress"}), 2) << err_;
  EXPECT_THAT(out_, HasSubstr("\033[32mOK\033[0m"));
  EXPECT_THAT(out_, HasSubstr("\033[1;31mHANG\033[0m"));
  EXPECT_THAT(out_, HasSubstr("\033[31mWRONG\033[0m"));
  EXPECT_THAT(err_, HasSubstr(": \033[1;31mHANG\033[0m"));
  for (const char* format : {"json", "csv", "junit"}) {
    EXPECT_EQ(Cli({"--color", "always", "run", "--label", "mixed", "--format", format}), 2);
    EXPECT_THAT(out_, Not(HasSubstr("\033["))) << format;
  }
}

TEST_F(CommandsTest, ColorNeverAndAutoOffATerminalPaintNothing) {
  for (const char* color : {"never", "auto"}) {
    EXPECT_EQ(Cli({"--color", color, "sweep", "--label", "mixed", "--progress"}), 2) << err_;
    EXPECT_THAT(out_, Not(HasSubstr("\033["))) << color;
    EXPECT_THAT(err_, Not(HasSubstr("\033["))) << color;
  }
  EXPECT_EQ(Cli({"sweep", "--label", "mixed"}), 2);
  EXPECT_THAT(out_, Not(HasSubstr("\033[")));
  EXPECT_EQ(Cli({"--color", "sometimes", "devices"}), 3);
  EXPECT_THAT(err_, HasSubstr("--color: 'sometimes' is not one of always, auto or never"));
}

}  // namespace
}  // namespace colltest::client
