#include "worker/plugins/plugin_report_json.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "common/names.h"

namespace colltest::worker::plugins {
namespace {

// The ABI's dtype and epilogue values are the public API's, so that both read the same names.
static_assert(COLLTEST_DTYPE_BF16 == v1::DTYPE_BF16 && COLLTEST_DTYPE_FP16 == v1::DTYPE_FP16 &&
              COLLTEST_DTYPE_FP32 == v1::DTYPE_FP32);
static_assert(COLLTEST_EPILOGUE_NONE == v1::EPILOGUE_NONE &&
              COLLTEST_EPILOGUE_FP8_TOKEN == v1::EPILOGUE_FP8_TOKEN &&
              COLLTEST_EPILOGUE_FP8_TENSOR == v1::EPILOGUE_FP8_TENSOR &&
              COLLTEST_EPILOGUE_NVFP4 == v1::EPILOGUE_NVFP4);
static_assert(COLLTEST_FP8_E4M3FN == v1::FP8_FORMAT_E4M3FN &&
              COLLTEST_FP8_E4M3FNUZ == v1::FP8_FORMAT_E4M3FNUZ);

// The names of the bits of `mask` that `names` knows, in the table's order.
nlohmann::ordered_json Names(uint32_t mask,
                             const std::vector<std::pair<uint32_t, const char*>>& names) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& [bit, name] : names) {
    if ((mask & bit) != 0) out.push_back(name);
  }
  return out;
}

}  // namespace

nlohmann::ordered_json PluginReportJson(const PluginReport& r) {
  nlohmann::ordered_json json = {{"path", r.path},
                                 {"sha256", r.sha256},
                                 {"loaded", r.refused.empty()},
                                 {"refused", r.refused}};
  if (r.name.empty()) return json;  // the struct was not read (or its name not checked)
  json["name"] = r.name;
  json["version"] = r.version;
  json["variant"] = "plugin:" + r.name;
  json["backends"] = Names(r.backends, {{COLLTEST_BACKEND_CPU, "cpu"},
                                        {COLLTEST_BACKEND_CUDA, "cuda"},
                                        {COLLTEST_BACKEND_HIP, "hip"}});
  // The same names as every other output (common/names.h): the ABI's values are the proto's.
  nlohmann::ordered_json dtypes = nlohmann::ordered_json::array();
  for (uint32_t d : {COLLTEST_DTYPE_BF16, COLLTEST_DTYPE_FP16, COLLTEST_DTYPE_FP32}) {
    if ((r.dtypes & (1u << d)) != 0) dtypes.push_back(common::DTypeName(static_cast<v1::DType>(d)));
  }
  json["dtypes"] = dtypes;
  nlohmann::ordered_json worlds = nlohmann::ordered_json::array();
  for (uint32_t w : {2u, 4u, 8u}) {
    if ((r.world_sizes & (1u << w)) != 0) worlds.push_back(w);
  }
  json["world_sizes"] = worlds;
  nlohmann::ordered_json epilogues = nlohmann::ordered_json::array();
  for (uint32_t e : {COLLTEST_EPILOGUE_NONE, COLLTEST_EPILOGUE_FP8_TOKEN,
                     COLLTEST_EPILOGUE_FP8_TENSOR, COLLTEST_EPILOGUE_NVFP4}) {
    if ((r.epilogues & (1u << e)) != 0)
      epilogues.push_back(common::EpilogueName(static_cast<v1::Epilogue>(e)));
  }
  json["epilogues"] = epilogues;
  json["graph_capture"] = (r.flags & COLLTEST_KERNEL_GRAPH_CAPTURE) != 0;
  json["max_elements"] = r.max_elements;
  return json;
}

}  // namespace colltest::worker::plugins
