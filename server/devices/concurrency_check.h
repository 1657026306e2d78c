// Whether ranks that share a GPU can run (colltestd --ranks-per-gpu, docs/shared-gpu.md). Those
// ranks spin-wait on each other's flags, so the kernels of their processes must be resident on the
// GPU together. Without that (NVIDIA without MPS: each process's context gets time slices) every
// wait costs a time slice: measured on an H200, a flag round trip between two processes took
// 4.5 ms time-sliced and 0.8 us under MPS. The controller never touches a GPU runtime: it asks
// `colltest-worker --concurrency-probe --backend B --device P`, which prints one JSON line
//   {"concurrent":true,"round_trip_us":0.81,"round_trips":1000,"elapsed_ms":0.83}
//   {"concurrent":false,"round_trip_us":4482.13,"round_trips":22,"elapsed_ms":100.02}
//   {"concurrent":false,"round_trips":0,"elapsed_ms":400.00,"note":"..."}
//   {"concurrent":false,"error":"cudaIpcOpenMemHandle: ... (second process)"}
// (worker/backends/gpu/concurrency_probe.h), and decides here whether colltestd may start.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "server/devices/backend_probe.h"

namespace colltest::server {

// What the probe's line says.
struct ConcurrencyProbeResult {
  bool concurrent = false;
  double round_trip_us = 0;  // the median round trip; 0 when none completed
  uint32_t round_trips = 0;
  std::string note;   // why no round trip was measured, or the cpu backend's remark
  std::string error;  // the call that failed; "" when the probe ran
};

// Parses the first line of `output` that is a JSON object with a boolean "concurrent".
absl::StatusOr<ConcurrencyProbeResult> ParseConcurrencyProbe(absl::string_view output);

struct ConcurrencyVerdict {
  bool checked = false;      // false: one rank per GPU, nothing was probed
  bool time_sliced = false;  // ranks on one GPU wait a time slice per flag (allowed to start)
  double round_trip_us = 0;  // the probe's median round trip; 0 when none was measured
  uint32_t device = 0;       // the GPU probed (its physical index)
  std::string summary;       // one line for the log: what was measured and what follows
};

// Runs the probe on GPU `device`; returns the worker's stdout.
using ConcurrencyProbeFn = std::function<absl::StatusOr<std::string>(
    const std::string& worker, const std::string& backend, uint32_t device)>;

// A cold GPU creates two contexts before the probe's kernels run (about a second at most).
inline constexpr absl::Duration kConcurrencyProbeTimeout = absl::Seconds(5);

// RunWorkerCommand(worker, {"--concurrency-probe", "--backend", backend, "--device", device},
// kConcurrencyProbeTimeout).
absl::StatusOr<std::string> RunConcurrencyProbe(const std::string& worker,
                                                const std::string& backend, uint32_t device);

// With info.ranks_per_gpu > 1: probes the first GPU (devices[0].physical_index). Concurrent: a
// verdict to log. Time-sliced, or a probe that failed or printed nothing readable:
// FailedPrecondition naming the measured round trip (or the error) and the ways out (MPS,
// --allow-time-slicing, --ranks-per-gpu 1), unless `allow_time_slicing`; then a verdict with
// time_sliced set (a failed probe counts as time-sliced: nothing says otherwise). With one rank
// per GPU nothing is probed.
absl::StatusOr<ConcurrencyVerdict> CheckConcurrentKernels(const BackendInfo& info,
                                                          bool allow_time_slicing,
                                                          const std::string& worker,
                                                          const ConcurrencyProbeFn& probe);

}  // namespace colltest::server
