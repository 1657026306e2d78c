// What the two kinds of backend announce (worker/backends/cpu/cpu_backend.h CpuCapabilities,
// worker/backends/gpu/gpu_backend.h GpuCapabilities), written out for the server's tests, which
// do not link a backend, and their probe lines' "capabilities" objects.
#pragma once

#include <initializer_list>

#include "colltest/v1/worker.pb.h"

namespace colltest::server::testing {

// Capabilities with `variants` and the three flags.
inline colltest::worker::v1::Capabilities MakeCapabilities(
    std::initializer_list<colltest::v1::Variant> variants, bool shm, bool graph, bool devices) {
  colltest::worker::v1::Capabilities caps;
  for (colltest::v1::Variant v : variants) caps.add_variants(v);
  caps.set_uses_shared_memory_segments(shm);
  caps.set_graph_mode(graph);
  caps.set_reports_devices(devices);
  return caps;
}

// The cpu backend: four protocol variants, eager only, virtual devices, shared-memory buffers.
inline colltest::worker::v1::Capabilities CpuCapabilities() {
  using namespace colltest::v1;
  return MakeCapabilities(
      {VARIANT_ONE_STAGE, VARIANT_TWO_KERNEL, VARIANT_LAMPORT, VARIANT_LAMPORT_TB}, true, false,
      false);
}

// A GPU backend: the four, the NCCL/RCCL anchor and the dispatcher, graphs, real devices.
inline colltest::worker::v1::Capabilities GpuCapabilities() {
  using namespace colltest::v1;
  return MakeCapabilities({VARIANT_ONE_STAGE, VARIANT_TWO_KERNEL, VARIANT_LAMPORT,
                           VARIANT_LAMPORT_TB, VARIANT_NCCL, VARIANT_AUTO},
                          false, true, true);
}

inline constexpr char kCpuCapabilitiesJson[] =
    R"({"variants":["one_stage","two_kernel","lamport","lamport_tb"],)"
    R"("uses_shared_memory_segments":true,"graph_mode":false,"reports_devices":false})";
inline constexpr char kGpuCapabilitiesJson[] =
    R"({"variants":["one_stage","two_kernel","lamport","lamport_tb","nccl","auto"],)"
    R"("uses_shared_memory_segments":false,"graph_mode":true,"reports_devices":true})";

}  // namespace colltest::server::testing
