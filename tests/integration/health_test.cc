// The Health RPC, recovery and leaks through a real colltestd (cpu backend): a healthy group and
// its pairs pass; an injected fault is named and isolated by the pairs; a health check queued
// behind sweeps loses none of them; 100 fault-and-recover cycles leave no process, file
// descriptor or shared-memory segment behind, and the metrics count what happened.
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/daemon.h"

namespace colltest::testing {
namespace {

namespace v1 = ::colltest::v1;
using ::testing::HasSubstr;

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

grpc::Status CallHealth(const Daemon& daemon, const v1::HealthRequest& request,
                        v1::HealthResponse* response) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
  return daemon.Stub()->Health(&ctx, request, response);
}

v1::RunResult RunCase(v1::CollectiveTest::Stub& stub, uint32_t world, const std::string& fault,
                      v1::Variant variant, uint32_t timeout_ms, grpc::Status* status) {
  v1::RunRequest req;
  v1::SweepSpec* s = req.mutable_spec();
  s->set_world_size(world);
  s->add_m(4);
  s->add_n(256);
  s->add_variants(variant);
  s->set_pattern(v1::PATTERN_INTEGERS);
  s->set_warmup(1);
  s->set_iters(2);
  s->set_timeout_ms(timeout_ms);
  s->set_fault(fault);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  v1::RunResult result;
  *status = stub.Run(&ctx, req, &result);
  return result;
}

// GET /metrics over loopback: the status line's code and the text; "" on any failure.
std::string Scrape(const std::string& address) {
  const HttpReply reply = Http(address, "GET", "/metrics");
  return reply.status == 200 ? "200 OK\n" + reply.body : "";
}

// The value of the series whose line starts with `series` ("name{labels}" or "name"), or -1.
double Metric(const std::string& text, const std::string& series) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, series + " ")) continue;
    double value = -1;
    if (absl::SimpleAtod(line.substr(series.size() + 1), &value)) return value;
  }
  return -1;
}

// colltest_hangs_total of `rank` on GPU `gpu`, whatever that GPU's other labels (UUID, Hostname,
// ...) say; -1 when the scrape has no such series.
double Hangs(const std::string& text, int rank, int gpu) {
  const std::string on_gpu = absl::StrCat(",gpu=\"", gpu, "\",");
  const std::string of_rank = absl::StrCat(",rank=\"", rank, "\"} ");
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, "colltest_hangs_total{") || !absl::StrContains(line, on_gpu)) {
      continue;
    }
    const size_t end = line.find(of_rank);
    double value = -1;
    if (end != absl::string_view::npos &&
        absl::SimpleAtod(line.substr(end + of_rank.size()), &value)) {
      return value;
    }
  }
  return -1;
}

TEST(Health, HealthyGroupAndEveryPairAreOk) {
  auto daemon = Daemon::Start(4);
  ASSERT_NE(daemon, nullptr);
  v1::HealthRequest request;
  request.set_pairs(true);
  v1::HealthResponse health;
  const auto t0 = std::chrono::steady_clock::now();
  const grpc::Status status = CallHealth(*daemon, request, &health);
  const double seconds = SecondsSince(t0);
  ASSERT_TRUE(status.ok()) << status.error_message();
  std::printf("[ health ] W=4 with pairs: %s, %d cases in %.2f s\n", health.message().c_str(),
              health.cases_size(), seconds);
  EXPECT_EQ(health.status(), v1::CASE_STATUS_OK) << health.message();
  EXPECT_THAT(health.message(), HasSubstr("healthy: 4 ranks, 6 pairs"));
  ASSERT_EQ(health.ranks_size(), 4);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(health.ranks(r).devices(0), static_cast<uint32_t>(r));
    EXPECT_EQ(health.ranks(r).status(), v1::CASE_STATUS_OK);
    EXPECT_GT(health.ranks(r).latency_us(), 0.0);
    EXPECT_GT(health.ranks(r).median_ratio(), 0.0);
  }
  ASSERT_EQ(health.pairs_size(), 6);
  for (const v1::HealthTarget& p : health.pairs()) {
    EXPECT_EQ(p.status(), v1::CASE_STATUS_OK) << p.message();
    EXPECT_EQ(p.cases(), 4u);
  }
  // Group profile: the cpu backend's 5 variants x 2 shapes; each pair: 2 variants x 2 shapes.
  EXPECT_EQ(health.cases_size(), 10 + 6 * 4);
  for (const v1::CaseResult& c : health.cases()) EXPECT_EQ(c.pattern(), v1::PATTERN_NEG_ZERO);
  EXPECT_EQ(health.run_ids_size(), 7);
  EXPECT_FALSE(health.groups().empty());
}

