// A plugin report as one JSON object (colltest-worker --check-plugin prints it; colltestd reads
// it): the masks spelt as names, so that people and programs read the same thing.
#pragma once

#include <nlohmann/json.hpp>

#include "worker/plugins/kernel_plugin.h"

namespace colltest::worker::plugins {

// {"path", "sha256", "loaded", "refused", "name", "version", "variant", "backends": ["cpu", ...],
//  "dtypes": ["bf16", ...], "world_sizes": [2, ...], "epilogues": ["none", ...],
//  "graph_capture", "max_elements"}; the struct's fields only when it was read.
nlohmann::ordered_json PluginReportJson(const PluginReport& report);

}  // namespace colltest::worker::plugins
