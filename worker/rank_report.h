// The part of a rank's result that every backend fills the same way: calls, timing, diff, and OK or
// WRONG from the diff. A hang is the backend's own (its diagnostic record differs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "colltest/v1/colltest.pb.h"
#include "worker/numerics/diff.h"
#include "worker/numerics/quant_checker.h"
#include "worker/numerics/quant_plan.h"

namespace colltest::worker {

// A result for `rank` on `device` with no status yet and no suspect peer.
colltest::v1::RankResult NewRankResult(uint32_t rank, uint32_t device);
// Marks `result` UNSUPPORTED with the reason and returns it.
colltest::v1::RankResult Unsupported(colltest::v1::RankResult result, const std::string& why);

// Adds `from` (one check's statistics) to `into`: counts summed, maxima kept, the first bad
// element kept from the first that had one, and `passed` recomputed for the profile's pass
// fraction.
void MergeDiff(const DiffSummary& from, double min_pass_fraction, DiffSummary* into);

void ReportCase(absl::string_view variant, int64_t calls, uint32_t grid_blocks,
                std::vector<double> samples_us, const DiffSummary& diff, bool hung,
                colltest::v1::RankResult* result);

// Names the call at the end of a first-bad text as the driver numbers it ("... (call 7, note)"),
// replacing the one the check wrote, and sets first_bad_call to it; an empty text stays empty.
void RenameFirstBadCall(std::string& first_bad, int64_t& first_bad_call, int64_t call,
                        const std::string& note);

// After ReportCase, for a quantising epilogue (nothing otherwise): fills result->quant and the
// fp8 format written, and makes the rank WRONG when a code or scale is outside the quant
// tolerance, with a message that names the epilogue, the rule broken and the first bad code.
void ReportQuant(absl::string_view variant, const QuantPlan& plan, const QuantCheckSummary& q,
                 bool hung, colltest::v1::RankResult* result);

}  // namespace colltest::worker