TEST(Health, MissingRankIsNamedAndIsolatedByThePairs) {
  auto daemon = Daemon::Start(4, {"--allow-fault-injection"});
  ASSERT_NE(daemon, nullptr);
  v1::HealthRequest request;
  request.set_pairs(true);
  request.set_timeout_ms(1000);
  request.set_fault("missing_rank:1");
  v1::HealthResponse health;
  const auto t0 = std::chrono::steady_clock::now();
  const grpc::Status status = CallHealth(*daemon, request, &health);
  const double seconds = SecondsSince(t0);
  ASSERT_TRUE(status.ok()) << status.error_message();
  std::printf("[ health ] W=4 missing_rank:1 with pairs: %s (%.2f s)\n", health.message().c_str(),
              seconds);
  EXPECT_EQ(health.status(), v1::CASE_STATUS_HANG);
  EXPECT_THAT(health.message(), HasSubstr("rank 1 never arrived"));
  EXPECT_THAT(health.message(), HasSubstr("pairs failing: 0-1, 1-2, 1-3"));
  EXPECT_THAT(health.message(), HasSubstr("isolated: device 1"));
  ASSERT_EQ(health.ranks_size(), 4);
  for (int r : {0, 2, 3}) {
    EXPECT_EQ(health.ranks(r).status(), v1::CASE_STATUS_HANG);
    EXPECT_EQ(health.ranks(r).suspect_peer(), 1) << health.ranks(r).ShortDebugString();
  }
  for (const v1::HealthTarget& p : health.pairs()) {
    const bool has_one = p.devices(0) == 1 || p.devices(1) == 1;
    EXPECT_EQ(p.status(), has_one ? v1::CASE_STATUS_HANG : v1::CASE_STATUS_OK)
        << p.ShortDebugString();
    if (has_one) EXPECT_EQ(p.suspect_peer(), 1) << p.ShortDebugString();
  }
  // The groups come with their last hang, as ListDevices gives them: the group profile's hang on
  // 0,1,2,3 was the missing device 1.
  bool group_named = false;
  for (const v1::GroupHealth& g : health.groups()) {
    if (g.devices_size() != 4) continue;
    group_named = true;
    EXPECT_EQ(g.last_hang_device(), 1) << g.ShortDebugString();
    EXPECT_GT(g.last_hang_unix_ms(), 0) << g.ShortDebugString();
  }
  EXPECT_TRUE(group_named) << health.ShortDebugString();
  // Stopping at the first hang of each run bounds the check: four hung runs of 1 s each.
  EXPECT_LT(seconds, 4 * (1.0 + 1.0) + 10.0);
}

TEST(Health, NamesTheMissingRankAmongEight) {
  auto daemon = Daemon::Start(8, {"--allow-fault-injection"});
  ASSERT_NE(daemon, nullptr);
  v1::HealthRequest request;
  request.set_timeout_ms(1000);
  request.set_fault("missing_rank:5");
  v1::HealthResponse health;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(CallHealth(*daemon, request, &health).ok());
  const double seconds = SecondsSince(t0);
  EXPECT_EQ(health.status(), v1::CASE_STATUS_HANG);
  EXPECT_THAT(health.message(), HasSubstr("rank 5 never arrived"));
  EXPECT_EQ(health.cases_size(), 1) << "the profile goes on after a hang";
  EXPECT_LT(seconds, 1.0 + 1.0) << health.message();
}

