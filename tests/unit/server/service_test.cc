// The service end to end in-process: a real grpc::Server on 127.0.0.1:0, a real stub, and a fake
// worker pool.
#include "server/api/service.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "fake_worker_pool.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "tests/unit/server/test_capabilities.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;
namespace wv1 = ::colltest::worker::v1;
using testing::FakeWorkerPool;
using ::testing::HasSubstr;

ServiceOptions CpuOptions(uint32_t ranks = 4) {
  ServiceOptions o;
  o.backend = "cpu";
  for (uint32_t i = 0; i < ranks; ++i) {
    v1::Device& d = o.devices.emplace_back();
    d.set_index(i);
    d.set_name(absl::StrCat("cpu rank ", i));
  }
  o.capabilities = testing::CpuCapabilities();
  o.version = "test";
  o.queue_poll = absl::Milliseconds(10);
  return o;
}

v1::RunRequest Request(uint32_t world, std::vector<uint32_t> ms,
                       std::vector<v1::Variant> variants = {v1::VARIANT_LAMPORT}) {
  v1::RunRequest r;
  v1::SweepSpec* spec = r.mutable_spec();
  spec->set_world_size(world);
  for (uint32_t m : ms) spec->add_m(m);
  spec->add_n(1024);
  for (v1::Variant v : variants) spec->add_variants(v);
  return r;
}

class ServiceTest : public ::testing::Test {
 protected:
  void Start(ServiceOptions options = CpuOptions()) {
    service_ = std::make_unique<CollectiveTestService>(std::move(options), &pool_);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(port, 0);
    channel_ =
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials());
    stub_ = v1::CollectiveTest::NewStub(channel_);
  }

  void TearDown() override {
    if (server_ == nullptr) return;
    service_->BeginShutdown();
    pool_.OpenGate();
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  }

  static std::unique_ptr<grpc::ClientContext> Context() {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    return context;
  }

  // Runs a Sweep to the end and returns every event and the final status.
  std::pair<std::vector<v1::SweepEvent>, grpc::Status> SweepAll(const v1::RunRequest& request) {
    auto context = Context();
    auto reader = stub_->Sweep(context.get(), request);
    std::vector<v1::SweepEvent> events;
    v1::SweepEvent event;
    while (reader->Read(&event)) events.push_back(event);
    return {events, reader->Finish()};
  }

  // Polls the history (bounded) until a run is queued and returns its id, "" if none shows up.
  std::string QueuedRunId() {
    for (int i = 0; i < 500; ++i) {
      v1::ListRunsResponse list;
      auto context = Context();
      if (!stub_->ListRuns(context.get(), {}, &list).ok()) return "";
      for (const auto& r : list.runs()) {
        if (r.state() == v1::RUN_STATE_QUEUED) return r.run_id();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return "";
  }

  v1::RunState StateOf(const std::string& run_id) {
    v1::GetRunRequest request;
    request.set_run_id(run_id);
    v1::RunResult run;
    auto context = Context();
    EXPECT_TRUE(stub_->GetRun(context.get(), request, &run).ok());
    return run.state();
  }

  FakeWorkerPool pool_;
  std::unique_ptr<CollectiveTestService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::CollectiveTest::Stub> stub_;
};

TEST_F(ServiceTest, ListDevices) {
  Start();
  v1::ListDevicesResponse response;
  auto context = Context();
  ASSERT_TRUE(stub_->ListDevices(context.get(), {}, &response).ok());
  EXPECT_EQ(response.backend(), "cpu");
  ASSERT_EQ(response.devices_size(), 4);
  EXPECT_EQ(response.devices(2).name(), "cpu rank 2");
  EXPECT_EQ(response.devices(2).backend(), "cpu");
  EXPECT_THAT(response.variants(),
              ::testing::ElementsAre(v1::VARIANT_ONE_STAGE, v1::VARIANT_TWO_KERNEL,
                                     v1::VARIANT_LAMPORT, v1::VARIANT_LAMPORT_TB));
  EXPECT_EQ(response.max_world_size(), 4u);
  EXPECT_EQ(response.version(), "test");
}

// The variants listed are the ones the backend announced, whatever its name.
TEST_F(ServiceTest, ListDevicesListsTheAnnouncedVariants) {
  ServiceOptions options = CpuOptions();
  options.capabilities = testing::GpuCapabilities();
  Start(std::move(options));
  v1::ListDevicesResponse response;
  auto context = Context();
  ASSERT_TRUE(stub_->ListDevices(context.get(), {}, &response).ok());
  EXPECT_EQ(response.backend(), "cpu");
  EXPECT_THAT(
      response.variants(),
      ::testing::ElementsAre(v1::VARIANT_ONE_STAGE, v1::VARIANT_TWO_KERNEL, v1::VARIANT_LAMPORT,
                             v1::VARIANT_LAMPORT_TB, v1::VARIANT_NCCL, v1::VARIANT_AUTO));
}

TEST_F(ServiceTest, RunReturnsEveryCaseAndIsRecorded) {
  Start();
  v1::RunResult run;
  auto context = Context();
  grpc::Status status = stub_->Run(
      context.get(), Request(2, {1, 8}, {v1::VARIANT_ONE_STAGE, v1::VARIANT_LAMPORT}), &run);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(run.state(), v1::RUN_STATE_DONE);
  EXPECT_EQ(run.backend(), "cpu");
  EXPECT_EQ(run.message(), "4 cases: 4 OK");
  ASSERT_EQ(run.cases_size(), 4);
  EXPECT_EQ(run.cases(1).m(), 1u);
  EXPECT_EQ(run.cases(1).variant(), v1::VARIANT_LAMPORT);
  EXPECT_EQ(run.cases(2).m(), 8u);
  EXPECT_EQ(run.cases(3).index(), 3u);
  EXPECT_EQ(run.cases(0).ranks_size(), 2);
  EXPECT_GT(run.cases(0).busbw_gbps(), 0);
  EXPECT_EQ(run.spec().iters(), 20u);  // the normalized spec is what is kept
  EXPECT_THAT(run.spec().devices(), ::testing::ElementsAre(0, 1));
  EXPECT_EQ(pool_.calls().size(), 4u);

  v1::GetRunRequest get;
  get.set_run_id(run.run_id());
  v1::RunResult again;
  context = Context();
  ASSERT_TRUE(stub_->GetRun(context.get(), get, &again).ok());
  EXPECT_EQ(again.SerializeAsString(), run.SerializeAsString());

  v1::ListRunsResponse list;
  context = Context();
  ASSERT_TRUE(stub_->ListRuns(context.get(), {}, &list).ok());
  ASSERT_EQ(list.runs_size(), 1);
  EXPECT_EQ(list.runs(0).run_id(), run.run_id());
  EXPECT_EQ(list.runs(0).ok(), 4u);
  EXPECT_EQ(list.runs(0).spec().world_size(), run.spec().world_size());

  // The machine filter: this machine's runs, none of another's, and a key colltestd never
  // issues is refused by name.
  v1::ListRunsRequest mine;
  mine.set_machine_key(run.machine().key());
  context = Context();
  ASSERT_TRUE(stub_->ListRuns(context.get(), mine, &list).ok());
  EXPECT_EQ(list.runs_size(), 1);
  v1::ListRunsRequest other;
  other.set_machine_key("another-machine");
  context = Context();
  ASSERT_TRUE(stub_->ListRuns(context.get(), other, &list).ok());
  EXPECT_EQ(list.runs_size(), 0);
  other.set_machine_key("not a key");
  context = Context();
  const grpc::Status refused = stub_->ListRuns(context.get(), other, &list);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(refused.error_message(), HasSubstr("machine_key"));
}

TEST_F(ServiceTest, InvalidRequestNamesTheFieldAndIsNotRecorded) {
  Start();
  v1::RunResult run;
  auto context = Context();
  v1::RunRequest request = Request(2, {1});
  request.mutable_spec()->set_n(0, 7);
  grpc::Status status = stub_->Run(context.get(), request, &run);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(),
            "n = 7: must be a multiple of the pack size 8 (16 bytes of bf16)");

  request = Request(64, {1});
  context = Context();
  status = stub_->Run(context.get(), request, &run);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(),
            "world_size = 64: this cpu backend has 4 ranks (colltestd --cpu-ranks)");

  request = Request(2, {1});
  request.mutable_spec()->set_fault("missing_rank:1");
  context = Context();
  status = stub_->Run(context.get(), request, &run);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);

  v1::ListRunsResponse list;
  context = Context();
  ASSERT_TRUE(stub_->ListRuns(context.get(), {}, &list).ok());
  EXPECT_EQ(list.runs_size(), 0);
  EXPECT_TRUE(pool_.calls().empty());
}

