// The comparison of two runs behind the Compare RPC: cases are matched by their shape and each
// gets a verdict, so that a slowdown or a new failure between a reference run (a baseline) and a
// candidate shows up as one line, and a CI job can fail on it.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "colltest/v1/colltest.pb.h"

namespace colltest::server {

// CompareRequest.threshold 0 means this: a 5 % slowdown of the median is tolerated.
inline constexpr double kDefaultCompareThreshold = 0.05;

// Compares the cases of `a` (the reference) with those of `b` (the candidate). A threshold that is
// not a positive number means kDefaultCompareThreshold. Fills everything but `baseline`, which only
// the caller knows.
//
// Cases are matched by (variant, mode, world_size, m, n, dtype, epilogue, keep_normed, fp8_format),
// with an unset mode, dtype or epilogue read as the value the server runs (eager, bf16, none),
// keep_normed only next to a quantising epilogue, and `auto` matched as `auto` whatever it
// dispatched to. The fp8 format is the one the case wrote (fp8 epilogues only): e4m3fn and
// e4m3fnuz cases never match, and a case that wrote none (it never ran: ERROR, UNSUPPORTED)
// matches either, preferring the same format. Cases of one run that share a key (the same shape
// under two patterns) are matched in order of appearance. The verdict of a matched case:
//   REGRESSION   the status got worse (OK = UNSUPPORTED < WRONG < ERROR < HANG; unset = ERROR),
//                or, both cases checked (OK or WRONG), mismatches, max ulp, NaN/Inf, or the
//                quantised output's code or scale mismatches grew;
//                or, both timed, median_b / median_a > 1 + threshold and p10_b > p90_a: the
//                central 80 % of the samples do not overlap, so the run-to-run spread measured
//                in both runs does not explain the slowdown.
//   IMPROVEMENT  the status got better, or median_b / median_a < 1 / (1 + threshold) and
//                p90_b < p10_a.
//   SAME         otherwise.
// A percentile the server left at 0 is read as the median (no spread known). A case of `a` that
// `b` lacks is ONLY_A and counts as a regression, since a dropped case hides its results; a case
// new in `b` is ONLY_B, for information. Cases are listed in `a`'s order, then those only in `b`.
colltest::v1::CompareResponse CompareRuns(const colltest::v1::RunResult& a,
                                          const colltest::v1::RunResult& b, double threshold);

// The most ranks of the run's group that shared one GPU: RunResult.ranks_per_gpu, with 0 (a record
// older than the field) read as 1.
uint32_t EffectiveRanksPerGpu(const colltest::v1::RunResult& run);

// Whether two runs may be compared at all: their ranks were placed alike, with the same effective
// ranks_per_gpu and both or neither time-sliced. Ranks sharing a GPU measure kernel overhead and
// ranks on separate GPUs a link, so a difference there is no regression. Else FAILED_PRECONDITION
// naming both, e.g. "run r-2 shared GPUs (4 ranks per GPU) and baseline nightly (run r-1) ran on
// separate GPUs: their timings measure different things; compare runs placed alike". The names
// are the caller's ("run r-1", "baseline nightly (run r-1)"); the message follows their order.
absl::Status CheckPlacedAlike(const colltest::v1::RunResult& first, absl::string_view first_name,
                              const colltest::v1::RunResult& second, absl::string_view second_name);

}  // namespace colltest::server
