// One call of a kernel plugin as the ABI passes it (colltest_launch_v1_t), from a backend's
// buffers, and the message of an entry point that did not answer OK.
#pragma once

#include <cstdint>
#include <string>

#include "colltest/kernel_plugin.h"
#include "colltest/v1/worker.pb.h"
#include "worker/case_driver.h"
#include "worker/numerics/quant_plan.h"
#include "worker/plugins/plugin_group.h"

namespace colltest::worker::plugins {

// This rank's buffers of one call, in the backend's memory.
struct CallBuffers {
  const void* input = nullptr;
  const void* residual_in = nullptr;  // null without the residual add
  void* residual_out = nullptr;
  const void* weight = nullptr;
  void* out = nullptr;
  void* codes = nullptr;         // a quantising epilogue's outputs (QuantOutputs)
  void* row_scales = nullptr;    // fp8_token
  void* block_scales = nullptr;  // nvfp4
};

colltest_launch_v1_t LaunchOf(const CallBuffers& buffers,
                              const colltest::worker::v1::CaseRequest& req, const QuantPlan& quant,
                              float eps, uint32_t m, uint64_t call, void* stream);

// How an entry point's answer other than OK ends the case: UNSUPPORTED or ERROR with its
// EntryMessage.
CaseRuntime::KernelEnd EndOf(const std::string& variant, const char* entry, int64_t call,
                             const EntryResult& r);

// The rank a missing_rank fault keeps from launching the plugin: HANG, phase
// "fault: missing_rank".
CaseRuntime::KernelEnd MissingRankEnd(const std::string& variant, uint32_t rank);

}  // namespace colltest::worker::plugins