TEST_F(ServiceTest, FaultIsForwardedWhenAllowed) {
  ServiceOptions options = CpuOptions();
  options.allow_fault_injection = true;
  Start(std::move(options));
  v1::RunRequest request = Request(2, {1});
  request.mutable_spec()->set_fault("missing_rank:1");
  v1::RunResult run;
  auto context = Context();
  ASSERT_TRUE(stub_->Run(context.get(), request, &run).ok());
  ASSERT_EQ(pool_.calls().size(), 1u);
  EXPECT_EQ(pool_.calls()[0].request.fault(), "missing_rank:1");
}

TEST_F(ServiceTest, PoolErrorMarksTheCaseAndTheSweepGoesOn) {
  Start();
  pool_.SetHandler([](absl::Span<const uint32_t> devices,
                      const auto& request) -> absl::StatusOr<std::vector<v1::RankResult>> {
    if (request.m() == 8) return absl::UnavailableError("rank 1 did not start");
    return FakeWorkerPool::AllOk(devices);
  });
  v1::RunResult run;
  auto context = Context();
  ASSERT_TRUE(stub_->Run(context.get(), Request(2, {1, 8, 64}), &run).ok());
  EXPECT_EQ(run.state(), v1::RUN_STATE_DONE);
  ASSERT_EQ(run.cases_size(), 3);
  EXPECT_EQ(run.cases(0).status(), v1::CASE_STATUS_OK);
  EXPECT_EQ(run.cases(1).status(), v1::CASE_STATUS_ERROR);
  EXPECT_THAT(run.cases(1).message(), HasSubstr("rank 1 did not start"));
  EXPECT_EQ(run.cases(2).status(), v1::CASE_STATUS_OK);
  EXPECT_EQ(run.message(), "3 cases: 2 OK, 1 ERROR");
}

TEST_F(ServiceTest, RunFailsWhenNoCaseCouldRun) {
  Start();
  pool_.SetHandler(
      [](absl::Span<const uint32_t>, const auto&) -> absl::StatusOr<std::vector<v1::RankResult>> {
        return absl::NotFoundError("colltest-worker: no such file");
      });
  v1::RunResult run;
  auto context = Context();
  ASSERT_TRUE(stub_->Run(context.get(), Request(2, {1, 8}), &run).ok());
  EXPECT_EQ(run.state(), v1::RUN_STATE_FAILED);
  EXPECT_THAT(run.message(), HasSubstr("no such file"));
}

TEST_F(ServiceTest, HangVerdictReachesTheClient) {
  Start();
  pool_.SetHandler([](absl::Span<const uint32_t> devices,
                      const auto&) -> absl::StatusOr<std::vector<v1::RankResult>> {
    auto ranks = FakeWorkerPool::AllOk(devices);
    for (uint32_t r : {0u, 2u, 3u}) {
      ranks[r].set_status(v1::CASE_STATUS_HANG);
      ranks[r].set_suspect_peer(1);
      ranks[r].set_phase("lamport phase B");
    }
    return ranks;
  });
  v1::RunResult run;
  auto context = Context();
  ASSERT_TRUE(stub_->Run(context.get(), Request(4, {1}), &run).ok());
  ASSERT_EQ(run.cases_size(), 1);
  EXPECT_EQ(run.cases(0).status(), v1::CASE_STATUS_HANG);
  EXPECT_EQ(run.cases(0).message(),
            "rank 1 never arrived: ranks 0, 2, 3 waited for it in lamport phase B");
}

TEST_F(ServiceTest, SweepStreamsProgressResultsAndSummary) {
  Start();
  auto [events, status] = SweepAll(Request(2, {1, 8, 64}));
  ASSERT_TRUE(status.ok()) << status.error_message();
  // started, then (result, progress) per case, then the summary.
  ASSERT_EQ(events.size(), 1u + 2 * 3 + 1);
  const std::string id = events[0].run_id();
  EXPECT_FALSE(id.empty());
  ASSERT_TRUE(events[0].has_progress());
  EXPECT_EQ(events[0].progress().state(), v1::RUN_STATE_RUNNING);
  EXPECT_EQ(events[0].progress().total(), 3u);
  for (uint32_t i = 0; i < 3; ++i) {
    const v1::SweepEvent& result = events[1 + 2 * i];
    const v1::SweepEvent& progress = events[2 + 2 * i];
    ASSERT_TRUE(result.has_result());
    EXPECT_EQ(result.result().index(), i);
    ASSERT_TRUE(progress.has_progress());
    EXPECT_EQ(progress.progress().done(), i + 1);
    EXPECT_EQ(progress.progress().total(), 3u);
    EXPECT_EQ(result.run_id(), id);
  }
  ASSERT_TRUE(events.back().has_summary());
  EXPECT_EQ(events.back().summary().state(), v1::RUN_STATE_DONE);
  EXPECT_EQ(events.back().summary().cases_size(), 3);
  EXPECT_EQ(events.back().summary().run_id(), id);
}

