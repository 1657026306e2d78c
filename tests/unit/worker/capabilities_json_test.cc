// The capabilities' JSON object (worker/capabilities_json.h): the text `colltest-worker --probe`
// prints inside its line, keys in the documented order, as colltestd's probe tests hold it
// (tests/unit/server/test_capabilities.h).
#include "worker/capabilities_json.h"

#include "gtest/gtest.h"

namespace colltest::worker {
namespace {

TEST(CapabilitiesJson, PrintsTheVariantsAndFlagsInTheirOrder) {
  v1::Capabilities caps;
  for (auto v : {colltest::v1::VARIANT_ONE_STAGE, colltest::v1::VARIANT_TWO_KERNEL,
                 colltest::v1::VARIANT_LAMPORT, colltest::v1::VARIANT_LAMPORT_TB}) {
    caps.add_variants(v);
  }
  caps.set_uses_shared_memory_segments(true);
  EXPECT_EQ(CapabilitiesJson(caps).dump(),
            R"({"variants":["one_stage","two_kernel","lamport","lamport_tb"],)"
            R"("uses_shared_memory_segments":true,"graph_mode":false,"reports_devices":false})");
}

TEST(CapabilitiesJson, NoVariantsIsAnEmptyList) {
  v1::Capabilities caps;
  caps.set_graph_mode(true);
  caps.set_reports_devices(true);
  EXPECT_EQ(CapabilitiesJson(caps).dump(),
            R"({"variants":[],"uses_shared_memory_segments":false,"graph_mode":true,)"
            R"("reports_devices":true})");
}

}  // namespace
}  // namespace colltest::worker
