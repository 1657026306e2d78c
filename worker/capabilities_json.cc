#include "worker/capabilities_json.h"

#include <string>

#include "common/names.h"

namespace colltest::worker {

nlohmann::ordered_json CapabilitiesJson(const colltest::worker::v1::Capabilities& capabilities) {
  // Variant names are the command line's (common/names.h).
  nlohmann::ordered_json variants = nlohmann::ordered_json::array();
  for (int i = 0; i < capabilities.variants_size(); ++i) {
    variants.push_back(std::string(common::VariantName(capabilities.variants(i))));
  }
  return {{"variants", std::move(variants)},
          {"uses_shared_memory_segments", capabilities.uses_shared_memory_segments()},
          {"graph_mode", capabilities.graph_mode()},
          {"reports_devices", capabilities.reports_devices()}};
}

}  // namespace colltest::worker
