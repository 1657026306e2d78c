// The one interface between a worker process and its backend (cpu, cuda or hip). The worker's
// gRPC service forwards to it; a backend knows nothing of gRPC.
#pragma once

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "colltest/v1/colltest.pb.h"
#include "colltest/v1/worker.pb.h"

namespace colltest::worker {

class Backend {
 public:
  virtual ~Backend() = default;

  // Allocates this rank's registered buffers and exports their handles.
  virtual absl::StatusOr<colltest::worker::v1::InitReply> Init(
      const colltest::worker::v1::InitRequest& request) = 0;
  // Opens every peer's handles once and keeps them.
  virtual absl::Status Connect(const colltest::worker::v1::ConnectRequest& request) = 0;
  // Runs one case (warm-up, timed calls or a stress loop, checks) and reports this rank's result.
  // Protocol failures are results (WRONG, HANG), not errors.
  virtual absl::StatusOr<colltest::v1::RankResult> RunCase(
      const colltest::worker::v1::CaseRequest& request) = 0;
  // Restores barrier epochs, Signal slots, armed staging and counters after a failed case.
  virtual absl::Status Reset() = 0;
  // Unmaps and releases what Init allocated.
  virtual void Release() = 0;
};

}  // namespace colltest::worker
