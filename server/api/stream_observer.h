// How a gRPC handler watches its run: a unary call only notices the client leaving; a Sweep stream
// also sends progress and results, each Write bounded by the send watchdog's timeout.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "colltest/v1/colltest.grpc.pb.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/sync_stream.h"
#include "server/net/send_watchdog.h"
#include "server/runs/run_executor.h"

namespace colltest::server {

inline constexpr char kClientStoppedReading[] = "the client stopped reading its stream";

class UnaryObserver final : public RunObserver {
 public:
  explicit UnaryObserver(grpc::ServerContext* context) : context_(context) {}
  bool ClientGone() override { return context_->IsCancelled(); }

 private:
  grpc::ServerContext* context_;
};

// Streams progress and results. A failed Write means the client is gone; a Write still blocked
// after the watchdog's timeout (the client stopped reading: no flow-control window) cancels the
// call, which unblocks it. Either way ClientGone() turns true and the run is cancelled, freeing its
// devices.
class StreamObserver final : public RunObserver {
 public:
  // `watchdog` is not owned and must outlive the observer.
  StreamObserver(grpc::ServerContext* context, grpc::ServerWriter<colltest::v1::SweepEvent>* writer,
                 SendWatchdog* watchdog)
      : context_(context), writer_(writer), watchdog_(watchdog) {}

  bool ClientGone() override;
  std::string ClientGoneReason() override;
  void OnQueued(const std::string& run_id, uint32_t runs_ahead, uint32_t total) override;
  void OnStarted(const std::string& run_id, uint32_t total) override;
  void OnCase(const std::string& run_id, const colltest::v1::CaseResult& result, uint32_t done,
              uint32_t total) override;

  // False once a write failed or timed out; later writes are skipped.
  bool Write(const colltest::v1::SweepEvent& event);

 private:
  void Progress(const std::string& run_id, colltest::v1::RunState state, uint32_t done,
                uint32_t total, uint32_t runs_ahead);

  grpc::ServerContext* const context_;
  grpc::ServerWriter<colltest::v1::SweepEvent>* const writer_;
  SendWatchdog* const watchdog_;
  bool write_failed_ = false;
  // Set from the watchdog's thread, read by the run's.
  std::atomic<bool> send_timed_out_{false};
};

}  // namespace colltest::server
