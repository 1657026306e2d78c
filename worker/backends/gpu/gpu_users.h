// `colltest-worker --users`: which processes use this machine's GPUs (server/devices/device_users.h
// reads the line). CUDA asks NVML for the processes with a context on each device (source "nvml");
// HIP, which has no such query, looks for processes holding the device's render node open
// (source "proc").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace colltest::gpu {

// The --users JSON line for `devices` (runtime indices, as the probe numbers them; empty: every
// device). This process is left out. When no source works, source "none" with the reason in
// "error": the controller then refuses nothing.
std::string DeviceUsersJson(std::vector<uint32_t> devices);

}  // namespace colltest::gpu
