// Which backend colltestd runs and which devices it offers. The controller never touches a GPU
// runtime itself: it asks `colltest-worker --probe --backend B`, which prints one JSON line
//   {"backend":"cuda","devices":[{"index":0,"name":"NVIDIA H200","memory_bytes":150...,
//    "uuid":"GPU-...","pci_bus_id":"0000:19:00.0","serial":"1654922003581"},...],
//    "driver_version":"13.0","runtime_version":"13.0","links":[{"a":0,"b":1,"p2p":true,
//    "performance_rank":0,"native_atomics":true,"kind":"nvlink","hops":0,"lanes":18},...],
//    "capabilities":{"variants":["one_stage",...],"uses_shared_memory_segments":false,
//    "graph_mode":true,"reports_devices":true}}
// and falls back to the cpu backend's virtual ranks where no GPU answers. Everything after
// memory_bytes describes the machine (server/devices/machine_identity.h); an older worker's line
// without it still parses, with those fields empty (a link's kind then follows its p2p flag: "p2p"
// or "none"). The capabilities are what the backend's Init reply will carry (worker/backend.h):
// what the controller decides before any worker runs (variants offered, users probe, machine
// identity, health profile) follows them, never the backend's name. A line without them is refused:
// a worker that does not say what it can do cannot be served.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "colltest/v1/colltest.pb.h"
#include "colltest/v1/worker.pb.h"
#include "server/devices/device_placement.h"

namespace colltest::server {

struct BackendInfo {
  std::string backend;  // "cpu", "cuda" or "hip"
  std::vector<colltest::v1::Device> devices;
  std::string note;            // why auto chose what it chose, for the log
  std::string driver_version;  // as the probe reported them; "" when it did not
  std::string runtime_version;
  std::vector<colltest::v1::Link> links;  // between devices (a < b), as the probe reported them
  colltest::worker::v1::Capabilities capabilities;  // as the probe reported them
  uint32_t ranks_per_gpu = 1;                       // slots each GPU offers (WithSlotsPerGpu)
  // With ranks_per_gpu > 1: whether the kernels of processes on one GPU are time-sliced rather than
  // concurrent (colltestd --allow-time-slicing), and the flag round trip the probe measured
  // between two of them, 0 when none was (server/devices/concurrency_check.h).
  bool time_sliced = false;
  double kernel_round_trip_us = 0;
  // The kernel plugins given to colltestd, each checked for this backend (kernel_plugins.h).
  std::vector<colltest::v1::KernelPlugin> kernel_plugins;
  // The host name colltestd reports (colltestd --hostname): in a Kubernetes pod gethostname(2)
  // gives the pod's name, which changes with every restart, while the node's name is what an
  // operator looks for and what keys the machine's history. Empty: HostName().
  std::string hostname;
};

// This host's name (gethostname(2)); "unknown" when it has none to give.
std::string HostName();

// `probed` (a backend without devices of its own: Capabilities.reports_devices false, the cpu
// backend) with `ranks` virtual devices named "<backend> rank i", UUID "<backend>-<host>-<i>",
// every pair linked through shared memory (kind "shm", p2p: each rank maps the others' segments).
BackendInfo WithVirtualDevices(BackendInfo probed, uint32_t ranks);

// Parses the probe's output (the first line that is a JSON object).
absl::StatusOr<BackendInfo> ParseProbeOutput(absl::string_view output);

// How a worker command ended, with what it printed.
struct CommandOutcome {
  std::string command;     // the command line, for messages
  std::string output;      // its stdout
  bool timed_out = false;  // it outlived the timeout and was killed
  bool exited = false;     // it exited (else a signal ended it)
  int exit_code = 0;
  int signal = 0;
};

// Runs `worker args...` and says how it ended; an error only when it cannot start. One that
// outlives `timeout` is killed.
absl::StatusOr<CommandOutcome> RunWorkerCommandOutcome(const std::string& worker,
                                                       const std::vector<std::string>& args,
                                                       absl::Duration timeout);

// "exit status N" or "signal N".
std::string DescribeEnd(const CommandOutcome& outcome);

// Runs `worker args...` and returns its stdout; an error when it cannot start, exits non-zero or
// outlives `timeout` (then it is killed).
absl::StatusOr<std::string> RunWorkerCommand(const std::string& worker,
                                             const std::vector<std::string>& args,
                                             absl::Duration timeout);

// RunWorkerCommand(worker, {"--probe", "--backend", backend}, timeout).
absl::StatusOr<std::string> RunProbe(const std::string& worker, const std::string& backend,
                                     absl::Duration timeout);

using ProbeFn = std::function<absl::StatusOr<std::string>(const std::string& worker,
                                                          const std::string& backend)>;

// `requested` is the --backend flag; every backend is probed, the cpu one too (for its
// capabilities: one exec of the worker, a few milliseconds). A backend that reports no devices of
// its own gets `cpu_ranks` virtual ones. auto: the probe's answer when it found real devices, else
// the cpu backend (probed again when the first answer was not its own). cpu / cuda / hip: the
// probe must answer for that backend, with at least one device when it reports devices. `only`
// (the --devices flag) then restricts the devices; naming one that does not exist is an error.
absl::StatusOr<BackendInfo> ResolveBackend(const std::string& requested, uint32_t cpu_ranks,
                                           const std::vector<uint32_t>& only,
                                           const std::string& worker, const ProbeFn& probe);

// Every GPU of `info` offered as `ranks_per_gpu` devices of its own (colltestd --ranks-per-gpu,
// docs/shared-gpu.md). Interleaved, so that the first devices are distinct GPUs and a group takes
// separate GPUs before it shares one: with G GPUs, device i is slot i / G of the i % G-th GPU.
// Each keeps its GPU's name, memory, UUID, bus id and serial, with physical_index (the GPU's own
// index) and slot set; two slots of one GPU are linked by kind "same_gpu", slots of two GPUs by
// their GPUs' link. 1 leaves `info` as it is; a backend with virtual devices (cpu) is refused.
absl::StatusOr<BackendInfo> WithSlotsPerGpu(BackendInfo info, uint32_t ranks_per_gpu);

// The GPU of each of `info`'s devices (Device.physical_index), for the worker pool and the users
// probe.
DevicePlacement PlacementOf(const BackendInfo& info);

}  // namespace colltest::server
