// Expansion of a validated SweepSpec into the worker cases it stands for. The order (for each n,
// for each m, for each variant, for each mode, for each epilogue) keeps one buffer shape resident
// as long as possible and puts the variants of one shape next to each other, which is how results
// are compared; the epilogues of one kernel come innermost, as they change only its last step.
#pragma once

#include <cstdint>
#include <vector>

#include "colltest/v1/colltest.pb.h"
#include "colltest/v1/worker.pb.h"

namespace colltest::server {

struct SweepPlan {
  std::vector<uint32_t> devices;  // rank i runs on devices[i]
  std::vector<colltest::worker::v1::CaseRequest> cases;
};

// The number of cases `spec` expands to: m x n x variants x modes x epilogues, an empty modes or
// epilogues list counted as the one default it stands for.
uint64_t SweepCaseCount(const colltest::v1::SweepSpec& spec);

// `spec` must be the normalized output of ValidateSpec. Case ids are first_case_id, +1, ...: ids
// stay unique across runs so that a worker's log line can be traced to one case.
SweepPlan PlanSweep(const colltest::v1::SweepSpec& spec, uint64_t first_case_id = 0);

// Ranks that share a GPU whose processes' kernels are time-sliced (colltestd --allow-time-slicing)
// wait a time slice for each other where concurrent kernels wait a microsecond: every case's
// timeout (which bounds each wait) grows to at least kTimeSlicedWaitsPerTimeout round trips for
// each of the `ranks_on_gpu` ranks, with `round_trip_us` as the start-up probe measured it, at
// most `max_timeout_ms`.
inline constexpr double kTimeSlicedWaitsPerTimeout = 100;
void GrowTimeoutsForTimeSlicing(SweepPlan& plan, uint32_t ranks_on_gpu, double round_trip_us,
                                uint32_t max_timeout_ms);

}  // namespace colltest::server
