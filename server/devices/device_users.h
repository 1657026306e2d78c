// Which other processes use this server's devices, so that a sweep or health check on a GPU that
// a job is using is refused BUSY (naming them) instead of disturbing the job and measuring noise
// (docs/neighbours.md). The controller never touches a GPU library itself: it asks
// `colltest-worker --users --backend B`, which prints one JSON line
//   {"backend":"cuda","source":"nvml","users":[{"device":1,"pid":4242,"name":"python3",
//    "memory_bytes":21474836480}]}
// ("source" says how it looked: "nvml" on CUDA, "proc" (/proc/*/fd against the render nodes) on
// HIP, "none" on the cpu backend, whose virtual devices no other process can use, or when no
// source was usable; then nothing is refused).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "server/devices/device_placement.h"

namespace colltest::server {

struct DeviceUser {
  uint32_t device = 0;
  int64_t pid = 0;
  std::string name;           // the process's command name; "" when unreadable (another pid
                              // namespace: a process of another container)
  uint64_t memory_bytes = 0;  // GPU memory it holds; 0 when unknown
};

struct DeviceUsers {
  std::string source;  // "nvml", "proc" or "none"
  std::vector<DeviceUser> users;
};

// Parses the worker's --users line; INVALID_ARGUMENT naming what is wrong.
absl::StatusOr<DeviceUsers> ParseDeviceUsers(absl::string_view line);

class DeviceUsersProbe {
 public:
  virtual ~DeviceUsersProbe() = default;
  // Every process using any of `devices` (this server's own workers included: the caller removes
  // them). An error when the probe could not be run.
  virtual absl::StatusOr<DeviceUsers> Users(absl::Span<const uint32_t> devices) = 0;
};

// `inner` asked about the GPUs behind this server's device indices (colltestd --ranks-per-gpu:
// several indices are slots of one GPU, and the worker knows only GPUs): a user of a GPU is
// reported on every asked index that is a slot of it.
std::unique_ptr<DeviceUsersProbe> OnPhysicalDevices(std::unique_ptr<DeviceUsersProbe> inner,
                                                    DevicePlacement placement);

// Runs `worker --users --backend backend --devices LIST`, killed after `timeout`.
std::unique_ptr<DeviceUsersProbe> CreateWorkerUsersProbe(std::string worker, std::string backend,
                                                         absl::Duration timeout = absl::Seconds(5));

// OK when no process other than `own_pids` (colltestd and its workers) uses `devices`; else
// FAILED_PRECONDITION "BUSY: device 1 is used by pid 4242 (python3, 20.0 GiB), ...; --force runs
// anyway". A probe that fails, or whose source is "none", refuses nothing (logged once). NVIDIA's
// MPS server (a name starting with kMpsProcessPrefix) is not a neighbour: ranks that share a GPU
// run through it.
absl::Status CheckDevicesFree(DeviceUsersProbe& probe, absl::Span<const uint32_t> devices,
                              absl::Span<const int> own_pids);

// nvidia-cuda-mps-server as /proc/PID/comm gives it: cut to 15 characters.
inline constexpr char kMpsProcessPrefix[] = "nvidia-cuda-mps";

// Whether a status is the BUSY refusal above (clients map it to exit code 5).
bool IsBusy(const absl::Status& status);

}  // namespace colltest::server
