// Hand-built HealthResponses, one per verdict, shared by the formatter and exit-code tests.
#ifndef COLLTEST_TESTS_UNIT_CLIENT_SAMPLE_HEALTH_H_
#define COLLTEST_TESTS_UNIT_CLIENT_SAMPLE_HEALTH_H_

#include <cstdint>
#include <vector>

#include "colltest/v1/colltest.pb.h"

namespace colltest::client::testing {

v1::HealthTarget MakeTarget(std::vector<uint32_t> devices, v1::CaseStatus status);

// OK over devices 0, 1, 2 with --pairs: every rank and pair OK, pair 0-2 slow (2.10 x the
// median, a WARN). Two groups serving, two cases, two run ids, 4.3 s.
v1::HealthResponse SampleHealthOk();

// HANG over devices 0, 1: device 1 waited for device 0 in "lamport phase B". Device 0 is OK with
// suspect_peer left at its proto default 0, which no output may read as a suspect. The group is
// RECOVERING after one recovery.
v1::HealthResponse SampleHealthHang();

// ERROR before any target could be judged: no ranks, no pairs, the group DEGRADED.
v1::HealthResponse SampleHealthError();

}  // namespace colltest::client::testing

#endif  // COLLTEST_TESTS_UNIT_CLIENT_SAMPLE_HEALTH_H_
