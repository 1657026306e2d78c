// Hand-built HealthResponses, one per verdict, shared by the formatter and exit-code tests.
#ifndef COLLTEST_TESTS_UNIT_CLIENT_SAMPLE_HEALTH_H_
#define COLLTEST_TESTS_UNIT_CLIENT_SAMPLE_HEALTH_H_

#include <cstdint>
#include <vector>

#include "colltest/v1/colltest.pb.h"

namespace colltest::client::testing {

v1::HealthTarget MakeTarget(std::vector<uint32_t> devices, v1::CaseStatus status);

// OK over devices 0, 1, 2 with --pairs: every rank and pair OK, pair 0-2 slow (2.10 x the
// median, a WARN). Two groups serving, two cases, two run ids, 4.3 s. As an older server answers:
// no machine, level, self test or verdict time.
v1::HealthResponse SampleHealthOk();

// HANG over devices 0, 1 of SampleMachine(): device 1 waited for device 0 in "lamport phase B".
// Device 0 is OK with suspect_peer left at its proto default 0, which no output may read as a
// suspect. The group is RECOVERING after one recovery.
v1::HealthResponse SampleHealthHang();

// ERROR before any target could be judged: no ranks, no pairs, the group DEGRADED.
v1::HealthResponse SampleHealthError();

// Level long over SampleMachine(), verdict at 1700000000000, OK: ranks 0 and 1 OK; the self test
// planted hang_end_sync:1 and found it; pair 0-1 at 180.0 GB/s against an expected 350.0, below
// it (a WARN, not a failure).
v1::HealthResponse SampleHealthLong();

// BUSY: "devices 0,1 in use by pid 4242 (python3)", carrying SampleHealthHang() as the earlier
// verdict made at 1700000000000.
v1::HealthResponse SampleHealthBusy();

}  // namespace colltest::client::testing

#endif  // COLLTEST_TESTS_UNIT_CLIENT_SAMPLE_HEALTH_H_