TEST_F(ServiceTest, QueuedSweepIsAnsweredAfterTheSlowOne) {
  Start();
  pool_.CloseGate();
  auto slow = std::async(std::launch::async, [&] { return SweepAll(Request(2, {1, 8})); });
  pool_.WaitForCalls(1);

  auto context = Context();
  auto reader = stub_->Sweep(context.get(), Request(2, {64}));
  v1::SweepEvent first;
  ASSERT_TRUE(reader->Read(&first));
  ASSERT_TRUE(first.has_progress());
  EXPECT_EQ(first.progress().state(), v1::RUN_STATE_QUEUED);
  EXPECT_EQ(first.progress().queue_position(), 1u);
  EXPECT_EQ(StateOf(first.run_id()), v1::RUN_STATE_QUEUED);

  pool_.OpenGate();
  auto [slow_events, slow_status] = slow.get();
  ASSERT_TRUE(slow_status.ok());
  const v1::RunResult& slow_run = slow_events.back().summary();
  EXPECT_EQ(slow_run.state(), v1::RUN_STATE_DONE);

  v1::SweepEvent event;
  v1::RunResult queued_run;
  while (reader->Read(&event)) {
    if (event.has_summary()) queued_run = event.summary();
  }
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_EQ(queued_run.state(), v1::RUN_STATE_DONE);
  ASSERT_EQ(queued_run.cases_size(), 1);

  // Every case of the slow run reached the workers before the queued run's.
  const auto calls = pool_.calls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].request.m(), 1u);
  EXPECT_EQ(calls[1].request.m(), 8u);
  EXPECT_EQ(calls[2].request.m(), 64u);
}

TEST_F(ServiceTest, DisjointGroupsRunAtTheSameTime) {
  Start();
  pool_.CloseGate();
  v1::RunRequest a = Request(2, {1});
  a.mutable_spec()->add_devices(0);
  a.mutable_spec()->add_devices(1);
  v1::RunRequest b = Request(2, {1});
  b.mutable_spec()->add_devices(2);
  b.mutable_spec()->add_devices(3);
  auto first = std::async(std::launch::async, [&] { return SweepAll(a); });
  auto second = std::async(std::launch::async, [&] { return SweepAll(b); });
  pool_.WaitForCalls(2);  // both are inside the pool at once
  pool_.OpenGate();
  EXPECT_TRUE(first.get().second.ok());
  EXPECT_TRUE(second.get().second.ok());
}

TEST_F(ServiceTest, CancelQueuedRun) {
  Start();
  pool_.CloseGate();
  auto slow = std::async(std::launch::async, [&] { return SweepAll(Request(2, {1})); });
  pool_.WaitForCalls(1);

  auto context = Context();
  auto reader = stub_->Sweep(context.get(), Request(2, {64}));
  v1::SweepEvent first;
  ASSERT_TRUE(reader->Read(&first));
  ASSERT_EQ(first.progress().state(), v1::RUN_STATE_QUEUED);

  v1::CancelRequest cancel;
  cancel.set_run_id(first.run_id());
  v1::CancelResponse cancelled;
  auto cancel_context = Context();
  ASSERT_TRUE(stub_->Cancel(cancel_context.get(), cancel, &cancelled).ok());
  EXPECT_EQ(cancelled.state(), v1::RUN_STATE_QUEUED);

  v1::SweepEvent event;
  while (reader->Read(&event)) EXPECT_FALSE(event.has_summary());
  grpc::Status status = reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_THAT(status.error_message(), HasSubstr("cancelled while queued"));
  EXPECT_EQ(StateOf(first.run_id()), v1::RUN_STATE_CANCELLED);

  pool_.OpenGate();
  EXPECT_TRUE(slow.get().second.ok());
  EXPECT_EQ(pool_.calls().size(), 1u);  // the cancelled run never reached the workers
}

