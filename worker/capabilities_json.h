// A backend's capabilities (colltest.worker.v1.Capabilities, the same message its Init reply
// carries) as the JSON object `colltest-worker --probe` prints, which colltestd reads before any
// worker is started (server/devices/backend_probe.h):
//   {"variants":["one_stage",...],"uses_shared_memory_segments":true,"graph_mode":false,
//    "reports_devices":false}
#pragma once

#include <nlohmann/json.hpp>

#include "colltest/v1/worker.pb.h"

namespace colltest::worker {

// Ordered: the keys come out in the order above, for readers that compare the probe's text.
nlohmann::ordered_json CapabilitiesJson(const colltest::worker::v1::Capabilities& capabilities);

}  // namespace colltest::worker
