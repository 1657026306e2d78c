#include "worker/plugins/plugin_rules.h"

#include "absl/strings/str_cat.h"
#include "common/fault_spec.h"
#include "common/names.h"

namespace colltest::worker::plugins {
namespace {

namespace v1 = ::colltest::v1;

bool FaultAppliesFromOutside(common::FaultKind kind) {
  switch (kind) {
    case common::FaultKind::kNone:
    case common::FaultKind::kMissingRank:
    case common::FaultKind::kDelayRank:
    case common::FaultKind::kCrashRank:
    case common::FaultKind::kStallRank:
      return true;
    default:
      return false;
  }
}

// What the plugin declared against what the case asks, in the order a user would fix them.
std::string RefuseDeclared(const GroupPlugin& plugin, const colltest::worker::v1::CaseRequest& req,
                           uint32_t world) {
  const colltest_kernel_v1_t& k = plugin.kernel();
  const std::string v = plugin.variant();
  const v1::Epilogue epilogue =
      req.epilogue() == v1::EPILOGUE_UNSPECIFIED ? v1::EPILOGUE_NONE : req.epilogue();
  if ((k.dtypes & (1u << req.dtype())) == 0) {
    return absl::StrCat(v, " does not take dtype ", common::DTypeName(req.dtype()));
  }
  if (world >= 32 || (k.world_sizes & (1u << world)) == 0) {
    return absl::StrCat(v, " does not take a world of ", world, " ranks");
  }
  if ((k.epilogues & (1u << epilogue)) == 0) {
    return absl::StrCat(v, " does not write the ", common::EpilogueName(epilogue), " epilogue");
  }
  if (req.mode() == v1::MODE_GRAPH && (k.flags & COLLTEST_KERNEL_GRAPH_CAPTURE) == 0) {
    return absl::StrCat(v,
                        " does not allow graph capture (its flags lack "
                        "COLLTEST_KERNEL_GRAPH_CAPTURE): graph mode refused");
  }
  const uint64_t elements = uint64_t{req.m()} * req.n();
  if (elements > k.max_elements) {
    return absl::StrCat(v, ": m x n = ", elements, " elements exceed its max_elements of ",
                        k.max_elements);
  }
  return "";
}

}  // namespace

colltest_shape_v1_t PluginShape(const colltest::worker::v1::CaseRequest& req, uint32_t world,
                                uint32_t rank, uint32_t backend, uint32_t m) {
  colltest_shape_v1_t s{};
  s.backend = backend;
  s.world = world;
  s.rank = rank;
  s.dtype = static_cast<uint32_t>(req.dtype());
  s.epilogue = static_cast<uint32_t>(req.epilogue() == v1::EPILOGUE_UNSPECIFIED ? v1::EPILOGUE_NONE
                                                                                : req.epilogue());
  s.m = m;
  s.n = req.n();
  return s;
}

std::string RefusePluginCase(const PluginGroup& group, const colltest::worker::v1::CaseRequest& req,
                             uint32_t world, uint32_t rank, uint32_t backend) {
  const std::string v = WorkspaceHandleName(req.plugin());
  const GroupPlugin* plugin = group.Find(req.plugin());
  if (plugin == nullptr) {
    const std::string why = group.RefusedAtLoad(req.plugin());
    return absl::StrCat(v, ": not loaded by this worker", why.empty() ? "" : ": ", why);
  }
  if (!plugin->refused().empty()) return plugin->refused();
  if (!plugin->ready()) return absl::StrCat(v, ": not initialised for this group");
  if (std::string declared = RefuseDeclared(*plugin, req, world); !declared.empty()) {
    return declared;
  }
  absl::StatusOr<common::FaultSpec> fault = common::ParseFaultSpec("fault", req.fault(), world);
  if (fault.ok() && !FaultAppliesFromOutside(fault->kind)) {
    return absl::StrCat("fault ", req.fault(), " is planted in colltest's own kernels; ", v,
                        " takes missing_rank, delay_rank, crash_rank and stall_rank");
  }
  uint64_t bytes = 0;
  const EntryResult r =
      plugin->WorkspaceBytes(PluginShape(req, world, rank, backend, req.m()), bytes);
  if (!r.ok()) return absl::StrCat(v, " workspace_bytes: ", r.message);
  if (bytes > plugin->workspace_bytes()) {
    return absl::StrCat(v, " needs ", bytes, " bytes of workspace for m = ", req.m(),
                        ", n = ", req.n(), " in ", common::DTypeName(req.dtype()),
                        "; the group has ", plugin->workspace_bytes());
  }
  return "";
}

}  // namespace colltest::worker::plugins
