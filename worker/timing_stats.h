// Per-rank latency statistics over the timed calls (docs/design.md section 6).
#pragma once

#include <vector>

#include "colltest/v1/colltest.pb.h"

namespace colltest::worker {

colltest::v1::TimingStats Summarize(std::vector<double> samples_us);

}  // namespace colltest::worker