TEST(HealthLevels, StandardPlantsAHangThatMustBeNamedAndStaysHealthy) {
  auto daemon = Daemon::Start(4, {"--allow-fault-injection"});
  ASSERT_NE(daemon, nullptr);
  v1::HealthRequest request;
  request.set_level(v1::HEALTH_LEVEL_STANDARD);
  v1::HealthResponse health;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(CallHealth(*daemon, request, &health).ok());
  const double seconds = SecondsSince(t0);
  std::printf("[ health ] W=4 standard: %s, %d cases in %.2f s\n", health.message().c_str(),
              health.cases_size(), seconds);
  EXPECT_EQ(health.level(), v1::HEALTH_LEVEL_STANDARD);
  EXPECT_EQ(health.status(), v1::CASE_STATUS_OK) << health.message();
  EXPECT_TRUE(health.self_test().ran());
  EXPECT_TRUE(health.self_test().passed()) << health.self_test().message();
  EXPECT_EQ(health.self_test().fault(), "missing_rank:3");
  EXPECT_THAT(health.self_test().message(), HasSubstr("rank 3 never arrived"));
  EXPECT_EQ(health.pairs_size(), 6) << "every pair, unasked";
  // The planted hang is the self test's, not the node's: the group recovered from it.
  for (const v1::CaseResult& c : health.cases()) EXPECT_NE(c.status(), v1::CASE_STATUS_HANG);
  for (const v1::GroupHealth& g : health.groups()) {
    EXPECT_EQ(g.state(), v1::GROUP_STATE_SERVING) << g.ShortDebugString();
  }
  EXPECT_LT(seconds, 30.0);
}

TEST(HealthLevels, StandardWithoutFaultInjectionSaysWhyTheSelfTestDidNotRun) {
  auto daemon = Daemon::Start(2);
  ASSERT_NE(daemon, nullptr);
  v1::HealthRequest request;
  request.set_level(v1::HEALTH_LEVEL_STANDARD);
  v1::HealthResponse health;
  ASSERT_TRUE(CallHealth(*daemon, request, &health).ok());
  EXPECT_EQ(health.status(), v1::CASE_STATUS_OK) << health.message();
  EXPECT_FALSE(health.self_test().ran());
  EXPECT_EQ(health.self_test().message(),
            "fault injection not allowed on this server (--allow-fault-injection)");
  EXPECT_EQ(health.pairs_size(), 1);
}

TEST(Health, BadFieldsAreRefusedNamingThem) {
  auto daemon = Daemon::Start(2);
  ASSERT_NE(daemon, nullptr);
  v1::HealthResponse health;
  v1::HealthRequest ratio;
  ratio.set_warn_ratio(0.5);
  grpc::Status status = CallHealth(*daemon, ratio, &health);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("warn_ratio = 0.5: must be > 1"));
  v1::HealthRequest one;
  one.set_pairs(true);
  one.add_devices(1);
  status = CallHealth(*daemon, one, &health);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("pairs: needs at least 2 devices, got 1"));
  v1::HealthRequest fault;
  fault.set_fault("missing_rank:1");
  status = CallHealth(*daemon, fault, &health);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr("fault injection is disabled"));
  v1::HealthRequest far;
  far.add_devices(0);
  far.add_devices(7);
  status = CallHealth(*daemon, far, &health);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("devices"));
}

// Streams a sweep to the end, recording the states its progress went through.
struct SweepClient {
  std::vector<v1::RunState> states;
  v1::RunResult summary;
  grpc::Status status;

  void Run(const Daemon& daemon, const v1::SweepSpec& spec) {
    v1::RunRequest req;
    *req.mutable_spec() = spec;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(300));
    auto stub = daemon.Stub();
    auto reader = stub->Sweep(&ctx, req);
    v1::SweepEvent event;
    while (reader->Read(&event)) {
      if (event.has_progress()) states.push_back(event.progress().state());
      if (event.has_summary()) summary = event.summary();
    }
    status = reader->Finish();
  }
};

