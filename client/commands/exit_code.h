// Process exit codes of the CLI (docs/design.md section 7): scripts branch on them, so they
// are fixed.
//
//   0  every case OK or UNSUPPORTED; for `compare`, no regression
//   1  some case WRONG
//   2  some case HANG
//   3  RPC failure (a missing baseline included), bad flag, ERROR case, or a run that did not
//      complete (CANCELLED, FAILED, INTERRUPTED)
//   4  `compare`, or `run` / `sweep --compare-baseline`: a regression against the reference run,
//      and nothing worse. The run's own code (1 to 3) outranks it: a broken run is reported as
//      broken, not as slower.
//   5  BUSY: the devices were in use (other processes, or other clients' runs past the health
//      check's deadline) and nothing was checked; `--force` runs anyway. A health answer that is
//      BUSY but carries an earlier verdict still exits 5: that verdict is not a new check.
//   6  fleet check (`health --targets`): some node could not be reached or answered garbage, and
//      no reached node was worse than OK (1 to 3 outrank it: a node known bad is worse news)
#pragma once

#include "colltest/v1/colltest.pb.h"

namespace colltest::client {

inline constexpr int kExitOk = 0;
inline constexpr int kExitWrong = 1;
inline constexpr int kExitHang = 2;
inline constexpr int kExitError = 3;
inline constexpr int kExitRegressed = 4;
inline constexpr int kExitBusy = 5;
inline constexpr int kExitUnreachable = 6;

// The most severe outcome of a run, in the order error > hang > wrong > ok. An ERROR case or an
// aborted run means the results are incomplete, so it outranks any verdict drawn from them.
// A case whose status the server left unset counts as an error rather than as OK.
int ExitCodeForRun(const v1::RunResult& run);

// The same order over a health check's verdict, its targets and its cases: the worst wins, so a
// response whose summary disagrees with its details cannot read as healthy. A slow target (WARN)
// is not a failure and leaves the code at 0; an unset overall status is an error.
int ExitCodeForHealth(const v1::HealthResponse& health);

// 4 when the comparison found a regression (an ONLY_A case counts), else 0. Read from the cases as
// well as from `regressed`, so that a response whose summary disagrees with its cases cannot read
// as clean.
int ExitCodeForComparison(const v1::CompareResponse& comparison);

// A run followed by its comparison: the run's code when it is not 0, else the comparison's.
int ExitCodeForRunAndComparison(int run_code, const v1::CompareResponse& comparison);

}  // namespace colltest::client
