// What `devices` and `health` show of the node besides results: the worker groups' states
// (GroupHealth), so that an operator sees a group that is recovering or degraded next to the
// results that put it there, and the machine (MachineIdentity): which host, which physical devices,
// and how they are linked.
#pragma once

#include <cstdint>
#include <string>

#include "colltest/v1/colltest.pb.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "nlohmann/json.hpp"

namespace colltest::client {

using Groups = google::protobuf::RepeatedPtrField<v1::GroupHealth>;

// A text table: devices ("0,1"), state, recoveries, last recovery time, message.
std::string GroupsTable(const Groups& groups);

// An array of objects with every GroupHealth field, the state by its upper-case name.
nlohmann::ordered_json GroupsJson(const Groups& groups);

// The device `index` of `machine`, or nullptr when the machine does not list it (an older server
// sends no machine at all).
const v1::Device* FindDevice(const v1::MachineIdentity& machine, uint32_t index);

// "machine HOST (key K)  driver D  runtime R  colltest V (COMMIT)\n", or "" when the server sent
// no machine.
std::string MachineIdentityLine(const v1::MachineIdentity& machine);

// The cell of a link in TopologyTable: "NV<lanes>" ("NVL" when the lanes are not counted), "XGMI",
// "PCIE", "P2P" (peer access over a link of unknown kind), "SHM", "SAME_GPU" (two slots of one GPU,
// colltestd --ranks-per-gpu: no link at all), or "-" without peer access.
std::string LinkCell(const v1::Link& link);

// The links between the machine's devices as a matrix, like `nvidia-smi topo -m`: one row and one
// column per device index, "X" on the diagonal, "?" for a pair the server reported no link for;
// a legend line first. "" with fewer than two devices, where there is nothing to link.
std::string TopologyTable(const v1::MachineIdentity& machine);

}  // namespace colltest::client