// A caller's share of the queue is bounded: its runs beyond the limit are refused up front, while
// another caller's runs are still taken (the device queue is FIFO; without the bound one client
// could make every other wait behind all of its runs).
TEST_F(ServiceTest, OneCallerCannotFillTheQueue) {
  ServiceOptions options = CpuOptions();
  options.auth.principals = {{"ci-a", Role::kRunner, "token-of-ci-a-0123", ""},
                             {"ci-b", Role::kRunner, "token-of-ci-b-0123", ""}};
  options.max_active_runs_per_owner = 2;
  Start(std::move(options));
  const auto as = [](const char* token) {
    auto context = Context();
    context->AddMetadata("authorization", absl::StrCat("Bearer ", token));
    return context;
  };
  const auto run_as = [&](const char* token, uint32_t m) {
    v1::RunResult run;
    return stub_->Run(as(token).get(), Request(2, {m}), &run);
  };
  pool_.CloseGate();
  auto a1 = std::async(std::launch::async, [&] { return run_as("token-of-ci-a-0123", 1); });
  pool_.WaitForCalls(1);
  auto a2 = std::async(std::launch::async, [&] { return run_as("token-of-ci-a-0123", 8); });
  bool queued = false;
  for (int i = 0; i < 500 && !queued; ++i) {
    v1::ListRunsResponse list;
    ASSERT_TRUE(stub_->ListRuns(as("token-of-ci-b-0123").get(), {}, &list).ok());
    for (const auto& r : list.runs()) queued = queued || r.state() == v1::RUN_STATE_QUEUED;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(queued);
  const grpc::Status refused = run_as("token-of-ci-a-0123", 64);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(refused.error_message(),
              HasSubstr("ci-a has 2 runs queued or running, the limit is 2"));
  auto b1 = std::async(std::launch::async, [&] { return run_as("token-of-ci-b-0123", 16); });
  pool_.OpenGate();
  EXPECT_TRUE(a1.get().ok());
  EXPECT_TRUE(a2.get().ok());
  EXPECT_TRUE(b1.get().ok()) << "another caller's run was refused";
  EXPECT_TRUE(run_as("token-of-ci-a-0123", 64).ok()) << "slots are given back when runs end";
}

TEST_F(ServiceTest, CancelQueuedUnaryRun) {
  Start();
  pool_.CloseGate();
  auto slow = std::async(std::launch::async, [&] { return SweepAll(Request(2, {1})); });
  pool_.WaitForCalls(1);
  auto queued = std::async(std::launch::async, [&] {
    v1::RunResult run;
    auto context = Context();
    return stub_->Run(context.get(), Request(2, {8}), &run);
  });
  // The unary caller cannot see its id; find it in the history.
  const std::string id = QueuedRunId();
  ASSERT_FALSE(id.empty());
  v1::CancelRequest cancel;
  cancel.set_run_id(id);
  v1::CancelResponse response;
  auto context = Context();
  ASSERT_TRUE(stub_->Cancel(context.get(), cancel, &response).ok());
  EXPECT_EQ(queued.get().error_code(), grpc::StatusCode::CANCELLED);
  pool_.OpenGate();
  EXPECT_TRUE(slow.get().second.ok());
}

// A running case is stopped, not awaited: the closed gate holds it like a case of 100,000 calls.
TEST_F(ServiceTest, CancelStopsTheRunningCase) {
  Start();
  pool_.CloseGate();
  auto context = Context();
  auto reader = stub_->Sweep(context.get(), Request(2, {1, 8, 64}));
  v1::SweepEvent first;
  ASSERT_TRUE(reader->Read(&first));
  ASSERT_EQ(first.progress().state(), v1::RUN_STATE_RUNNING);
  pool_.WaitForCalls(1);

  v1::CancelRequest cancel;
  cancel.set_run_id(first.run_id());
  v1::CancelResponse response;
  auto cancel_context = Context();
  ASSERT_TRUE(stub_->Cancel(cancel_context.get(), cancel, &response).ok());
  EXPECT_EQ(response.state(), v1::RUN_STATE_RUNNING);

  v1::SweepEvent event;
  v1::RunResult summary;
  while (reader->Read(&event)) {
    if (event.has_summary()) summary = event.summary();
  }
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_EQ(summary.state(), v1::RUN_STATE_CANCELLED);
  EXPECT_EQ(summary.cases_size(), 0) << "the stopped case has no verdict to record";
  EXPECT_THAT(summary.message(), HasSubstr("cancelled after 0 of 3 cases: cancelled by request"));
  EXPECT_EQ(pool_.calls().size(), 1u);
  EXPECT_EQ(pool_.cancelled_calls(), 1u);
  pool_.OpenGate();
}

TEST_F(ServiceTest, ClientThatGoesAwayCancelsItsSweep) {
  Start();
  pool_.CloseGate();
  std::string id;
  {
    grpc::ClientContext context;
    auto reader = stub_->Sweep(&context, Request(2, {1, 8, 64}));
    v1::SweepEvent first;
    ASSERT_TRUE(reader->Read(&first));
    id = first.run_id();
    pool_.WaitForCalls(1);
    context.TryCancel();
    reader->Finish();
  }
  // The server learns of the cancellation from the transport, a moment later; real cases take
  // far longer than that, the fake ones do not.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  pool_.OpenGate();
  v1::RunState state = v1::RUN_STATE_RUNNING;
  for (int i = 0; i < 500 && state == v1::RUN_STATE_RUNNING; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    state = StateOf(id);
  }
  EXPECT_EQ(state, v1::RUN_STATE_CANCELLED);
  EXPECT_EQ(pool_.calls().size(), 1u);
}

TEST_F(ServiceTest, UnknownRunIds) {
  Start();
  v1::CancelRequest cancel;
  cancel.set_run_id("r-0-0");
  v1::CancelResponse response;
  auto context = Context();
  EXPECT_EQ(stub_->Cancel(context.get(), cancel, &response).error_code(),
            grpc::StatusCode::NOT_FOUND);
  v1::GetRunRequest get;
  get.set_run_id("r-0-0");
  v1::RunResult run;
  context = Context();
  EXPECT_EQ(stub_->GetRun(context.get(), get, &run).error_code(), grpc::StatusCode::NOT_FOUND);
  get.clear_run_id();
  context = Context();
  EXPECT_EQ(stub_->GetRun(context.get(), get, &run).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

// Run ids are checked before any lookup: a huge or control-character id is refused naming the
// field, in GetRun and in Cancel alike.
TEST_F(ServiceTest, RunIdsAreShortPrintableAsciiInEveryHandler) {
  Start();
  for (const std::string& id : {std::string(1000, 'r'), std::string("r-\x1b[2J")}) {
    v1::GetRunRequest get;
    get.set_run_id(id);
    v1::RunResult run;
    auto context = Context();
    const grpc::Status got = stub_->GetRun(context.get(), get, &run);
    EXPECT_EQ(got.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(got.error_message(), HasSubstr("run_id:"));
    v1::CancelRequest cancel;
    cancel.set_run_id(id);
    v1::CancelResponse response;
    context = Context();
    const grpc::Status cancelled = stub_->Cancel(context.get(), cancel, &response);
    EXPECT_EQ(cancelled.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(cancelled.error_message(), HasSubstr("run_id:"));
  }
}

TEST_F(ServiceTest, BearerToken) {
  ServiceOptions options = CpuOptions();
  options.auth.principals = {{"ci", Role::kRunner, "s3cret", ""}};
  Start(std::move(options));
  v1::ListDevicesResponse response;
  auto context = Context();
  EXPECT_EQ(stub_->ListDevices(context.get(), {}, &response).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  context = Context();
  context->AddMetadata("authorization", "Bearer wrong");
  EXPECT_EQ(stub_->ListDevices(context.get(), {}, &response).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  context = Context();
  context->AddMetadata("authorization", "Bearer s3cret");
  EXPECT_TRUE(stub_->ListDevices(context.get(), {}, &response).ok());

  v1::RunResult run;
  context = Context();
  EXPECT_EQ(stub_->Run(context.get(), Request(2, {1}), &run).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(pool_.calls().empty());
}

TEST_F(ServiceTest, RolesGateTheHandlersAndRunsRecordTheirOwner) {
  ServiceOptions options = CpuOptions();
  options.allow_fault_injection = true;
  options.auth.principals = {{"dash", Role::kViewer, "viewer-token-0123456", ""},
                             {"ci", Role::kRunner, "runner-token-0123456", ""}};
  Start(std::move(options));
  const auto as = [](const std::string& token) {
    auto context = Context();
    context->AddMetadata("authorization", "Bearer " + token);
    return context;
  };
  v1::RunResult run;
  grpc::Status status = stub_->Run(as("viewer-token-0123456").get(), Request(2, {1}), &run);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(status.error_message(), HasSubstr("Run needs role runner; dash has role viewer"));

  v1::RunRequest faulty = Request(2, {1});
  faulty.mutable_spec()->set_fault("skip_rearm");
  status = stub_->Run(as("runner-token-0123456").get(), faulty, &run);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(status.error_message(), HasSubstr("needs role admin; ci has role runner"));
  EXPECT_TRUE(pool_.calls().empty());

  ASSERT_TRUE(stub_->Run(as("runner-token-0123456").get(), Request(2, {1}), &run).ok());
  EXPECT_EQ(run.owner(), "ci");
  EXPECT_THAT(run.run_id(), ::testing::MatchesRegex("r-[0-9a-f]{32}"));
  v1::ListRunsResponse runs;
  ASSERT_TRUE(stub_->ListRuns(as("viewer-token-0123456").get(), {}, &runs).ok());
  ASSERT_EQ(runs.runs_size(), 1);
  EXPECT_EQ(runs.runs(0).owner(), "ci");
  v1::CancelRequest cancel;
  cancel.set_run_id(run.run_id());
  v1::CancelResponse cancelled;
  EXPECT_EQ(stub_->Cancel(as("viewer-token-0123456").get(), cancel, &cancelled).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(stub_->Cancel(as("runner-token-0123456").get(), cancel, &cancelled).ok());
}

TEST_F(ServiceTest, WithoutAuthenticationTheOwnerIsThePeer) {
  Start();
  v1::RunResult run;
  ASSERT_TRUE(stub_->Run(Context().get(), Request(2, {1}), &run).ok());
  EXPECT_THAT(run.owner(), ::testing::StartsWith("peer:ipv4:127.0.0.1:"));
}

// Shutdown drains: a queued run is answered UNAVAILABLE (retry elsewhere), and the running case is
// stopped where it is (the closed gate holds it like a case of 100,000 calls) rather than awaited.
TEST_F(ServiceTest, ShutdownStopsTheRunningCaseAndRefusesQueuedRunsAsUnavailable) {
  Start();
  pool_.CloseGate();
  auto slow = std::async(std::launch::async, [&] { return SweepAll(Request(2, {1, 8})); });
  pool_.WaitForCalls(1);
  auto queued = std::async(std::launch::async, [&] { return SweepAll(Request(2, {64})); });
  ASSERT_FALSE(QueuedRunId().empty());
  service_->BeginShutdown();
  const grpc::Status refused = queued.get().second;
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(refused.error_message(), HasSubstr("shutting down"));
  auto [events, status] = slow.get();
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(events.back().summary().state(), v1::RUN_STATE_CANCELLED);
  EXPECT_EQ(events.back().summary().cases_size(), 0);
  EXPECT_THAT(events.back().summary().message(), HasSubstr("the server is shutting down"));
  EXPECT_EQ(pool_.cancelled_calls(), 1u);
  pool_.OpenGate();
}

// The verdicts come from the replies: pairs holding device 3 are 4x slower (a WARN, still
// healthy); with the fault, every rank waits for device 2 wherever it is, and the pairs isolate it.
FakeWorkerPool::Handler SlowThreeBadTwo() {
  return [](absl::Span<const uint32_t> devices,
            const wv1::CaseRequest& request) -> absl::StatusOr<std::vector<v1::RankResult>> {
    const auto at = [&](uint32_t d) { return std::find(devices.begin(), devices.end(), d); };
    const bool pair_with_three = devices.size() == 2 && at(3) != devices.end();
    std::vector<v1::RankResult> ranks = FakeWorkerPool::AllOk(devices, pair_with_three ? 40 : 10);
    if (request.fault() == "skip_rearm" && at(2) != devices.end()) {
      for (v1::RankResult& r : ranks) {
        if (devices[r.rank()] == 2) continue;
        r.set_status(v1::CASE_STATUS_HANG);
        r.set_suspect_peer(static_cast<int32_t>(at(2) - devices.begin()));
        r.set_phase("lamport phase B");
      }
    }
    return ranks;
  };
}

TEST_F(ServiceTest, HealthWarnsOfTheSlowPairsAndStaysHealthy) {
  Start();
  pool_.SetHandler(SlowThreeBadTwo());
  v1::HealthRequest request;
  request.set_pairs(true);
  v1::HealthResponse health;
  ASSERT_TRUE(stub_->Health(Context().get(), request, &health).ok());
  EXPECT_EQ(health.status(), v1::CASE_STATUS_OK);
  ASSERT_EQ(health.pairs_size(), 6);
  for (const v1::HealthTarget& p : health.pairs()) {
    const bool with_three = p.devices(0) == 3 || p.devices(1) == 3;
    EXPECT_EQ(p.slow(), with_three) << p.ShortDebugString();
    EXPECT_EQ(p.status(), v1::CASE_STATUS_OK);
  }
  EXPECT_THAT(health.message(), HasSubstr("healthy: 4 ranks, 6 pairs"));
  EXPECT_THAT(health.message(), HasSubstr("WARN slow (x median): pair 0-3 at 1.58"));
  // The fault needs the server's consent.
  request.set_fault("skip_rearm");
  EXPECT_EQ(stub_->Health(Context().get(), request, &health).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
}

TEST_F(ServiceTest, HealthIsolatesTheDeviceEveryFailingPairHolds) {
  ServiceOptions options = CpuOptions();
  options.allow_fault_injection = true;
  Start(std::move(options));
  pool_.SetHandler(SlowThreeBadTwo());
  v1::HealthRequest request;
  request.set_pairs(true);
  request.set_fault("skip_rearm");
  v1::HealthResponse health;
  ASSERT_TRUE(stub_->Health(Context().get(), request, &health).ok());
  EXPECT_EQ(health.status(), v1::CASE_STATUS_HANG);
  EXPECT_THAT(health.message(), HasSubstr("rank 2 never arrived"));
  EXPECT_THAT(health.message(), HasSubstr("pairs failing: 0-2, 1-2, 2-3; isolated: device 2"));
  for (const v1::HealthTarget& r : health.ranks()) {
    if (r.devices(0) == 2) continue;
    EXPECT_EQ(r.status(), v1::CASE_STATUS_HANG);
    EXPECT_EQ(r.suspect_peer(), 2);
    EXPECT_EQ(r.phase(), "lamport phase B");
  }
  for (const v1::HealthTarget& p : health.pairs()) {
    if (p.devices(0) == 2 || p.devices(1) == 2) {
      EXPECT_EQ(p.suspect_peer(), 2);
    }
  }
  // Stopped at the first failure: one group case, one case per failing pair, four per healthy one.
  EXPECT_EQ(health.cases_size(), 1 + 3 * 1 + 3 * 4);
}

TEST_F(ServiceTest, AutoIsResolvedFromTheTuneTableAndReportedOrUnsupportedWithoutOne) {
  const std::string table = R"({"kind": "colltest-tune-table", "version": 1, "backend": "cpu",
      "world": 2, "dtype": "bf16", "mode": "eager", "n": 1024, "rows": [
      {"m": 1, "best": "lamport_tb"}, {"m": 64, "best": "one_stage"}]})";
  const TuneTables tables({*ParseTuneTable(table, "cpu_w2.json")});
  ServiceOptions options = CpuOptions();
  options.tune = &tables;
  Start(std::move(options));
  v1::RunResult run;
  ASSERT_TRUE(stub_->Run(Context().get(), Request(2, {8, 64}, {v1::VARIANT_AUTO}), &run).ok());
  ASSERT_EQ(run.cases_size(), 2);
  EXPECT_EQ(run.cases(0).variant(), v1::VARIANT_AUTO);
  EXPECT_EQ(run.cases(0).resolved_variant(), v1::VARIANT_LAMPORT_TB);
  EXPECT_EQ(run.cases(1).resolved_variant(), v1::VARIANT_ONE_STAGE);
  EXPECT_THAT(run.cases(1).message(), HasSubstr("auto -> one_stage: tune table cpu_w2.json"));
  const auto calls = pool_.calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].request.variant(), v1::VARIANT_LAMPORT_TB) << "workers run concrete variants";
  EXPECT_EQ(calls[1].request.variant(), v1::VARIANT_ONE_STAGE);

  // No table for W = 4: reported, not failed, and no worker is asked.
  ASSERT_TRUE(stub_->Run(Context().get(), Request(4, {8}, {v1::VARIANT_AUTO}), &run).ok());
  ASSERT_EQ(run.cases_size(), 1);
  EXPECT_EQ(run.cases(0).status(), v1::CASE_STATUS_UNSUPPORTED);
  EXPECT_THAT(run.cases(0).message(), HasSubstr("auto: no tune table for cpu W=4 bf16"));
  EXPECT_EQ(pool_.calls().size(), 2u);
}

// The executor hands the case's epilogue to the tables: each epilogue is resolved from a table of
// its own, and one without any is UNSUPPORTED naming it.
TEST_F(ServiceTest, AutoIsResolvedFromATableOfTheCasesEpilogue) {
  const std::string none = R"({"kind": "colltest-tune-table", "version": 1, "backend": "cpu",
      "world": 2, "dtype": "bf16", "mode": "eager", "n": 1024,
      "rows": [{"m": 1, "best": "one_stage"}]})";
  const std::string fp8 = R"({"kind": "colltest-tune-table", "version": 1, "backend": "cpu",
      "world": 2, "dtype": "bf16", "mode": "eager", "n": 1024, "epilogue": "fp8_token",
      "rows": [{"m": 1, "best": "lamport_tb"}]})";
  const TuneTables tables(
      {*ParseTuneTable(none, "cpu_w2.json"), *ParseTuneTable(fp8, "cpu_w2_fp8_token.json")});
  ServiceOptions options = CpuOptions();
  options.tune = &tables;
  Start(std::move(options));
  v1::RunRequest request = Request(2, {8}, {v1::VARIANT_AUTO});
  for (v1::Epilogue e : {v1::EPILOGUE_NONE, v1::EPILOGUE_FP8_TOKEN, v1::EPILOGUE_NVFP4}) {
    request.mutable_spec()->add_epilogues(e);
  }
  v1::RunResult run;
  ASSERT_TRUE(stub_->Run(Context().get(), request, &run).ok());
  ASSERT_EQ(run.cases_size(), 3);
  std::map<v1::Epilogue, v1::CaseResult> by_epilogue;
  for (const v1::CaseResult& c : run.cases()) by_epilogue[c.epilogue()] = c;
  EXPECT_EQ(by_epilogue[v1::EPILOGUE_NONE].resolved_variant(), v1::VARIANT_ONE_STAGE);
  EXPECT_EQ(by_epilogue[v1::EPILOGUE_FP8_TOKEN].resolved_variant(), v1::VARIANT_LAMPORT_TB);
  EXPECT_THAT(by_epilogue[v1::EPILOGUE_FP8_TOKEN].message(),
              HasSubstr("auto -> lamport_tb: tune table cpu_w2_fp8_token.json (cpu W=2 bf16 eager "
                        "n=1024 fp8_token)"));
  const v1::CaseResult& nvfp4 = by_epilogue[v1::EPILOGUE_NVFP4];
  EXPECT_EQ(nvfp4.status(), v1::CASE_STATUS_UNSUPPORTED);
  EXPECT_THAT(nvfp4.message(),
              HasSubstr("auto: no tune table for cpu W=2 bf16 epilogue nvfp4 (cpu W=2 bf16 has "
                        "tables for epilogue none, fp8_token; measure one with `colltest tune "
                        "--world 2 --dtype bf16 --epilogue nvfp4`"));
  EXPECT_EQ(pool_.calls().size(), 2u) << "no worker is asked for the nvfp4 case";
}

// A table of `colltest tune --tune-plugins` may pick a kernel plugin: the worker is asked for the
// plugin by name, and the case stays auto, resolved to the plugin, with the build colltestd
// loaded. A colltestd that did not load it runs the row's fastest own variant instead.
TEST_F(ServiceTest, AutoRunsThePluginTheTableChoseOrItsOwnFastestWhenItIsNotLoaded) {
  const std::string table = R"({"kind": "colltest-tune-table", "version": 1, "backend": "cpu",
      "world": 2, "dtype": "bf16", "mode": "eager", "n": 1024, "rows": [{"m": 1,
      "best": "plugin:oneshot_norm",
      "us": {"one_stage": 9.0, "lamport_tb": 8.0, "plugin:oneshot_norm": 4.0}}]})";
  const TuneTables tables({*ParseTuneTable(table, "cpu_w2.json")});
  ServiceOptions options = CpuOptions();
  options.tune = &tables;
  v1::KernelPlugin& plugin = options.kernel_plugins.emplace_back();
  plugin.set_name("oneshot_norm");
  plugin.set_version("1.0");
  plugin.set_sha256(std::string(64, 'a'));
  plugin.set_loaded(true);
  Start(std::move(options));
  v1::RunResult run;
  ASSERT_TRUE(stub_->Run(Context().get(), Request(2, {8}, {v1::VARIANT_AUTO}), &run).ok());
  ASSERT_EQ(run.cases_size(), 1);
  const v1::CaseResult& c = run.cases(0);
  EXPECT_EQ(c.variant(), v1::VARIANT_AUTO);
  EXPECT_EQ(c.resolved_variant(), v1::VARIANT_PLUGIN);
  EXPECT_EQ(c.plugin().name(), "oneshot_norm");
  EXPECT_EQ(c.plugin().version(), "1.0");
  EXPECT_EQ(c.plugin().sha256(), std::string(64, 'a'));
  EXPECT_THAT(c.message(), HasSubstr("auto -> plugin:oneshot_norm: tune table cpu_w2.json"));
  ASSERT_EQ(pool_.calls().size(), 1u);
  EXPECT_EQ(pool_.calls()[0].request.variant(), v1::VARIANT_PLUGIN);
  EXPECT_EQ(pool_.calls()[0].request.plugin(), "oneshot_norm");
}