TEST(Health, CheckQueuedBehindSweepsLosesNoneOfThem) {
  auto daemon = Daemon::Start(4);
  ASSERT_NE(daemon, nullptr);
  v1::SweepSpec spec;
  spec.set_world_size(4);
  for (uint32_t m : {1, 16, 64, 128}) spec.add_m(m);
  spec.add_n(2048);
  spec.add_variants(v1::VARIANT_ONE_STAGE);
  spec.add_variants(v1::VARIANT_LAMPORT);
  spec.set_pattern(v1::PATTERN_INTEGERS);
  spec.set_iters(30);
  SweepClient first, second;
  std::thread a([&] { first.Run(*daemon, spec); });
  // The second sweep and then the health check queue behind the first; ListRuns shows the queue.
  auto queued = [&](size_t n) {
    for (int i = 0; i < 2000; ++i) {
      grpc::ClientContext ctx;
      v1::ListRunsResponse runs;
      if (daemon->Stub()->ListRuns(&ctx, v1::ListRunsRequest(), &runs).ok()) {
        size_t count = 0;
        for (const auto& r : runs.runs()) count += r.state() == v1::RUN_STATE_QUEUED;
        if (count >= n) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  };
  std::thread b([&] { second.Run(*daemon, spec); });
  ASSERT_TRUE(queued(1));
  v1::HealthResponse health;
  grpc::Status health_status;
  std::thread h([&] {
    v1::HealthRequest request;
    health_status = CallHealth(*daemon, request, &health);
  });
  const bool health_queued = queued(2);
  a.join();
  b.join();
  h.join();
  EXPECT_TRUE(health_queued);
  ASSERT_TRUE(first.status.ok()) << first.status.error_message();
  ASSERT_TRUE(second.status.ok()) << second.status.error_message();
  ASSERT_TRUE(health_status.ok()) << health_status.error_message();
  for (const SweepClient* s : {&first, &second}) {
    EXPECT_EQ(s->summary.state(), v1::RUN_STATE_DONE) << s->summary.message();
    EXPECT_EQ(s->summary.cases_size(), 8);
    for (const v1::CaseResult& c : s->summary.cases()) EXPECT_EQ(c.status(), v1::CASE_STATUS_OK);
  }
  EXPECT_EQ(health.status(), v1::CASE_STATUS_OK) << health.message();
}

TEST(HealthCli, ExitsZeroWhenHealthyAndTwoNamingTheMissingRank) {
  auto daemon = Daemon::Start(4, {"--allow-fault-injection"});
  ASSERT_NE(daemon, nullptr);
  auto colltest = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {BinDir() + "/colltest", "--server", daemon->address(), "health"});
    return RunCommand(args);
  };
  auto [ok_code, ok_out] = colltest({"--pairs", "--timeout", "2s"});
  EXPECT_EQ(ok_code, 0) << ok_out;
  EXPECT_THAT(ok_out, HasSubstr("healthy: 4 ranks, 6 pairs"));
  auto [hang_code, hang_out] =
      colltest({"--timeout", "1s", "--fault", "missing_rank:1", "--format", "json"});
  EXPECT_EQ(hang_code, 2) << hang_out;
  EXPECT_THAT(hang_out, HasSubstr("rank 1 never arrived"));
  auto [bad_code, bad_out] = colltest({"--warn-ratio", "0.5"});
  EXPECT_EQ(bad_code, 3) << bad_out;
  EXPECT_THAT(bad_out, HasSubstr("warn-ratio"));
}

