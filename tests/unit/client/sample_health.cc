#include "tests/unit/client/sample_health.h"

#include <utility>

#include "tests/unit/client/sample_run.h"

namespace colltest::client::testing {
namespace {

v1::HealthTarget Timed(std::vector<uint32_t> devices, double latency_us, double ratio) {
  v1::HealthTarget t = MakeTarget(std::move(devices), v1::CASE_STATUS_OK);
  t.set_suspect_peer(-1);
  t.set_latency_us(latency_us);
  t.set_median_ratio(ratio);
  t.set_cases(12);
  return t;
}

v1::GroupHealth Group(std::vector<uint32_t> devices, v1::GroupState state) {
  v1::GroupHealth g;
  g.mutable_devices()->Add(devices.begin(), devices.end());
  g.set_state(state);
  g.set_since_unix_ms(1700000000000);
  return g;
}

}  // namespace

v1::HealthTarget MakeTarget(std::vector<uint32_t> devices, v1::CaseStatus status) {
  v1::HealthTarget t;
  t.mutable_devices()->Add(devices.begin(), devices.end());
  t.set_status(status);
  return t;
}

v1::HealthResponse SampleHealthOk() {
  v1::HealthResponse h;
  h.set_status(v1::CASE_STATUS_OK);
  h.set_message("healthy: 3 ranks, 3 pairs, 2 cases; WARN slow (x median): pair 0-2 at 2.10");
  *h.add_ranks() = Timed({0}, 12.5, 1.0);
  *h.add_ranks() = Timed({1}, 12.0, 0.96);
  *h.add_ranks() = Timed({2}, 13.0, 1.04);
  *h.add_pairs() = Timed({0, 1}, 8.0, 1.0);
  v1::HealthTarget slow = Timed({0, 2}, 16.8, 2.1);
  slow.set_slow(true);
  *h.add_pairs() = slow;
  *h.add_pairs() = Timed({1, 2}, 7.9, 0.99);
  *h.add_groups() = Group({0, 1, 2}, v1::GROUP_STATE_SERVING);
  *h.add_groups() = Group({0, 2}, v1::GROUP_STATE_SERVING);
  v1::CaseResult lamport = MakeCase(v1::VARIANT_LAMPORT, v1::CASE_STATUS_OK);
  lamport.set_world_size(3);
  lamport.mutable_timing()->set_median_us(12.5);
  *h.add_cases() = lamport;
  v1::CaseResult nccl = MakeCase(v1::VARIANT_NCCL, v1::CASE_STATUS_UNSUPPORTED);
  nccl.set_index(1);
  nccl.set_message("nccl: not built into the cpu backend");
  *h.add_cases() = nccl;
  h.set_wall_ms(4321);
  h.add_run_ids("r-7");
  h.add_run_ids("r-8");
  return h;
}

v1::HealthResponse SampleHealthHang() {
  v1::HealthResponse h;
  h.set_status(v1::CASE_STATUS_HANG);
  h.set_message("HANG: rank 1 waited for rank 0 in lamport phase B (lamport eager m=1)");
  v1::HealthTarget ok = MakeTarget({0}, v1::CASE_STATUS_OK);
  ok.set_latency_us(11.0);
  ok.set_median_ratio(1.0);
  *h.add_ranks() = ok;
  v1::HealthTarget hang = MakeTarget({1}, v1::CASE_STATUS_HANG);
  hang.set_suspect_peer(0);
  hang.set_phase("lamport phase B");
  hang.set_message("timed out after 5000 ms");
  *h.add_ranks() = hang;
  v1::GroupHealth group = Group({0, 1}, v1::GROUP_STATE_RECOVERING);
  group.set_recoveries(1);
  group.set_last_recovery_ms(850.5);
  group.set_message("respawned after a hang; canary pending");
  *h.add_groups() = group;
  v1::CaseResult c = MakeCase(v1::VARIANT_LAMPORT, v1::CASE_STATUS_HANG);
  c.set_message("rank 1 waited for rank 0 in lamport phase B");
  v1::RankResult* r = c.add_ranks();
  r->set_rank(1);
  r->set_device(1);
  r->set_status(v1::CASE_STATUS_HANG);
  r->set_suspect_peer(0);
  r->set_phase("lamport phase B");
  *h.add_cases() = c;
  h.set_wall_ms(5250);
  h.add_run_ids("r-9");
  *h.mutable_machine() = SampleMachine();
  return h;
}

v1::HealthResponse SampleHealthError() {
  v1::HealthResponse h;
  h.set_status(v1::CASE_STATUS_ERROR);
  h.set_message("ERROR: workers for devices 0,1 failed to start (lamport eager m=1)");
  v1::GroupHealth group = Group({0, 1}, v1::GROUP_STATE_DEGRADED);
  group.set_message("respawn failed");
  *h.add_groups() = group;
  h.set_wall_ms(150);
  return h;
}

v1::HealthResponse SampleHealthLong() {
  v1::HealthResponse h;
  h.set_status(v1::CASE_STATUS_OK);
  h.set_message("healthy: 2 ranks, 1 pair; WARN below expected bus bandwidth: pair 0-1");
  h.set_level(v1::HEALTH_LEVEL_LONG);
  h.set_verdict_unix_ms(1700000000000);
  *h.add_ranks() = Timed({0}, 10.0, 1.0);
  *h.add_ranks() = Timed({1}, 10.2, 1.02);
  v1::HealthTarget pair = Timed({0, 1}, 8.0, 1.0);
  pair.set_busbw_gbps(180);
  pair.set_expected_busbw_gbps(350);
  pair.set_below_expected(true);
  *h.add_pairs() = pair;
  v1::HealthSelfTest* self_test = h.mutable_self_test();
  self_test->set_ran(true);
  self_test->set_passed(true);
  self_test->set_fault("hang_end_sync:1");
  self_test->set_message("HANG found naming rank 1");
  *h.add_cases() = MakeCase(v1::VARIANT_LAMPORT, v1::CASE_STATUS_OK);
  h.set_wall_ms(61500);
  h.add_run_ids("r-10");
  *h.mutable_machine() = SampleMachine();
  return h;
}

v1::HealthResponse SampleHealthBusy() {
  v1::HealthResponse h = SampleHealthHang();
  h.set_busy(true);
  h.set_busy_reason("devices 0,1 in use by pid 4242 (python3)");
  h.set_verdict_unix_ms(1700000000000);
  return h;
}

}  // namespace colltest::client::testing