TEST_F(ServiceTest, AutoDoesNotPickAPluginColltestdDidNotLoad) {
  const std::string table = R"({"kind": "colltest-tune-table", "version": 1, "backend": "cpu",
      "world": 2, "dtype": "bf16", "mode": "eager", "n": 1024, "rows": [
      {"m": 1, "best": "plugin:oneshot_norm",
       "us": {"one_stage": 9.0, "lamport_tb": 8.0, "plugin:oneshot_norm": 4.0}},
      {"m": 64, "best": "plugin:oneshot_norm", "us": {"plugin:oneshot_norm": 4.0}}]})";
  const TuneTables tables({*ParseTuneTable(table, "cpu_w2.json")});
  ServiceOptions options = CpuOptions();
  options.tune = &tables;
  // Given but refused when it was checked: not loaded.
  v1::KernelPlugin& refused = options.kernel_plugins.emplace_back();
  refused.set_name("oneshot_norm");
  refused.set_loaded(false);
  refused.set_refused("abi_version = 2: this worker loads version 1");
  Start(std::move(options));
  v1::RunResult run;
  ASSERT_TRUE(stub_->Run(Context().get(), Request(2, {1, 64}, {v1::VARIANT_AUTO}), &run).ok());
  ASSERT_EQ(run.cases_size(), 2);
  const v1::CaseResult& fallback = run.cases(0);
  EXPECT_EQ(fallback.variant(), v1::VARIANT_AUTO);
  EXPECT_EQ(fallback.resolved_variant(), v1::VARIANT_LAMPORT_TB);
  EXPECT_FALSE(fallback.has_plugin());
  EXPECT_THAT(fallback.message(),
              HasSubstr("auto -> lamport_tb: plugin:oneshot_norm of the table is not loaded, the "
                        "fastest of colltest's own variants: tune table cpu_w2.json"));
  const v1::CaseResult& none = run.cases(1);
  EXPECT_EQ(none.status(), v1::CASE_STATUS_UNSUPPORTED);
  EXPECT_THAT(none.message(), HasSubstr("auto: plugin:oneshot_norm of the table is not loaded "
                                        "(colltestd --kernel-plugin) and tune table cpu_w2.json"));
  ASSERT_EQ(pool_.calls().size(), 1u) << "no worker is asked for the unsupported case";
  EXPECT_EQ(pool_.calls()[0].request.variant(), v1::VARIANT_LAMPORT_TB);
  EXPECT_EQ(pool_.calls()[0].request.plugin(), "");
}

}  // namespace
}  // namespace colltest::server

