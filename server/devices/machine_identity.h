// The machine a run ran on (colltest.v1.MachineIdentity): host, backend, devices, driver and
// runtime versions, the links between the devices, and what colltest was built from. Recorded
// with every run; its key names the machine for baselines.
#pragma once

#include <cstdint>
#include <string>

#include "absl/types/span.h"
#include "colltest/v1/colltest.pb.h"
#include "server/devices/backend_probe.h"

namespace colltest::server {

// The identity of this host running `info` (the resolved backend and devices). GPU links without
// a kind get "p2p" or "none" from their p2p flag. A backend whose devices are virtual
// (Capabilities.reports_devices false: the cpu backend) has no driver or runtime of its own: it
// reports its name as the driver and the kernel release as its runtime, its links "shm".
colltest::v1::MachineIdentity BuildMachineIdentity(const BackendInfo& info,
                                                   const std::string& colltest_version,
                                                   const std::string& build_commit);

// 16 lowercase hex digits: FNV-1a 64 over the host name, the backend and every device's name and
// UUID in index order, each length-prefixed. Stable across builds and platforms (a baseline found
// by key must survive a rebuild); the other fields of `machine` do not enter it.
std::string MachineKey(const colltest::v1::MachineIdentity& machine);

// The most of `devices` that are slots of one GPU of `machine` (Device.physical_index): 1 when
// each is a GPU of its own or unknown to `machine`.
uint32_t RanksPerGpu(const colltest::v1::MachineIdentity& machine,
                     absl::Span<const uint32_t> devices);

}  // namespace colltest::server
