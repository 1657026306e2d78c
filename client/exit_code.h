// Process exit codes of the CLI (DESIGN section 7): scripts branch on them, so they are fixed.
#ifndef COLLTEST_CLIENT_EXIT_CODE_H_
#define COLLTEST_CLIENT_EXIT_CODE_H_

#include "colltest/v1/colltest.pb.h"

namespace colltest::client {

inline constexpr int kExitOk = 0;     // every case OK or UNSUPPORTED
inline constexpr int kExitWrong = 1;  // some case WRONG
inline constexpr int kExitHang = 2;   // some case HANG
inline constexpr int kExitError = 3;  // RPC failure, bad flag, ERROR case, cancelled or failed run

// The most severe outcome of a run, in the order error > hang > wrong > ok. An ERROR case or an
// aborted run means the results are incomplete, so it outranks any verdict drawn from them.
// A case whose status the server left unset counts as an error rather than as OK.
int ExitCodeForRun(const v1::RunResult& run);

// The same order over a health check's verdict, its targets and its cases: the worst wins, so a
// response whose summary disagrees with its details cannot read as healthy. A slow target (WARN)
// is not a failure and leaves the code at 0; an unset overall status is an error.
int ExitCodeForHealth(const v1::HealthResponse& health);

}  // namespace colltest::client

#endif  // COLLTEST_CLIENT_EXIT_CODE_H_