namespace colltest::server {
namespace {

using namespace std::chrono_literals;

// Other processes on the devices, as the worker's --users would list them.
class FakeUsersProbe final : public DeviceUsersProbe {
 public:
  void Set(std::vector<DeviceUser> users) {
    std::lock_guard<std::mutex> lock(mu_);
    users_ = std::move(users);
  }
  absl::StatusOr<DeviceUsers> Users(absl::Span<const uint32_t>) override {
    std::lock_guard<std::mutex> lock(mu_);
    return DeviceUsers{"nvml", users_};
  }

 private:
  std::mutex mu_;
  std::vector<DeviceUser> users_;
};

// The runs in the history, newest first.
std::vector<v1::RunSummary> Runs(v1::CollectiveTest::Stub& stub) {
  grpc::ClientContext context;
  v1::ListRunsResponse list;
  EXPECT_TRUE(stub.ListRuns(&context, {}, &list).ok());
  return {list.runs().begin(), list.runs().end()};
}

class NeighbourServiceTest : public ServiceTest {
 protected:
  void StartWithProbe() {
    ServiceOptions options = CpuOptions();
    options.users_probe = &probe_;
    options.machine.set_hostname("node-7");
    Start(std::move(options));
  }
  std::pair<grpc::Status, v1::HealthResponse> Health(const v1::HealthRequest& request,
                                                     std::chrono::seconds deadline = 30s) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + deadline);
    v1::HealthResponse response;
    grpc::Status status = stub_->Health(&context, request, &response);
    return {status, response};
  }

