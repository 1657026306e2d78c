// Which cases a plugin of a group may run (docs/plugins.md): what it declared (dtypes, world sizes,
// epilogues, max_elements, graph capture), a workspace that fits the group's, and the faults
// colltest can apply to a kernel it did not write (from outside: missing_rank, delay_rank,
// crash_rank, stall_rank; the planted protocol and quantisation bugs are colltest's own kernels').
#pragma once

#include <cstdint>
#include <string>

#include "colltest/v1/worker.pb.h"
#include "worker/plugins/plugin_group.h"

namespace colltest::worker::plugins {

// The UNSUPPORTED reason of case `req` for its plugin in `group` on a rank of
// `world` ranks of `backend` (a COLLTEST_BACKEND_* bit), or "" when it may run.
std::string RefusePluginCase(const PluginGroup& group, const colltest::worker::v1::CaseRequest& req,
                             uint32_t world, uint32_t rank, uint32_t backend);

// The ABI's shape of case `req` with `m` rows.
colltest_shape_v1_t PluginShape(const colltest::worker::v1::CaseRequest& req, uint32_t world,
                                uint32_t rank, uint32_t backend, uint32_t m);

}  // namespace colltest::worker::plugins
