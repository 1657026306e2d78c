// A hand-built RunResult covering every case status, shared by the formatter and exit-code tests.
#ifndef COLLTEST_TESTS_UNIT_CLIENT_SAMPLE_RUN_H_
#define COLLTEST_TESTS_UNIT_CLIENT_SAMPLE_RUN_H_

#include "colltest/v1/colltest.pb.h"

namespace colltest::client::testing {

// Cases, in order:
//   0 lamport    eager W=2 m=64 n=7168 bf16  OK           (two ranks, timed)
//   1 auto       graph W=2 m=8  n=7168 fp16  WRONG        (dispatched to lamport_tb; message has
//                                                         a comma, quotes and XML specials)
//   2 one_stage  eager W=2 m=1  n=7168 bf16  HANG         (rank 1 waited for rank 0)
//   3 nccl       eager W=2 m=1  n=7168 bf16  UNSUPPORTED
//
// It ran on SampleMachine().
v1::RunResult SampleRun();

// node-7 (key 70f239823b92f8b4), two H200s: device 0 with serial 1654922012345, device 1 without
// one (the driver gave none), linked by 18 NVLinks.
v1::MachineIdentity SampleMachine();

v1::CaseResult MakeCase(v1::Variant variant, v1::CaseStatus status);

}  // namespace colltest::client::testing

#endif  // COLLTEST_TESTS_UNIT_CLIENT_SAMPLE_RUN_H_
