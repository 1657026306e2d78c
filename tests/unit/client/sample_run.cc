#include "tests/unit/client/sample_run.h"

namespace colltest::client::testing {

v1::CaseResult MakeCase(v1::Variant variant, v1::CaseStatus status) {
  v1::CaseResult c;
  c.set_variant(variant);
  c.set_mode(v1::MODE_EAGER);
  c.set_world_size(2);
  c.set_m(1);
  c.set_n(7168);
  c.set_dtype(v1::DTYPE_BF16);
  c.set_pattern(v1::PATTERN_NORMAL);
  c.set_residual(true);
  c.set_status(status);
  return c;
}

v1::MachineIdentity SampleMachine() {
  v1::MachineIdentity m;
  m.set_key("70f239823b92f8b4");
  m.set_hostname("node-7");
  m.set_backend("cuda");
  m.set_driver_version("580.159.04 (CUDA 13.0)");
  m.set_runtime_version("13.0");
  m.set_colltest_version("0.1.0");
  m.set_build_commit("3d57ade303ce");
  const char* uuids[] = {"GPU-8d1f0000-0000-0000-0000-000000000000",
                         "GPU-8d1f1111-1111-1111-1111-111111111111"};
  const char* buses[] = {"0000:19:00.0", "0000:3b:00.0"};
  for (uint32_t i = 0; i < 2; ++i) {
    v1::Device* d = m.add_devices();
    d->set_index(i);
    d->set_name("NVIDIA H200");
    d->set_memory_bytes(uint64_t{141} << 30);
    d->set_backend("cuda");
    d->set_uuid(uuids[i]);
    d->set_pci_bus_id(buses[i]);
  }
  m.mutable_devices(0)->set_serial("1654922012345");
  v1::Link* link = m.add_links();
  link->set_a(0);
  link->set_b(1);
  link->set_p2p(true);
  link->set_performance_rank(0);
  link->set_native_atomics(true);
  link->set_kind("nvlink");
  link->set_lanes(18);
  link->set_hops(1);
  return m;
}

v1::RunResult SampleRun() {
  v1::RunResult run;
  run.set_run_id("r-42");
  run.set_backend("cpu");
  run.set_state(v1::RUN_STATE_DONE);
  run.mutable_spec()->set_label("nightly");
  run.set_created_unix_ms(1700000000000);
  run.set_finished_unix_ms(1700000001000);
  *run.mutable_machine() = SampleMachine();

  v1::CaseResult ok = MakeCase(v1::VARIANT_LAMPORT, v1::CASE_STATUS_OK);
  ok.set_index(0);
  ok.set_m(64);
  ok.mutable_timing()->set_median_us(12.3);
  ok.mutable_timing()->set_p10_us(11.5);
  ok.mutable_timing()->set_p90_us(14.25);
  ok.mutable_timing()->set_samples(20);
  ok.set_algbw_gbps(37.5);
  ok.set_busbw_gbps(37.5);
  ok.mutable_diff()->set_checked(458752);
  ok.mutable_diff()->set_max_abs_err(0.0078125);
  ok.mutable_diff()->set_max_ulp(1);
  ok.mutable_diff()->set_first_bad_call(-1);
  ok.set_wall_ms(250);
  for (uint32_t r = 0; r < 2; ++r) {
    v1::RankResult* rank = ok.add_ranks();
    rank->set_rank(r);
    rank->set_device(r);
    rank->set_status(v1::CASE_STATUS_OK);
    // Rank 1 is the slow one, so the case's median is rank 1's.
    rank->mutable_timing()->set_median_us(r == 0 ? 6.15 : 12.3);
    rank->mutable_diff()->set_max_ulp(r);
    rank->mutable_diff()->set_first_bad_call(-1);
    rank->set_suspect_peer(-1);
    rank->set_calls(25);
    rank->set_grid_blocks(132);
  }
  *run.add_cases() = ok;

  v1::CaseResult wrong = MakeCase(v1::VARIANT_AUTO, v1::CASE_STATUS_WRONG);
  wrong.set_index(1);
  wrong.set_resolved_variant(v1::VARIANT_LAMPORT_TB);
  wrong.set_mode(v1::MODE_GRAPH);
  wrong.set_m(8);
  wrong.set_dtype(v1::DTYPE_FP16);
  wrong.set_message("3 mismatches, \"out\" <rank 1> & more");
  wrong.mutable_timing()->set_median_us(20);
  wrong.mutable_diff()->set_mismatches(3);
  wrong.mutable_diff()->set_max_abs_err(0.5);
  wrong.mutable_diff()->set_max_ulp(64);
  wrong.mutable_diff()->set_first_bad("out[3,17] got 1.5 want 1.25");
  wrong.mutable_diff()->set_first_bad_call(4);
  v1::RankResult* wrong_rank = wrong.add_ranks();
  wrong_rank->set_rank(1);
  wrong_rank->set_device(1);
  wrong_rank->set_status(v1::CASE_STATUS_WRONG);
  wrong_rank->set_suspect_peer(-1);
  *run.add_cases() = wrong;

  v1::CaseResult hang = MakeCase(v1::VARIANT_ONE_STAGE, v1::CASE_STATUS_HANG);
  hang.set_index(2);
  hang.set_message("rank 1 waited for rank 0 in start_sync");
  for (uint32_t r = 0; r < 2; ++r) {
    v1::RankResult* rank = hang.add_ranks();
    rank->set_rank(r);
    rank->set_device(r);
    rank->set_status(r == 1 ? v1::CASE_STATUS_HANG : v1::CASE_STATUS_OK);
    rank->set_suspect_peer(r == 1 ? 0 : -1);
    rank->set_phase(r == 1 ? "start_sync" : "");
  }
  *run.add_cases() = hang;

  v1::CaseResult unsupported = MakeCase(v1::VARIANT_NCCL, v1::CASE_STATUS_UNSUPPORTED);
  unsupported.set_index(3);
  unsupported.set_message("nccl: not built into the cpu backend");
  *run.add_cases() = unsupported;
  return run;
}

}  // namespace colltest::client::testing
