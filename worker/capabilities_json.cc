#include "worker/capabilities_json.h"

#include "absl/strings/str_cat.h"
#include "common/names.h"

namespace colltest::worker {

std::string CapabilitiesJson(const colltest::worker::v1::Capabilities& capabilities) {
  // Variant names are the command line's (common/names.h): plain identifiers, nothing to escape.
  std::string json = R"({"variants":[)";
  for (int i = 0; i < capabilities.variants_size(); ++i) {
    absl::StrAppend(&json, i == 0 ? "\"" : ",\"", common::VariantName(capabilities.variants(i)),
                    "\"");
  }
  const auto flag = [](bool b) { return b ? "true" : "false"; };
  absl::StrAppend(&json, R"(],"uses_shared_memory_segments":)",
                  flag(capabilities.uses_shared_memory_segments()), R"(,"graph_mode":)",
                  flag(capabilities.graph_mode()), R"(,"reports_devices":)",
                  flag(capabilities.reports_devices()), "}");
  return json;
}

}  // namespace colltest::worker
