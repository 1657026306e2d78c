// Rendezvous of a fresh group: every rank exports its buffer handles, then every rank gets the
// whole table and opens its peers' buffers.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "colltest/v1/worker.pb.h"
#include "server/workers/worker_process.h"

namespace colltest::server {

// Init(rank i, world W, device, max_case_bytes, the most ranks of the group on one device and the
// slots of a device: docs/shared-gpu.md) on all ranks at once, then Connect(table of every
// rank's handles, rank 0's NCCL id) on all at once; each phase bounded by `timeout`. On the first
// failure `abort` runs (the caller kills the group, so that ranks blocked in a collective Connect
// fail at once) and the error names that rank. `init_replies` receives every Init reply that
// arrived (empty entries for the rest), on failure too, so the caller can release what the workers
// exported. `kernel_plugins`: the plugins every rank loads (docs/plugins.md).
absl::Status Rendezvous(absl::Span<const std::unique_ptr<WorkerProcess>> ranks,
                        uint64_t max_case_bytes, uint32_t ranks_on_device, uint32_t device_slots,
                        absl::Span<const colltest::v1::KernelPlugin> kernel_plugins,
                        absl::Duration timeout, const std::function<void()>& abort,
                        std::vector<colltest::worker::v1::InitReply>& init_replies);

}  // namespace colltest::server