TEST(Recovery, HundredFaultCyclesLeaveNoProcessFdOrSegmentAndAreCounted) {
  auto daemon = Daemon::Start(4, {"--allow-fault-injection", "--http", "127.0.0.1:0"});
  ASSERT_NE(daemon, nullptr);
  ASSERT_FALSE(daemon->http_address().empty());
  grpc::Status status;
  // One connection for the whole test: each new channel would hold a server-side socket for a
  // while and blur the file-descriptor count.
  const auto stub = daemon->Stub();
  // One cycle of each kind first, so that lazily created state (channels, threads) exists in the
  // baseline.
  const char* kinds[] = {"crash_rank", "missing_rank", "hang_end_sync"};
  auto cycle = [&](int i) {
    const std::string fault = absl::StrCat(kinds[i % 3], ":", i % 4);
    const v1::Variant variant = i % 3 == 2 ? v1::VARIANT_ONE_STAGE : v1::VARIANT_LAMPORT;
    const v1::RunResult bad = RunCase(*stub, 4, fault, variant, 300, &status);
    EXPECT_TRUE(status.ok()) << status.error_message();
    if (bad.cases_size() != 1) return false;
    const v1::CaseStatus want = i % 3 == 0 ? v1::CASE_STATUS_ERROR : v1::CASE_STATUS_HANG;
    EXPECT_EQ(bad.cases(0).status(), want) << fault << ": " << bad.cases(0).message();
    EXPECT_THAT(bad.cases(0).message(), HasSubstr(absl::StrCat("rank ", i % 4))) << fault;
    const v1::RunResult next = RunCase(*stub, 4, "", variant, 2000, &status);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return next.cases_size() == 1 && next.cases(0).status() == v1::CASE_STATUS_OK;
  };
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(cycle(i));
  const size_t fds = daemon->OpenFds();
  const size_t children = daemon->ChildPids().size();
  const size_t segments = daemon->ShmSegments().size();
  ASSERT_EQ(children, 4u);

  const auto t0 = std::chrono::steady_clock::now();
  int crashes = 1, hangs = 2;  // the baseline cycles 0, 1, 2
  for (int i = 3; i < 103; ++i) {
    ASSERT_TRUE(cycle(i)) << "cycle " << i;
    (i % 3 == 0 ? crashes : hangs) += 1;
  }
  std::printf(
      "[ recovery ] 100 fault cycles in %.1f s: fds %zu -> %zu, children %zu -> %zu, "
      "segments %zu -> %zu\n",
      SecondsSince(t0), fds, daemon->OpenFds(), children, daemon->ChildPids().size(), segments,
      daemon->ShmSegments().size());
  // The last recovery's sockets close as its old workers are reaped; a leak of one per cycle
  // would be a hundred, not one.
  for (int i = 0; i < 300 && daemon->OpenFds() > fds; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(daemon->OpenFds(), fds);
  EXPECT_EQ(daemon->ChildPids().size(), children);
  EXPECT_EQ(daemon->WorkerPids().size(), 4u);
  EXPECT_EQ(daemon->ShmSegments().size(), segments);

  const std::string metrics = Scrape(daemon->http_address());
  ASSERT_THAT(metrics, HasSubstr("200 OK"));
  // Every crash respawned the group; a typed hang only reset it.
  EXPECT_EQ(Metric(metrics, "colltest_worker_restarts_total"), crashes) << metrics;
  EXPECT_EQ(
      Metric(metrics, R"(colltest_cases_total{mode="eager",status="error",variant="lamport"})"),
      crashes);
  double hung = 0;
  // The culprit of hang_end_sync:R is rank R, on device R of the group 0,1,2,3: GPU R on cpu.
  for (int rank = 0; rank < 4; ++rank) hung += std::max(0.0, Hangs(metrics, rank, rank));
  EXPECT_EQ(hung, hangs) << metrics;
  EXPECT_EQ(Metric(metrics, R"(colltest_group_state{group="0,1,2,3",state="serving"})"), 1);

  // The dashboard's "culprit of the last hang": cycle 101 hung rank 1 (hang_end_sync:1).
  grpc::ClientContext context;
  v1::ListDevicesResponse devices;
  ASSERT_TRUE(stub->ListDevices(&context, v1::ListDevicesRequest(), &devices).ok());
  ASSERT_EQ(devices.groups_size(), 1);
  EXPECT_EQ(devices.groups(0).last_hang_device(), 1);
  EXPECT_THAT(devices.groups(0).last_hang(), HasSubstr("rank 1"));
  EXPECT_GT(devices.groups(0).last_hang_unix_ms(), 0);
}

}  // namespace
}  // namespace colltest::testing
