// A CollectiveTest service for the gateway's tests, served in process: canned replies, errors on
// request (by run ID or sweep label), three sweep events, sweeps that wait to be cancelled ("slow"
// streams an event every 20 ms, "quiet" sends one and then nothing), and a record of what each
// call received (request and metadata).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "colltest/v1/colltest.grpc.pb.h"
#include "grpcpp/server.h"

namespace colltest::http::testing {

namespace v1 = ::colltest::v1;

// Run IDs (GetRun) and sweep labels (Sweep) that make the fake fail with this code and message.
inline constexpr char kBadRunMessage[] = "run_id \"bad\": expected r-<digits> (got 3 characters)";
inline constexpr char kRefusedSweepMessage[] = "spec.world_size: 99 exceeds the 8 devices";

class FakeService final : public v1::CollectiveTest::Service {
 public:
  grpc::Status ListDevices(grpc::ServerContext* context, const v1::ListDevicesRequest* request,
                           v1::ListDevicesResponse* response) override;
  grpc::Status ListRuns(grpc::ServerContext* context, const v1::ListRunsRequest* request,
                        v1::ListRunsResponse* response) override;
  grpc::Status GetRun(grpc::ServerContext* context, const v1::GetRunRequest* request,
                      v1::RunResult* response) override;
  grpc::Status Sweep(grpc::ServerContext* context, const v1::RunRequest* request,
                     grpc::ServerWriter<v1::SweepEvent>* writer) override;
  grpc::Status Cancel(grpc::ServerContext* context, const v1::CancelRequest* request,
                      v1::CancelResponse* response) override;
  grpc::Status Health(grpc::ServerContext* context, const v1::HealthRequest* request,
                      v1::HealthResponse* response) override;
  grpc::Status SetBaseline(grpc::ServerContext* context, const v1::SetBaselineRequest* request,
                           v1::Baseline* response) override;
  grpc::Status ListBaselines(grpc::ServerContext* context, const v1::ListBaselinesRequest* request,
                             v1::ListBaselinesResponse* response) override;
  grpc::Status Compare(grpc::ServerContext* context, const v1::CompareRequest* request,
                       v1::CompareResponse* response) override;

  // The canned ListDevices reply.
  static v1::ListDevicesResponse Devices();
  // What GetRun answers for run id "with-cases": a run of three cases.
  static v1::RunResult RunWithCases(const std::string& run_id);

  // The metadata of the last call, every value of every key.
  std::multimap<std::string, std::string> last_metadata() const;
  // The last request of any method, parsed as M.
  template <typename M>
  M last_request() const {
    absl::MutexLock lock(&mu_);
    M message;
    message.ParseFromString(last_request_);
    return message;
  }

  // Set when a slow or quiet sweep saw its call cancelled.
  std::atomic<bool> sweep_cancelled{false};
  // Health of device 99 waits up to 10 s for its call to be cancelled; whether it was.
  std::atomic<bool> health_cancelled{false};
  // Set when a slow or quiet sweep started streaming.
  std::atomic<bool> sweep_streaming{false};

 private:
  void Record(const grpc::ServerContext& context, const google::protobuf::Message& request);

  mutable absl::Mutex mu_;
  std::multimap<std::string, std::string> metadata_ ABSL_GUARDED_BY(mu_);
  std::string last_request_ ABSL_GUARDED_BY(mu_);
};

// The fake, served without a port; its in-process channel is the gateway's.
struct InProcessService {
  InProcessService();
  ~InProcessService();
  FakeService service;
  std::unique_ptr<grpc::Server> server;
  std::shared_ptr<grpc::Channel> channel;
};

}  // namespace colltest::http::testing