  FakeUsersProbe probe_;
};

TEST_F(NeighbourServiceTest, RunOnDevicesOthersUseIsRefusedBusyAndNotRecordedUnlessForced) {
  StartWithProbe();
  probe_.Set({{1, 4242, "python3", 20ull << 30}, {0, getpid(), "colltestd", 0}});
  v1::RunResult run;
  v1::RunRequest request = Request(2, {1});
  const grpc::Status refused = stub_->Run(Context().get(), request, &run);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(refused.error_message(),
              ::testing::StartsWith("BUSY: device 1 is used by pid 4242 (python3"));
  EXPECT_TRUE(Runs(*stub_).empty());
  EXPECT_TRUE(pool_.calls().empty());

  // Its own process is no neighbour; nor is a process on other devices.
  probe_.Set({{0, getpid(), "colltestd", 0}, {3, 4242, "python3", 0}});
  ASSERT_TRUE(stub_->Run(Context().get(), request, &run).ok());
  EXPECT_EQ(run.state(), v1::RUN_STATE_DONE);

  probe_.Set({{1, 4242, "python3", 20ull << 30}});
  request.mutable_spec()->set_force(true);
  ASSERT_TRUE(stub_->Run(Context().get(), request, &run).ok());
  EXPECT_EQ(run.state(), v1::RUN_STATE_DONE);
  EXPECT_EQ(Runs(*stub_).size(), 2u);
}

