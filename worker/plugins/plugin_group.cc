#include "worker/plugins/plugin_group.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "worker/heartbeat.h"

namespace colltest::worker::plugins {
namespace {

namespace wv1 = ::colltest::worker::v1;
using ::colltest::PluginEntry;

constexpr uint32_t kSizingHidden = 16384;  // the server's kMaxHidden
constexpr uint32_t kSizingRows = 65536;    // the server's kMaxRows
// A plugin that asks for more than this per rank is refused for the group: the workspace is
// allocated on every rank of every group, whether a case runs the plugin or not.
constexpr uint64_t kMaxWorkspaceFactor = 8;

// Runs one entry point with a message buffer, and keeps what the plugin wrote.
template <typename Entry>
EntryResult CallEntry(PluginEntry which, uint64_t call, Entry&& entry) {
  const InPluginScope inside(which, call);
  char err[1024];
  err[0] = '\0';
  EntryResult r;
  r.status = entry(err, sizeof(err));
  err[sizeof(err) - 1] = '\0';
  r.message = err;
  if (r.status != COLLTEST_OK && r.status != COLLTEST_UNSUPPORTED) r.status = COLLTEST_ERROR;
  return r;
}

uint32_t WidestDtype(uint32_t dtypes) {
  if (dtypes & (1u << COLLTEST_DTYPE_FP32)) return COLLTEST_DTYPE_FP32;
  return dtypes & (1u << COLLTEST_DTYPE_FP16) ? COLLTEST_DTYPE_FP16 : COLLTEST_DTYPE_BF16;
}

}  // namespace

std::string EntryMessage(const std::string& variant, const char* entry, int64_t call,
                         const EntryResult& r) {
  return absl::StrCat(variant, " ", entry, call >= 0 ? absl::StrCat(" (call ", call, ")") : "",
                      ": ", r.status == COLLTEST_UNSUPPORTED ? "unsupported" : "error",
                      r.message.empty() ? "" : absl::StrCat(": ", r.message));
}

std::string WorkspaceHandleName(const std::string& plugin_name) {
  return absl::StrCat("plugin:", plugin_name);
}

std::vector<colltest_shape_v1_t> SizingShapes(const colltest_kernel_v1_t& kernel,
                                              colltest_shape_v1_t base, uint64_t case_bytes) {
  base.dtype = WidestDtype(kernel.dtypes);
  base.epilogue = COLLTEST_EPILOGUE_NONE;
  const uint64_t elem = base.dtype == COLLTEST_DTYPE_FP32 ? 4 : 2;
  const uint64_t pack = 16 / elem;
  const uint64_t elements = std::min<uint64_t>(case_bytes / elem, kernel.max_elements);
  colltest_shape_v1_t wide = base;
  wide.n = kSizingHidden;
  wide.m = static_cast<uint32_t>(std::clamp<uint64_t>(elements / wide.n, 1, kSizingRows));
  colltest_shape_v1_t tall = base;
  tall.m = static_cast<uint32_t>(std::clamp<uint64_t>(elements / pack, 1, kSizingRows));
  tall.n = static_cast<uint32_t>(std::max<uint64_t>(elements / tall.m / pack * pack, pack));
  return {wide, tall};
}

GroupPlugin::~GroupPlugin() {
  if (initialised_) {
    // Nothing to report to: the group is ending. A plugin's fini error is only logged by the
    // plugin itself.
    CallEntry(PluginEntry::kFini, 0,
              [&](char* err, size_t len) { return kernel().fini(state_, err, len); });
  }
  regions_.clear();
}

std::string GroupPlugin::variant() const { return WorkspaceHandleName(report().name); }

EntryResult GroupPlugin::WorkspaceBytes(const colltest_shape_v1_t& shape, uint64_t& bytes) const {
  bytes = 0;
  return CallEntry(PluginEntry::kWorkspaceBytes, 0, [&](char* err, size_t len) {
    return kernel().workspace_bytes(&shape, &bytes, err, len);
  });
}

EntryResult GroupPlugin::Arm(void* stream) {
  if (kernel().arm == nullptr) return EntryResult{};
  return CallEntry(PluginEntry::kArm, 0,
                   [&](char* err, size_t len) { return kernel().arm(state_, stream, err, len); });
}

EntryResult GroupPlugin::Launch(const colltest_launch_v1_t& call) {
  return CallEntry(PluginEntry::kLaunch, call.call,
                   [&](char* err, size_t len) { return kernel().launch(state_, &call, err, len); });
}

void GroupPlugin::Allocate(WorkspaceMemory& memory, uint64_t case_bytes, wv1::InitReply& reply) {
  const std::vector<colltest_shape_v1_t> shapes = SizingShapes(kernel(), largest_, case_bytes);
  for (const colltest_shape_v1_t& shape : shapes) {
    uint64_t bytes = 0;
    const EntryResult r = WorkspaceBytes(shape, bytes);
    if (!r.ok()) return Refuse(EntryMessage(variant(), "workspace_bytes", -1, r));
    workspace_bytes_ = std::max(workspace_bytes_, bytes);
  }
  largest_ = shapes.front();  // what init's group.largest says
  const uint64_t limit = kMaxWorkspaceFactor * case_bytes;
  if (workspace_bytes_ > limit) {
    return Refuse(absl::StrCat(variant(), " asks for ", workspace_bytes_,
                               " bytes of workspace per rank, above the limit of ", limit,
                               " (8 x colltestd --max-case-bytes)"));
  }
  wv1::BufferHandle& handle = *reply.add_handles();
  // Even a plugin without a workspace exports a handle, so that every rank's table has the same
  // entries; a zero-byte region maps to null.
  absl::StatusOr<std::unique_ptr<WorkspaceRegion>> own = memory.Allocate(
      WorkspaceHandleName(report().name), std::max<uint64_t>(workspace_bytes_, 1), handle);
  handle.set_name(WorkspaceHandleName(report().name));
  if (!own.ok()) {
    reply.mutable_handles()->RemoveLast();  // peers then refuse it too, naming this rank
    return Refuse(absl::StrCat(variant(), ": its workspace of ", workspace_bytes_,
                               " bytes could not be allocated: ", own.status().message()));
  }
  regions_.push_back(*std::move(own));
}

void GroupPlugin::Connect(WorkspaceMemory& memory,
                          const std::vector<const wv1::BufferHandle*>& by_rank, int32_t device) {
  if (!refused_.empty()) return;
  peer_workspace_.assign(by_rank.size(), nullptr);
  for (uint32_t r = 0; r < by_rank.size(); ++r) {
    if (r == largest_.rank) {
      peer_workspace_[r] = regions_.front()->data();
      continue;
    }
    if (by_rank[r] == nullptr) {
      return Refuse(absl::StrCat(variant(), ": rank ", r,
                                 " has no workspace (it refused the "
                                 "plugin)"));
    }
    absl::StatusOr<std::unique_ptr<WorkspaceRegion>> peer = memory.Open(*by_rank[r]);
    if (!peer.ok()) {
      return Refuse(absl::StrCat(variant(), ": rank ", r,
                                 "'s workspace could not be mapped: ", peer.status().message()));
    }
    peer_workspace_[r] = (*peer)->data();
    regions_.push_back(*std::move(peer));
  }
  colltest_group_v1_t group{};
  group.largest = largest_;
  group.device = device;
  group.workspace_bytes = workspace_bytes_;
  group.peer_workspace = peer_workspace_.data();
  const EntryResult r = CallEntry(PluginEntry::kInit, 0, [&](char* err, size_t len) {
    return kernel().init(&group, &state_, err, len);
  });
  if (!r.ok()) return Refuse(EntryMessage(variant(), "init", -1, r));
  initialised_ = true;
}

void PluginGroup::Load(const wv1::InitRequest& request, uint32_t backend, uint64_t case_bytes,
                       WorkspaceMemory& memory, wv1::InitReply& reply) {
  colltest_shape_v1_t base{};
  base.backend = backend;
  base.world = request.world_size();
  base.rank = request.rank();
  for (const colltest::v1::KernelPlugin& given : request.kernel_plugins()) {
    PluginLoad load = LoadKernelPlugin(given.path(), backend);
    colltest::v1::KernelPlugin& said = *reply.mutable_capabilities()->add_kernel_plugins();
    said = given;
    said.set_sha256(load.report.sha256);
    if (load.plugin != nullptr && load.report.sha256 != given.sha256()) {
      load.report.refused = absl::StrCat("the file changed since colltestd checked it (sha256 ",
                                         given.sha256(), ", now ", load.report.sha256, ")");
    } else if (load.plugin != nullptr && plugins_.count(load.report.name) > 0) {
      load.report.refused = absl::StrCat("a plugin named ", load.report.name, " is loaded");
    }
    if (!load.report.refused.empty()) {
      said.set_loaded(false);
      said.set_refused(load.report.refused);
      refused_[given.name()] = load.report.refused;
      continue;
    }
    const std::string name = load.report.name;
    auto plugin = std::make_unique<GroupPlugin>(std::move(load.plugin), base);
    plugin->Allocate(memory, case_bytes, reply);
    said.set_loaded(plugin->refused().empty());
    said.set_refused(plugin->refused());
    plugins_[name] = std::move(plugin);
  }
}

absl::Status PluginGroup::Connect(const wv1::ConnectRequest& request, int32_t device,
                                  WorkspaceMemory& memory) {
  for (auto& [name, plugin] : plugins_) {
    std::vector<const wv1::BufferHandle*> by_rank(request.peers_size(), nullptr);
    for (const wv1::PeerHandles& peer : request.peers()) {
      for (const wv1::BufferHandle& h : peer.handles()) {
        if (h.name() == WorkspaceHandleName(name) && peer.rank() < by_rank.size()) {
          by_rank[peer.rank()] = &h;
        }
      }
    }
    plugin->Connect(memory, by_rank, device);
  }
  return absl::OkStatus();
}

std::string PluginGroup::RefusedAtLoad(const std::string& name) const {
  auto it = refused_.find(name);
  return it == refused_.end() ? "" : it->second;
}

GroupPlugin* PluginGroup::Find(const std::string& name) const {
  auto it = plugins_.find(name);
  return it == plugins_.end() ? nullptr : it->second.get();
}

}  // namespace colltest::worker::plugins
