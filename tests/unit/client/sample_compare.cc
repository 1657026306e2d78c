#include "tests/unit/client/sample_compare.h"

#include <string>

namespace colltest::client::testing {
namespace {

v1::CaseComparison Case(v1::Variant variant, v1::Mode mode, uint32_t m, v1::CompareVerdict verdict,
                        double median_a, double median_b) {
  v1::CaseComparison c;
  c.set_variant(variant);
  c.set_mode(mode);
  c.set_world_size(4);
  c.set_m(m);
  c.set_n(7168);
  c.set_dtype(v1::DTYPE_BF16);
  c.set_verdict(verdict);
  if (verdict != v1::COMPARE_VERDICT_ONLY_B) {
    c.set_status_a(v1::CASE_STATUS_OK);
    c.mutable_timing_a()->set_median_us(median_a);
    c.mutable_timing_a()->set_p10_us(median_a - 0.2);
    c.mutable_timing_a()->set_p90_us(median_a + 0.3);
  }
  if (verdict != v1::COMPARE_VERDICT_ONLY_A) {
    c.set_status_b(v1::CASE_STATUS_OK);
    c.mutable_timing_b()->set_median_us(median_b);
    c.mutable_timing_b()->set_p10_us(median_b - 0.2);
    c.mutable_timing_b()->set_p90_us(median_b + 0.3);
  }
  if (median_a > 0 && median_b > 0) c.set_ratio(median_b / median_a);
  return c;
}

v1::MachineIdentity Machine(const std::string& driver, const std::string& commit) {
  v1::MachineIdentity m;
  m.set_key("k1");
  m.set_hostname("gpu-7");
  m.set_backend("cuda");
  m.set_driver_version(driver);
  m.set_runtime_version("12.8");
  m.set_colltest_version("0.1.0");
  m.set_build_commit(commit);
  for (uint32_t i = 0; i < 4; ++i) {
    v1::Device* d = m.add_devices();
    d->set_index(i);
    d->set_name("NVIDIA H200");
    d->set_uuid("GPU-" + std::to_string(i));
  }
  return m;
}

v1::CompareResponse Header() {
  v1::CompareResponse r;
  r.set_run_a("r-base");
  r.set_run_b("r-42");
  r.set_baseline("default");
  r.set_threshold(0.05);
  *r.mutable_machine_a() = Machine("12.4", "abc");
  *r.mutable_machine_b() = Machine("13.0", "def");
  return r;
}

}  // namespace

v1::CompareResponse SampleComparison() {
  v1::CompareResponse r = Header();
  v1::CaseComparison* slower = r.add_cases();
  *slower = Case(v1::VARIANT_LAMPORT, v1::MODE_GRAPH, 64, v1::COMPARE_VERDICT_REGRESSION, 12.1, 14);
  slower->set_reason("median 12.10 us -> 14.00 us (+15.7 %), p10 13.80 us > p90 12.40 us");
  v1::CaseComparison* same = r.add_cases();
  *same = Case(v1::VARIANT_ONE_STAGE, v1::MODE_EAGER, 1, v1::COMPARE_VERDICT_SAME, 5, 5.1);
  same->set_reason("median 5.00 us -> 5.10 us (+2.0 %), within the 5 % threshold");
  v1::CaseComparison* faster = r.add_cases();
  *faster = Case(v1::VARIANT_AUTO, v1::MODE_GRAPH, 8, v1::COMPARE_VERDICT_IMPROVEMENT, 20, 15);
  faster->set_dtype(v1::DTYPE_FP16);
  faster->set_reason("median 20.00 us -> 15.00 us (-25.0 %), p90 15.30 us < p10 19.80 us");
  v1::CaseComparison* broke = r.add_cases();
  *broke = Case(v1::VARIANT_LAMPORT_TB, v1::MODE_EAGER, 1, v1::COMPARE_VERDICT_REGRESSION, 8, 8);
  broke->set_ratio(0);
  broke->set_status_b(v1::CASE_STATUS_WRONG);
  broke->mutable_diff_b()->set_mismatches(12);
  broke->set_reason("status OK -> WRONG, mismatches 0 -> 12");
  v1::CaseComparison* gone = r.add_cases();
  *gone = Case(v1::VARIANT_NCCL, v1::MODE_EAGER, 1, v1::COMPARE_VERDICT_ONLY_A, 30, 0);
  gone->set_reason("missing from run b");
  v1::CaseComparison* fresh = r.add_cases();
  *fresh = Case(v1::VARIANT_TWO_KERNEL, v1::MODE_EAGER, 1, v1::COMPARE_VERDICT_ONLY_B, 0, 9);
  fresh->set_reason("new in run b");
  r.set_regressions(3);
  r.set_improvements(1);
  r.set_regressed(true);
  r.set_message(
      "3 of 6 cases regressed (worst: lamport_tb eager w=4 m=1 n=7168 bf16 status OK -> WRONG)");
  return r;
}

v1::CompareResponse SampleCleanComparison() {
  v1::CompareResponse r = Header();
  *r.mutable_machine_a() = r.machine_b();
  v1::CaseComparison* a = r.add_cases();
  *a = Case(v1::VARIANT_LAMPORT, v1::MODE_GRAPH, 64, v1::COMPARE_VERDICT_SAME, 12.1, 12.2);
  a->set_reason("median 12.10 us -> 12.20 us (+0.8 %), within the 5 % threshold");
  v1::CaseComparison* b = r.add_cases();
  *b = Case(v1::VARIANT_ONE_STAGE, v1::MODE_EAGER, 1, v1::COMPARE_VERDICT_SAME, 5, 5);
  b->set_reason("median 5.00 us -> 5.00 us (+0.0 %), within the 5 % threshold");
  r.set_message("no regression in 2 cases");
  return r;
}

}  // namespace colltest::client::testing
