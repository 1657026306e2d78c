// The server's limits on a SweepSpec, and the one place that checks a request against them. Every
// rejection is INVALID_ARGUMENT (fault injection while disabled: FAILED_PRECONDITION) with a
// message that names the field, the value given and the limit, so a user can fix the request
// without reading the server's source. ValidateSpec reports every independent problem of a spec
// at once, their messages joined by "; " under the first one's code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "colltest/v1/colltest.pb.h"
#include "common/defaults.h"  // kDefaultCaseTimeoutMs, kDefaultMaxCaseBytes, the quant scales
#include "common/text.h"
#include "server/devices/device_placement.h"

namespace colltest::server {

inline constexpr uint32_t kMaxRows = 65536;    // m
inline constexpr uint32_t kMaxHidden = 16384;  // n
inline constexpr uint32_t kMaxIters = 100000;
inline constexpr uint32_t kMaxWarmup = 10000;
inline constexpr uint32_t kMaxStressCalls = 100000;
inline constexpr uint32_t kMaxTimeoutMs = 600000;
inline constexpr uint32_t kMaxCases = 4096;  // expanded m x n x variants x modes x epilogues
inline constexpr uint32_t kMaxGridBlocks = 1024;
inline constexpr uint32_t kMaxPlugins = 16;  // SweepSpec.plugins
// A timing probe of the consumer's re-arm store needs a few repeats to show their cost; every
// repeat is one more store per pack per call, so 2^32 of them turn any case into a HANG that tears
// the group down. 64 keeps the worst case within a small multiple of a normal one.
inline constexpr uint32_t kMaxArmRepeat = 64;
// The gate of `auto` between one_stage and lamport: any value above the largest case means
// "never lamport"; 1 TiB is far above any case and still catches a typo such as 10^19.
inline constexpr uint64_t kMaxLamportMinBytes = 1ull << 40;
inline constexpr size_t kMaxLabelBytes = common::kMaxLabelBytes;  // common::CheckLabel
// Run ids are "r-" and 32 hex digits (run_id.h); anything longer is not one of ours.
inline constexpr size_t kMaxRunIdBytes = 64;

inline constexpr uint32_t kDefaultWarmup = 5;
inline constexpr uint32_t kDefaultIters = 20;
inline constexpr float kDefaultEps = 1e-6f;

struct ServerLimits {
  std::string backend = "cpu";    // "cpu", "cuda" or "hip"; only used in messages
  std::vector<uint32_t> devices;  // device indices this server may use, ascending
  uint64_t max_case_bytes = kDefaultMaxCaseBytes;
  bool allow_fault_injection = false;
  uint32_t max_active_runs_per_owner = 16;  // queued or running at once; 0: no limit
  // The GPU behind each device index (colltestd --ranks-per-gpu; docs/shared-gpu.md).
  DevicePlacement placement;
  // Above 0: ranks that share a GPU are time-sliced (colltestd --allow-time-slicing), with this
  // flag round trip between two processes' kernels; their case timeouts grow (sweep_plan.h).
  double time_sliced_round_trip_us = 0;
  // The kernel plugins colltestd loaded (docs/plugins.md): SweepSpec.plugins names them.
  std::vector<colltest::v1::KernelPlugin> kernel_plugins;
};

// Checks `spec` and returns a normalized copy (or every problem found; a check that needs an
// earlier one to pass, such as n's pack size that needs a known dtype, is skipped when it failed):
// world_size and devices filled in explicitly, UNSPECIFIED enums replaced by their defaults (bf16,
// normal, strict, eager; quant_tolerance strict; fp8_format stays UNSPECIFIED: the device's, which
// only the worker knows), no epilogues by [none], and zero warmup, iters, timeout_ms, eps,
// fp8_scale and nvfp4_global_scale replaced by the defaults (common/defaults.h for the scales). The
// normalized spec is what is run and what the history keeps, so a stored run says exactly what was
// measured.
absl::StatusOr<colltest::v1::SweepSpec> ValidateSpec(const colltest::v1::SweepSpec& spec,
                                                     const ServerLimits& limits);

// A fault (SweepSpec.fault, HealthRequest.fault) for a group of `world` ranks: "" is none;
// otherwise FAILED_PRECONDITION while fault injection is disabled, then INVALID_ARGUMENT naming
// `field` for a fault outside the grammar of common/fault_spec.h (or a rank outside the world).
absl::Status ValidateFault(absl::string_view field, absl::string_view fault, uint32_t world,
                           const ServerLimits& limits);

// Kernel plugins by name (SweepSpec.plugins, HealthRequest.plugins): at most kMaxPlugins, each
// one colltestd loaded (docs/plugins.md), each once; INVALID_ARGUMENT "plugins[i]" else.
absl::Status ValidatePlugins(const google::protobuf::RepeatedPtrField<std::string>& plugins,
                             const ServerLimits& limits);

// The run id of GetRun and Cancel: non-empty, at most kMaxRunIdBytes bytes of printable ASCII, so
// that an id echoed in a NOT_FOUND message or a log line is short and cannot carry control bytes.
// `field` names it in the message (GetRun's "run_id", Compare's "run_a").
absl::Status ValidateRunId(absl::string_view run_id, absl::string_view field = "run_id");

}  // namespace colltest::server
