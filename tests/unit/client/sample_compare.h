// Hand-built comparisons of two runs, shared by the formatter, exit-code and command tests.
#ifndef COLLTEST_TESTS_UNIT_CLIENT_SAMPLE_COMPARE_H_
#define COLLTEST_TESTS_UNIT_CLIENT_SAMPLE_COMPARE_H_

#include "colltest/v1/colltest.pb.h"

namespace colltest::client::testing {

// r-base (baseline "default") -> r-42, threshold 0.05, machine gpu-7 (key k1) whose driver went
// from 12.4 to 13.0. Cases, in order:
//   0 lamport    graph W=4 m=64 n=7168 bf16  REGRESSION  12.1 -> 14.0 us
//   1 one_stage  eager W=4 m=1  n=7168 bf16  SAME        5.0 -> 5.1 us
//   2 auto       graph W=4 m=8  n=7168 fp16  IMPROVEMENT 20.0 -> 15.0 us
//   3 lamport_tb eager W=4 m=1  n=7168 bf16  REGRESSION  OK -> WRONG (reason with a comma, '>')
//   4 nccl       eager W=4 m=1  n=7168 bf16  ONLY_A      (30.0 us in a)
//   5 two_kernel eager W=4 m=1  n=7168 bf16  ONLY_B      (9.0 us in b)
// 3 regressions (two REGRESSION, one ONLY_A), 1 improvement.
v1::CompareResponse SampleComparison();

// The same runs with every case SAME: no regression.
v1::CompareResponse SampleCleanComparison();

}  // namespace colltest::client::testing

#endif  // COLLTEST_TESTS_UNIT_CLIENT_SAMPLE_COMPARE_H_