// A child of colltestd that is not (yet) a worker of the pool's groups, as the workers of a group
// that recovery is starting after a crash are, holds the devices by design: no BUSY.
TEST_F(NeighbourServiceTest, ItsOwnChildrenAreNoNeighboursEvenOutsideThePool) {
  StartWithProbe();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  probe_.Set({{1, child, "colltest-worker", 1ull << 30}});
  v1::RunResult run;
  const grpc::Status status = stub_->Run(Context().get(), Request(2, {1}), &run);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(run.state(), v1::RUN_STATE_DONE);
}

TEST_F(NeighbourServiceTest, HealthOnBusyDevicesAnswersBusyWithTheLastVerdictUnlessForced) {
  StartWithProbe();
  auto [status, fresh] = Health({});
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_FALSE(fresh.busy());
  probe_.Set({{2, 4242, "python3", 0}});
  auto [busy_status, busy] = Health({});
  ASSERT_TRUE(busy_status.ok()) << busy_status.error_message();
  EXPECT_TRUE(busy.busy());
  EXPECT_THAT(busy.busy_reason(), ::testing::StartsWith("BUSY: device 2 is used by pid 4242"));
  EXPECT_EQ(busy.status(), fresh.status());
  EXPECT_EQ(busy.verdict_unix_ms(), fresh.verdict_unix_ms());
  EXPECT_EQ(busy.machine().hostname(), "node-7");

  v1::HealthRequest forced;
  forced.set_force(true);
  auto [forced_status, checked] = Health(forced);
  ASSERT_TRUE(forced_status.ok()) << forced_status.error_message();
  EXPECT_FALSE(checked.busy());
  EXPECT_EQ(checked.status(), v1::CASE_STATUS_OK) << checked.message();
}

TEST_F(NeighbourServiceTest, HealthNamesTheMachineAndARecentVerdictRunsNothing) {
  StartWithProbe();
  auto [status, fresh] = Health({});
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(fresh.machine().hostname(), "node-7");
  EXPECT_EQ(fresh.level(), v1::HEALTH_LEVEL_QUICK);
  EXPECT_GT(fresh.verdict_unix_ms(), 0);
  const size_t calls = pool_.calls().size();
  v1::HealthRequest periodic;
  periodic.set_max_verdict_age_ms(60000);
  auto [cached_status, cached] = Health(periodic);
  ASSERT_TRUE(cached_status.ok());
  EXPECT_TRUE(cached.cached());
  EXPECT_EQ(cached.verdict_unix_ms(), fresh.verdict_unix_ms());
  EXPECT_EQ(pool_.calls().size(), calls);
}

TEST_F(NeighbourServiceTest, HealthGoesBetweenTwoCasesOfASweepThatStillFinishes) {
  StartWithProbe();
  pool_.CloseGate();
  v1::RunRequest sweep = Request(4, {1, 2, 3, 4});
  sweep.mutable_spec()->set_n(0, 4096);  // the health profile's cases have another n
  auto slow = std::async(std::launch::async, [&] { return SweepAll(sweep); });
  pool_.WaitForCalls(1);
  auto health = std::async(std::launch::async, [&] { return Health({}); });
  ASSERT_FALSE(QueuedRunId().empty());
  // The record comes just before the ticket; let the ticket reach the queue.
  std::this_thread::sleep_for(100ms);
  pool_.OpenGate();
  auto [health_status, verdict] = health.get();
  auto [events, sweep_status] = slow.get();
  ASSERT_TRUE(health_status.ok()) << health_status.error_message();
  EXPECT_EQ(verdict.status(), v1::CASE_STATUS_OK) << verdict.message();
  ASSERT_TRUE(sweep_status.ok());
  EXPECT_EQ(events.back().summary().state(), v1::RUN_STATE_DONE);
  EXPECT_EQ(events.back().summary().cases_size(), 4);

  // The sweep's first case, then every case of the health check, then the rest of the sweep.
  std::string order;
  for (const FakeWorkerPool::Call& call : pool_.calls()) {
    const char c = call.request.n() == 4096 ? 's' : 'h';
    if (order.empty() || order.back() != c) order.push_back(c);
  }
  EXPECT_EQ(order, "shs");
}

TEST_F(NeighbourServiceTest, HealthThatCannotStartBeforeItsDeadlineAnswersBusyNamingTheRun) {
  StartWithProbe();
  auto [status, fresh] = Health({});
  ASSERT_TRUE(status.ok());
  pool_.CloseGate();  // a case that does not end
  const size_t calls = pool_.calls().size();
  auto run = std::async(std::launch::async, [&] { return SweepAll(Request(2, {1})); });
  pool_.WaitForCalls(calls + 1);
  const std::vector<v1::RunSummary> runs = Runs(*stub_);
  ASSERT_FALSE(runs.empty());
  const std::string run_id = runs.front().run_id();

  v1::HealthRequest request;
  request.add_devices(1);
  request.add_devices(2);
  const auto start = std::chrono::steady_clock::now();
  auto [busy_status, busy] = Health(request, 2s);
  const auto waited = std::chrono::steady_clock::now() - start;
  pool_.OpenGate();
  ASSERT_TRUE(busy_status.ok()) << busy_status.error_message();
  EXPECT_LT(waited, 1800ms);  // gave up 1 s before the deadline, not at it
  EXPECT_GE(waited, 900ms);
  EXPECT_TRUE(busy.busy());
  EXPECT_THAT(busy.busy_reason(),
              ::testing::StartsWith(absl::StrCat("devices 1,2 busy with run ", run_id, " of ")));
  // No verdict on exactly these devices yet.
  EXPECT_EQ(busy.status(), v1::CASE_STATUS_UNSPECIFIED);
  EXPECT_EQ(busy.machine().hostname(), "node-7");
  auto [events, run_status] = run.get();
  ASSERT_TRUE(run_status.ok());
  EXPECT_EQ(events.back().summary().state(), v1::RUN_STATE_DONE);
}

}  // namespace
}  // namespace colltest::server
