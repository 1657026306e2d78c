// The part of a rank's result that every backend fills the same way: calls, timing, diff, and OK or
// WRONG from the diff. A hang is the backend's own (its diagnostic record differs).
#pragma once

#include <cstdint>
#include <vector>

#include "colltest/v1/colltest.pb.h"
#include "worker/numerics/diff.h"

namespace colltest::worker {

void ReportCase(const char* variant, int64_t calls, uint32_t grid_blocks,
                std::vector<double> samples_us, const DiffSummary& diff, bool hung,
                colltest::v1::RankResult* result);

}  // namespace colltest::worker
