#include "worker/backends/gpu/gpu_backend.h"

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "worker/backends/gpu/device_facts.h"
#include "worker/backends/gpu/stream_wait.h"
#include "worker/capabilities_json.h"
#include "worker/case_config.h"
#include "worker/case_driver.h"

namespace colltest::gpu {
namespace {

// Ordered: the probe's keys come out in the order colltestd's tests and readers know.
using Json = nlohmann::ordered_json;

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" as nvidia-smi prints it, or "GPU-<hex digits>" as
// ROCm's tools print its text form (gpu_runtime.h kUuidIsText). "" for an all-zero UUID: the
// runtime has none to give, and a made-up one would merge different machines' baselines.
std::string UuidText(const Uuid& u) {
  static constexpr char kHex[] = "0123456789abcdef";
  size_t used = sizeof u.bytes;
  while (used > 0 && u.bytes[used - 1] == 0) --used;
  if (used == 0) return "";
  if (kUuidIsText) {
    std::string text = "GPU-";
    for (size_t i = 0; i < used; ++i) {
      if (std::isxdigit(u.bytes[i]) == 0) return "";  // not the documented form: no guess
      text.push_back(static_cast<char>(std::tolower(u.bytes[i])));
    }
    return text;
  }
  std::string text = "GPU-";
  for (size_t i = 0; i < sizeof u.bytes; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text.push_back('-');
    text.push_back(kHex[u.bytes[i] >> 4]);
    text.push_back(kHex[u.bytes[i] & 0xf]);
  }
  return text;
}

// A version number as text; "" when the query failed or reported nothing.
std::string VersionText(Error (*query)(int*)) {
  int v = 0;
  if (query(&v) != kSuccess || v <= 0) return "";
  if (!kVersionIsMajorMinor) return absl::StrCat(v);
  return absl::StrCat(v / 1000, ".", v % 1000 / 10);
}

// The kernel driver's version: the first word of kKernelDriverVersionFile's first line that starts
// with a digit and holds a dot ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  ..."
// gives 580.159.04); "" when the file cannot be read or has none.
std::string KernelDriverVersion() {
  FILE* file = std::fopen(kKernelDriverVersionFile, "r");
  if (file == nullptr) return "";
  char line[512] = {};
  const bool read = std::fgets(line, sizeof line, file) != nullptr;
  std::fclose(file);
  if (!read) return "";
  for (absl::string_view word : absl::StrSplit(line, absl::ByAnyChar(" \t\n"), absl::SkipEmpty())) {
    if (std::isdigit(static_cast<unsigned char>(word.front())) &&
        word.find('.') != absl::string_view::npos) {
      return std::string(word);
    }
  }
  return "";
}

// "580.159.04 (CUDA 13.0)": the kernel driver and the API version the runtime reports for it; the
// API version alone when the kernel driver's cannot be read.
std::string DriverVersionText() {
  const std::string api = VersionText(&DriverVersion);
  const std::string kernel = KernelDriverVersion();
  if (kernel.empty()) return api;
  return absl::StrCat(kernel, " (" COLLTEST_GPU_RUNTIME_NAME " ", api, ")");
}

// One probe device; false when its name and memory cannot be read (then the probe reports none).
// UUID, PCI bus id and serial are recorded for the machine identity only: a failed query leaves
// them "". The bus id goes to `bus` for the links.
bool AppendDeviceJson(int d, const DeviceFacts& facts, std::string* bus, Json* devices) {
  DeviceInfo info;
  if (GetDeviceInfo(d, &info) != kSuccess) return false;
  Uuid uuid;
  const std::string uuid_text = GetDeviceUuid(d, &uuid) == kSuccess ? UuidText(uuid) : "";
  char bus_text[64] = {};
  if (GetPciBusId(d, bus_text, sizeof bus_text) != kSuccess) bus_text[0] = 0;
  bus_text[sizeof bus_text - 1] = 0;
  *bus = bus_text;
  const std::string serial = bus->empty() ? "" : facts.Serial(*bus);
  // What the runtime reports is not ours to trust to be plain text: nlohmann escapes it.
  devices->push_back({{"index", d},
                      {"name", std::string(info.name, strnlen(info.name, sizeof info.name))},
                      {"memory_bytes", info.memory_bytes},
                      {"uuid", uuid_text},
                      {"pci_bus_id", *bus},
                      {"serial", serial}});
  return true;
}

// Every pair a < b. p2p needs access both ways: a collective's ranks read and write each other.
// Rank and atomics are the a -> b direction's; a failed query leaves 0 / false. Kind, hops and
// lanes as DeviceFacts::Link finds them.
Json LinksJson(const std::vector<std::string>& buses, const DeviceFacts& facts) {
  const int count = static_cast<int>(buses.size());
  Json links = Json::array();
  for (int a = 0; a < count; ++a) {
    for (int b = a + 1; b < count; ++b) {
      int ab = 0, ba = 0, rank = 0, atomics = 0;
      const bool p2p = CanAccessPeer(&ab, a, b) == kSuccess && ab != 0 &&
                       CanAccessPeer(&ba, b, a) == kSuccess && ba != 0;
      if (P2PAttribute(&rank, kP2PPerformanceRank, a, b) != kSuccess) rank = 0;
      if (P2PAttribute(&atomics, kP2PNativeAtomics, a, b) != kSuccess) atomics = 0;
      const LinkFacts link = facts.Link(a, b, buses[a], buses[b], p2p);
      links.push_back({{"a", a},
                       {"b", b},
                       {"p2p", p2p},
                       {"performance_rank", rank},
                       {"native_atomics", atomics != 0},
                       {"kind", link.kind},
                       {"hops", link.hops},
                       {"lanes", link.lanes}});
    }
  }
  return links;
}

}  // namespace

absl::Status GpuOk(Error e, const char* what) {
  if (e == kSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", ErrorString(e)));
}

absl::Status GpuOk(const KernelStatus& s, const char* what) {
  if (s.unsupported) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", UnsupportedText(*s.unsupported)));
  }
  return GpuOk(s.error, what);
}

std::unique_ptr<worker::Backend> CreateGpuBackend(const GpuBackendOptions& options) {
  return std::make_unique<GpuBackend>(options);
}

colltest::worker::v1::Capabilities GpuCapabilities() {
  colltest::worker::v1::Capabilities caps;
  for (auto v : {colltest::v1::VARIANT_ONE_STAGE, colltest::v1::VARIANT_TWO_KERNEL,
                 colltest::v1::VARIANT_LAMPORT, colltest::v1::VARIANT_LAMPORT_TB,
                 colltest::v1::VARIANT_LAMPORT_TWO_SHOT, colltest::v1::VARIANT_NCCL,
                 colltest::v1::VARIANT_AUTO}) {
    caps.add_variants(v);
  }
  caps.set_graph_mode(true);
  caps.set_reports_devices(true);
  return caps;
}

std::string ProbeDevicesJson() {
  int count = 0;
  if (GetDeviceCount(&count) != kSuccess || count <= 0) return "";
  const DeviceFacts facts;
  std::vector<std::string> buses(count);
  Json devices = Json::array();
  for (int d = 0; d < count; ++d) {
    if (!AppendDeviceJson(d, facts, &buses[d], &devices)) return "";
  }
  const Json probe = {{"backend", kBackendName},
                      {"devices", std::move(devices)},
                      {"driver_version", DriverVersionText()},
                      {"runtime_version", VersionText(&RuntimeVersion)},
                      {"links", LinksJson(buses, facts)},
                      {"capabilities", worker::CapabilitiesJson(GpuCapabilities())}};
  // A name that is not UTF-8 becomes U+FFFD rather than an exception.
  return probe.dump(-1, ' ', false, Json::error_handler_t::replace);
}

absl::Status GpuBackend::UseDevice() const {
  return GpuOk(SetDevice(static_cast<int>(options_.device)), "set device");
}

void GpuBackend::Release() {
  // The rank's device first: the handles below release on the current device.
  if (own_) (void)UseDevice();
  if (stream_) {
    (void)StreamSynchronize(stream_.get());
    nccl_.Release();
    plugins_.Release();  // fini while the workspaces are mapped, then unmapped
    stream_.reset();
  }
  peers_.clear();
  own_.reset();
  scratch_.reset();
  hang_host_.reset();
  hang_device_ = nullptr;
  connected_ = false;
}

absl::Status GpuBackend::AllocateBuffers() {
  COLLTEST_RETURN_IF_ERROR(
      GpuOk(AllocateDevice(layout_.total, &own_), "allocate registered buffers"));
  COLLTEST_RETURN_IF_ERROR(GpuOk(Memset(own_.get(), 0, layout_.total), "zero registered buffers"));
  // Private buffers: residual slots, outputs, reference outputs (fp32), weight, diff statistics.
  scratch_layout_ = MakeScratchLayout(layout_.capacity, worker::kGraphStressCalls);
  COLLTEST_RETURN_IF_ERROR(
      GpuOk(AllocateDevice(scratch_layout_.total, &scratch_), "allocate private buffers"));
  COLLTEST_RETURN_IF_ERROR(
      GpuOk(AllocateHostMapped(sizeof(HangRecord), &hang_host_), "allocate hang record"));
  std::memset(hang_host_.get(), 0, sizeof(HangRecord));
  void* p = nullptr;
  COLLTEST_RETURN_IF_ERROR(GpuOk(HostGetDevicePointer(&p, hang_host_.get()), "map hang record"));
  hang_device_ = static_cast<HangRecord*>(p);
  return GpuOk(CreateStream(&stream_), "create stream");
}

absl::StatusOr<colltest::worker::v1::InitReply> GpuBackend::Init(
    const colltest::worker::v1::InitRequest& request) {
  if (own_) return absl::FailedPreconditionError("worker already initialised");
  COLLTEST_RETURN_IF_ERROR(worker::CheckInitRequest(request));
  rank_ = request.rank();
  world_ = request.world_size();
  ranks_on_device_ = std::max(1u, request.ranks_on_device());
  device_slots_ = std::max(1u, request.device_slots());
  // Measured on one H200 under MPS with early launch: at W = 8 every graph-mode case of m = 64 and
  // 256 HANG, and two_kernel at m = 256 from W = 2 (its norm kernel, m blocks, waits early beside
  // the reduce-scatter): waiting successors held the places of peers' spinning blocks. Launched
  // plainly, a rank holds one grid on the device at a time.
  if (device_slots_ > 1) DisableEarlyLaunch();
  const int device = static_cast<int>(options_.device);
  if (auto s = GpuOk(SetDevice(device), "set device"); !s.ok()) return s;
  DeviceInfo info;
  if (auto s = GpuOk(GetDeviceInfo(device, &info), "device properties"); !s.ok()) return s;
  multiprocessors_ = info.multiprocessors;
  fp8_format_ = info.fp8_fnuz ? Fp8Format::kE4m3fnuz : Fp8Format::kE4m3fn;
  layout_ = MakeGpuLayout(worker::CaseCapacityBytes(request), world_);
  if (auto s = AllocateBuffers(); !s.ok()) return s;
  if (SupportedWorld(world_)) {
    if (auto s = GpuOk(SpinKernelBlocksPerSm(world_, 256, &blocks_per_sm_256_), "occupancy");
        !s.ok()) {
      return s;
    }
    if (auto s = GpuOk(SpinKernelBlocksPerSm(world_, 512, &blocks_per_sm_512_), "occupancy");
        !s.ok()) {
      return s;
    }
  }

  IpcMemHandle handle;
  if (auto s = GpuOk(IpcGetMemHandle(&handle, own_.get()), "export IPC handle"); !s.ok()) {
    return s;
  }
  colltest::worker::v1::InitReply reply;
  auto* h = reply.add_handles();
  h->set_name("rank_buffers");
  h->set_handle(std::string(reinterpret_cast<const char*>(&handle), sizeof handle));
  h->set_bytes(layout_.total);
  plugins_.Load(request, kPluginBackendBit, worker::CaseCapacityBytes(request), workspaces_, reply);
  reply.set_device_name(info.name);
  reply.set_resident_blocks(SpinLimit(512));
  reply.set_pid(static_cast<uint32_t>(getpid()));
  if (rank_ == 0 && ranks_on_device_ == 1) reply.set_nccl_unique_id(nccl_.CreateUniqueId());
  colltest::worker::v1::Capabilities caps = GpuCapabilities();
  caps.mutable_kernel_plugins()->Swap(reply.mutable_capabilities()->mutable_kernel_plugins());
  *reply.mutable_capabilities() = std::move(caps);
  return reply;
}

absl::Status GpuBackend::Connect(const colltest::worker::v1::ConnectRequest& request) {
  if (!own_) return absl::FailedPreconditionError("Connect before Init");
  if (auto s = UseDevice(); !s.ok()) return s;
  COLLTEST_RETURN_IF_ERROR(worker::CheckConnectRequest(request, world_));
  peers_.clear();
  peers_.resize(world_);
  group_ = DeviceGroup{};
  group_.layout = layout_;
  group_.rank = rank_;
  group_.world = world_;
  group_.hang = hang_device_;
  for (const auto& peer : request.peers()) {
    // An IPC handle of this runtime to an allocation of this layout.
    if (peer.handles(0).handle().size() != sizeof(IpcMemHandle) ||
        peer.handles(0).bytes() != layout_.total) {
      return absl::InvalidArgumentError(absl::StrCat("peers: bad entry for rank ", peer.rank()));
    }
    if (peer.rank() == rank_) {
      group_.base[rank_] = own_.get();
      continue;
    }
    // Each peer is opened once and kept for the life of the group.
    IpcMemHandle handle;
    std::memcpy(&handle, peer.handles(0).handle().data(), sizeof handle);
    if (auto s = GpuOk(OpenIpc(handle, &peers_[peer.rank()]),
                       absl::StrCat("open IPC handle of rank ", peer.rank()).c_str());
        !s.ok()) {
      return s;
    }
    group_.base[peer.rank()] = peers_[peer.rank()].get();
  }
  // Every rank joins NCCL's communicator here, at once and outside any capture; a failure only
  // makes the nccl variant UNSUPPORTED with the reason.
  if (ranks_on_device_ == 1) {
    nccl_.Connect(request.nccl_unique_id(), rank_, world_, layout_.capacity);
  } else {
    nccl_.Refuse(absl::StrCat("nccl: NCCL refuses two ranks on one GPU, and this group has ",
                              ranks_on_device_,
                              " on one (colltestd --ranks-per-gpu); run nccl with one rank per "
                              "GPU"));
  }
  COLLTEST_RETURN_IF_ERROR(
      plugins_.Connect(request, static_cast<int32_t>(options_.device), workspaces_));
  connected_ = true;
  return absl::OkStatus();
}

absl::StatusOr<bool> GpuBackend::EnsureArmed(colltest::v1::Variant variant, DType dtype,
                                             size_t bytes, uint64_t timeout_ns) {
  // Nothing of earlier calls may land over the arming below.
  if (auto s = GpuOk(StreamSynchronizeBeating(stream_.get()), "synchronize before arming"); !s.ok())
    return s;
  auto arm = [&](protocol::Armed& a, auto&& regions) -> absl::Status {
    const std::optional<protocol::ArmStep> step = protocol::NextArming(a, variant, dtype, bytes);
    if (!step) return absl::OkStatus();
    for (uint8_t* r : regions) {
      if (auto s = GpuOk(LaunchArm(dtype, r + step->from, step->to - step->from, stream_.get()),
                         "arm staging");
          !s.ok()) {
        return s;
      }
    }
    a = step->after;
    return absl::OkStatus();
  };
  if (variant == colltest::v1::VARIANT_LAMPORT) {
    std::vector<uint8_t*> regions = {own_.get() + layout_.lamport_offset};
    if (auto s = arm(lamport_armed_, regions); !s.ok()) return s;
  } else if (variant == colltest::v1::VARIANT_LAMPORT_TB ||
             variant == colltest::v1::VARIANT_LAMPORT_TWO_SHOT) {
    std::vector<uint8_t*> regions;
    for (uint32_t b = 0; b < protocol::kTbBuffers; ++b) {
      for (uint32_t r = 0; r < world_; ++r) {
        regions.push_back(own_.get() + layout_.TbSlotOffset(b, r));
      }
    }
    if (auto s = arm(tb_armed_, regions); !s.ok()) return s;
  }
  // Always meet the peers here: it orders this rank's arming before any peer's first store.
  if (auto s = GpuOk(LaunchHostBarrier(group_, timeout_ns, stream_.get()), "host barrier");
      !s.ok()) {
    return s;
  }
  if (auto s = GpuOk(StreamSynchronizeBeating(stream_.get()), "host barrier"); !s.ok()) return s;
  return !HangRecorded();
}

bool GpuBackend::HangRecorded() const {
  return static_cast<volatile HangRecord*>(hang_host_.get())->valid != 0;
}

absl::Status GpuBackend::ClearHang() {
  std::memset(hang_host_.get(), 0, sizeof(HangRecord));
  RankControl* control = reinterpret_cast<RankControl*>(own_.get() + layout_.control_offset);
  // hang_claimed and aborted are adjacent at the end of RankControl.
  return GpuOk(MemsetAsync(&control->hang_claimed, 0, 2 * sizeof(uint32_t), stream_.get()),
               "clear abort flag");
}

absl::Status GpuBackend::Reset() {
  if (!connected_) return absl::OkStatus();
  if (auto s = UseDevice(); !s.ok()) return s;
  if (auto s = GpuOk(DeviceSynchronize(), "synchronize for reset"); !s.ok()) return s;
  // Signal slots, epochs, the lamport_tb counter and the abort flag all restart from zero.
  if (auto s = GpuOk(Memset(own_.get(), 0, layout_.input_offset), "zero signal and control");
      !s.ok()) {
    return s;
  }
  std::memset(hang_host_.get(), 0, sizeof(HangRecord));
  if (auto s = GpuOk(LaunchArm(lamport_armed_.dtype, own_.get() + layout_.lamport_offset,
                               lamport_armed_.bytes, stream_.get()),
                     "re-arm staging");
      !s.ok()) {
    return s;
  }
  for (uint32_t b = 0; b < protocol::kTbBuffers; ++b) {
    for (uint32_t r = 0; r < world_; ++r) {
      if (auto s = GpuOk(LaunchArm(tb_armed_.dtype, own_.get() + layout_.TbSlotOffset(b, r),
                                   tb_armed_.bytes, stream_.get()),
                         "re-arm staging");
          !s.ok()) {
        return s;
      }
    }
  }
  return GpuOk(StreamSynchronizeBeating(stream_.get()), "re-arm staging");
}

uint32_t GpuBackend::SpinLimit(uint32_t threads) const {
  const int per_sm = threads > 256 ? blocks_per_sm_512_ : blocks_per_sm_256_;
  const uint32_t resident = static_cast<uint32_t>(std::max(per_sm, 0) * multiprocessors_);
  return std::min(ShareOf(resident), kMaxBlocks);
}

uint32_t GpuBackend::ShareOf(uint32_t resident) const {
  // Ranks on one device spin at once, on each other and beside other groups' ranks there:
  // together their grids must fit the device, or a spinning block waits for a peer's block that is
  // never scheduled (measured under MPS on one H200: 8 processes of 300 blocks each made no
  // progress; of 16 blocks each, a 0.72 us barrier). Every slot of the device gets an equal share.
  return std::max(1u, resident / device_slots_);
}

}  // namespace colltest::gpu
