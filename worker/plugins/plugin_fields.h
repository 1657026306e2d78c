// The rules a plugin's exported colltest_kernel_v1_t must meet before colltest calls into it
// (docs/plugins.md): one function per struct, pure, so that every rule is tested on a struct
// without a shared library.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "colltest/kernel_plugin.h"

namespace colltest::worker::plugins {

// The bits each mask of version 1 may hold.
inline constexpr uint32_t kKnownBackends =
    COLLTEST_BACKEND_CPU | COLLTEST_BACKEND_CUDA | COLLTEST_BACKEND_HIP;
inline constexpr uint32_t kKnownDtypes =
    (1u << COLLTEST_DTYPE_BF16) | (1u << COLLTEST_DTYPE_FP16) | (1u << COLLTEST_DTYPE_FP32);
inline constexpr uint32_t kKnownWorlds = (1u << 2) | (1u << 4) | (1u << 8);
inline constexpr uint32_t kKnownEpilogues =
    (1u << COLLTEST_EPILOGUE_NONE) | (1u << COLLTEST_EPILOGUE_FP8_TOKEN) |
    (1u << COLLTEST_EPILOGUE_FP8_TENSOR) | (1u << COLLTEST_EPILOGUE_NVFP4);
inline constexpr uint32_t kKnownFlags = COLLTEST_KERNEL_GRAPH_CAPTURE;
inline constexpr size_t kMaxNameLength = 32;
inline constexpr size_t kMaxVersionLength = 64;

// OK when every field of `kernel` is within version 1's rules; otherwise INVALID_ARGUMENT naming
// the first field that is not, its value and the rule, e.g. "abi_version = 2: this worker loads
// version 1". Reads strings only after their pointers were checked.
absl::Status CheckKernelFields(const colltest_kernel_v1_t& kernel);

// "plugin:<name>", the variant's name in requests and results.
std::string PluginVariantName(const colltest_kernel_v1_t& kernel);

}  // namespace colltest::worker::plugins
