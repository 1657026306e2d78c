#include "worker/backends/gpu/gpu_backend.h"

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "worker/backends/gpu/device_facts.h"
#include "worker/backends/gpu/stream_wait.h"

namespace colltest::gpu {
namespace {

constexpr size_t kWeightBytes = 256 << 10;
constexpr size_t kScratchAlign = 4096;
size_t AlignUp(size_t v) { return (v + kScratchAlign - 1) / kScratchAlign * kScratchAlign; }

// The contents of a JSON string: what the runtime reports is not ours to trust to be plain text.
std::string JsonEscape(absl::string_view s) {
  std::string out;
  for (const char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

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
  return absl::StrCat(kernel, " (", COLLTEST_GPU_VENDOR_HIP ? "HIP " : "CUDA ", api, ")");
}

// One probe device; false when its name and memory cannot be read (then the probe reports none).
// UUID, PCI bus id and serial are recorded for the machine identity only: a failed query leaves
// them "". The bus id goes to `bus` for the links.
bool AppendDeviceJson(int d, const DeviceFacts& facts, std::string* bus, std::string* json) {
  DeviceInfo info;
  if (GetDeviceInfo(d, &info) != kSuccess) return false;
  Uuid uuid;
  const std::string uuid_text = GetDeviceUuid(d, &uuid) == kSuccess ? UuidText(uuid) : "";
  char bus_text[64] = {};
  if (GetPciBusId(d, bus_text, sizeof bus_text) != kSuccess) bus_text[0] = 0;
  bus_text[sizeof bus_text - 1] = 0;
  *bus = bus_text;
  const std::string serial = bus->empty() ? "" : facts.Serial(*bus);
  absl::StrAppend(json, d > 0 ? "," : "", R"({"index":)", d, R"(,"name":")", JsonEscape(info.name),
                  R"(","memory_bytes":)", info.memory_bytes, R"(,"uuid":")", JsonEscape(uuid_text),
                  R"(","pci_bus_id":")", JsonEscape(*bus), R"(","serial":")", JsonEscape(serial),
                  R"("})");
  return true;
}

// Every pair a < b. p2p needs access both ways: a collective's ranks read and write each other.
// Rank and atomics are the a -> b direction's; a failed query leaves 0 / false. Kind, hops and
// lanes as DeviceFacts::Link finds them.
std::string LinksJson(const std::vector<std::string>& buses, const DeviceFacts& facts) {
  const int count = static_cast<int>(buses.size());
  std::string json = "[";
  for (int a = 0; a < count; ++a) {
    for (int b = a + 1; b < count; ++b) {
      int ab = 0, ba = 0, rank = 0, atomics = 0;
      const bool p2p = CanAccessPeer(&ab, a, b) == kSuccess && ab != 0 &&
                       CanAccessPeer(&ba, b, a) == kSuccess && ba != 0;
      if (P2PAttribute(&rank, kP2PPerformanceRank, a, b) != kSuccess) rank = 0;
      if (P2PAttribute(&atomics, kP2PNativeAtomics, a, b) != kSuccess) atomics = 0;
      const LinkFacts link = facts.Link(a, b, buses[a], buses[b], p2p);
      absl::StrAppend(&json, json.size() > 1 ? "," : "", R"({"a":)", a, R"(,"b":)", b, R"(,"p2p":)",
                      p2p ? "true" : "false", R"(,"performance_rank":)", rank,
                      R"(,"native_atomics":)", atomics != 0 ? "true" : "false", R"(,"kind":")",
                      link.kind, R"(","hops":)", link.hops, R"(,"lanes":)", link.lanes, "}");
    }
  }
  json.push_back(']');
  return json;
}

}  // namespace

absl::Status GpuOk(Error e, const char* what) {
  if (e == kSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", ErrorString(e)));
}

std::unique_ptr<worker::Backend> CreateGpuBackend(const GpuBackendOptions& options) {
  return std::make_unique<GpuBackend>(options);
}

std::string ProbeDevicesJson() {
  int count = 0;
  if (GetDeviceCount(&count) != kSuccess || count <= 0) return "";
  const DeviceFacts facts;
  std::vector<std::string> buses(count);
  std::string json = absl::StrCat(R"({"backend":")", kBackendName, R"(","devices":[)");
  for (int d = 0; d < count; ++d) {
    if (!AppendDeviceJson(d, facts, &buses[d], &json)) return "";
  }
  absl::StrAppend(&json, R"(],"driver_version":")", JsonEscape(DriverVersionText()),
                  R"(","runtime_version":")", JsonEscape(VersionText(&RuntimeVersion)),
                  R"(","links":)", LinksJson(buses, facts), "}");
  return json;
}

absl::Status GpuBackend::UseDevice() const {
  return GpuOk(SetDevice(static_cast<int>(options_.device)), "set device");
}

void GpuBackend::Release() {
  if (own_ != nullptr) (void)UseDevice();
  if (stream_ != nullptr) {
    StreamSynchronize(stream_);
    nccl_.Release();
    StreamDestroy(stream_);
    stream_ = nullptr;
  }
  for (uint8_t* p : peers_) {
    if (p != nullptr) IpcCloseMemHandle(p);
  }
  peers_.clear();
  if (own_ != nullptr) Free(own_);
  own_ = nullptr;
  if (scratch_ != nullptr) Free(scratch_);
  scratch_ = nullptr;
  if (hang_host_ != nullptr) FreeHost(hang_host_);
  hang_host_ = nullptr;
  connected_ = false;
}

absl::StatusOr<colltest::worker::v1::InitReply> GpuBackend::Init(
    const colltest::worker::v1::InitRequest& request) {
  if (own_ != nullptr) return absl::FailedPreconditionError("worker already initialised");
  if (request.world_size() < 1 || request.world_size() > kMaxRanks) {
    return absl::InvalidArgumentError(
        absl::StrCat("world_size = ", request.world_size(), ": must be in 1..", kMaxRanks));
  }
  if (request.rank() >= request.world_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank = ", request.rank(), ": must be < world_size"));
  }
  rank_ = request.rank();
  world_ = request.world_size();
  const int device = static_cast<int>(options_.device);
  if (auto s = GpuOk(SetDevice(device), "set device"); !s.ok()) return s;
  DeviceInfo info;
  if (auto s = GpuOk(GetDeviceInfo(device, &info), "device properties"); !s.ok()) return s;
  multiprocessors_ = info.multiprocessors;
  layout_ =
      MakeGpuLayout(request.max_case_bytes() > 0 ? request.max_case_bytes() : 32u << 20, world_);
  void* p = nullptr;
  if (auto s = GpuOk(Malloc(&p, layout_.total), "allocate registered buffers"); !s.ok()) return s;
  own_ = static_cast<uint8_t*>(p);
  if (auto s = GpuOk(Memset(own_, 0, layout_.total), "zero registered buffers"); !s.ok()) return s;
  // Private buffers: residual slots, outputs, reference outputs (fp32), weight, diff statistics.
  scratch_bytes_ =
      3 * layout_.capacity + 2 * 2 * layout_.capacity + kWeightBytes + AlignUp(sizeof(DiffAccum));
  if (auto s = GpuOk(Malloc(&p, scratch_bytes_), "allocate private buffers"); !s.ok()) return s;
  scratch_ = static_cast<uint8_t*>(p);
  if (auto s = GpuOk(HostAllocMapped(&p, sizeof(HangRecord)), "allocate hang record"); !s.ok()) {
    return s;
  }
  hang_host_ = static_cast<HangRecord*>(p);
  std::memset(hang_host_, 0, sizeof(HangRecord));
  if (auto s = GpuOk(HostGetDevicePointer(&p, hang_host_), "map hang record"); !s.ok()) return s;
  hang_device_ = static_cast<HangRecord*>(p);
  if (auto s = GpuOk(StreamCreate(&stream_), "create stream"); !s.ok()) return s;
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
  if (auto s = GpuOk(IpcGetMemHandle(&handle, own_), "export IPC handle"); !s.ok()) return s;
  colltest::worker::v1::InitReply reply;
  auto* h = reply.add_handles();
  h->set_name("rank_buffers");
  h->set_handle(std::string(reinterpret_cast<const char*>(&handle), sizeof handle));
  h->set_bytes(layout_.total);
  reply.set_device_name(info.name);
  reply.set_resident_blocks(SpinLimit(512));
  reply.set_pid(static_cast<uint32_t>(getpid()));
  if (rank_ == 0) reply.set_nccl_unique_id(nccl_.CreateUniqueId());
  return reply;
}

absl::Status GpuBackend::Connect(const colltest::worker::v1::ConnectRequest& request) {
  if (own_ == nullptr) return absl::FailedPreconditionError("Connect before Init");
  if (auto s = UseDevice(); !s.ok()) return s;
  if (request.peers_size() != static_cast<int>(world_)) {
    return absl::InvalidArgumentError(
        absl::StrCat("peers: ", request.peers_size(), " entries for a world of ", world_));
  }
  for (uint8_t* p : peers_) {
    if (p != nullptr) IpcCloseMemHandle(p);
  }
  peers_.assign(world_, nullptr);
  group_ = DeviceGroup{};
  group_.layout = layout_;
  group_.rank = rank_;
  group_.world = world_;
  group_.hang = hang_device_;
  std::vector<bool> seen(world_, false);
  for (const auto& peer : request.peers()) {
    if (peer.rank() >= world_ || seen[peer.rank()] || peer.handles_size() != 1 ||
        peer.handles(0).handle().size() != sizeof(IpcMemHandle) ||
        peer.handles(0).bytes() != layout_.total) {
      return absl::InvalidArgumentError(absl::StrCat("peers: bad entry for rank ", peer.rank()));
    }
    seen[peer.rank()] = true;
    if (peer.rank() == rank_) {
      group_.base[rank_] = own_;
      continue;
    }
    // Each peer is opened once and kept for the life of the group.
    IpcMemHandle handle;
    std::memcpy(&handle, peer.handles(0).handle().data(), sizeof handle);
    void* p = nullptr;
    if (auto s = GpuOk(IpcOpenMemHandle(&p, handle),
                       absl::StrCat("open IPC handle of rank ", peer.rank()).c_str());
        !s.ok()) {
      return s;
    }
    peers_[peer.rank()] = static_cast<uint8_t*>(p);
    group_.base[peer.rank()] = static_cast<uint8_t*>(p);
  }
  // Every rank joins NCCL's communicator here, at once and outside any capture; a failure only
  // makes the nccl variant UNSUPPORTED with the reason.
  nccl_.Connect(request.nccl_unique_id(), rank_, world_, layout_.capacity);
  connected_ = true;
  return absl::OkStatus();
}

absl::StatusOr<bool> GpuBackend::EnsureArmed(colltest::v1::Variant variant, DType dtype,
                                             size_t bytes, uint64_t timeout_ns) {
  // Nothing of earlier calls may land over the arming below.
  if (auto s = GpuOk(StreamSynchronizeBeating(stream_), "synchronize before arming"); !s.ok())
    return s;
  auto arm = [&](Armed& a, auto&& regions) -> absl::Status {
    if (a.dtype == dtype && a.bytes >= bytes) return absl::OkStatus();
    // A new dtype has a different sentinel: re-arm everything armed so far.
    const size_t from = a.dtype == dtype ? a.bytes : 0;
    const size_t to = std::max(a.bytes, bytes);
    for (uint8_t* r : regions) {
      if (auto s = GpuOk(LaunchArm(dtype, r + from, to - from, stream_), "arm staging"); !s.ok()) {
        return s;
      }
    }
    a = {dtype, to};
    return absl::OkStatus();
  };
  if (variant == colltest::v1::VARIANT_LAMPORT) {
    std::vector<uint8_t*> regions = {own_ + layout_.lamport_offset};
    if (auto s = arm(lamport_armed_, regions); !s.ok()) return s;
  } else if (variant == colltest::v1::VARIANT_LAMPORT_TB) {
    std::vector<uint8_t*> regions;
    for (uint32_t b = 0; b < 3; ++b) {
      for (uint32_t r = 0; r < world_; ++r) {
        regions.push_back(own_ + layout_.tb_offset +
                          (size_t{b} * world_ + r) * layout_.tb_capacity);
      }
    }
    if (auto s = arm(tb_armed_, regions); !s.ok()) return s;
  }
  // Always meet the peers here: it orders this rank's arming before any peer's first store.
  if (auto s = GpuOk(LaunchHostBarrier(group_, timeout_ns, stream_), "host barrier"); !s.ok()) {
    return s;
  }
  if (auto s = GpuOk(StreamSynchronizeBeating(stream_), "host barrier"); !s.ok()) return s;
  return !HangRecorded();
}

bool GpuBackend::HangRecorded() const {
  return static_cast<volatile HangRecord*>(hang_host_)->valid != 0;
}

absl::Status GpuBackend::ClearHang() {
  std::memset(hang_host_, 0, sizeof(HangRecord));
  RankControl* control = reinterpret_cast<RankControl*>(own_ + layout_.control_offset);
  // hang_claimed and aborted are adjacent at the end of RankControl.
  return GpuOk(MemsetAsync(&control->hang_claimed, 0, 2 * sizeof(uint32_t), stream_),
               "clear abort flag");
}

absl::Status GpuBackend::Reset() {
  if (!connected_) return absl::OkStatus();
  if (auto s = UseDevice(); !s.ok()) return s;
  if (auto s = GpuOk(DeviceSynchronize(), "synchronize for reset"); !s.ok()) return s;
  // Signal slots, epochs, the lamport_tb counter and the abort flag all restart from zero.
  if (auto s = GpuOk(Memset(own_, 0, layout_.input_offset), "zero signal and control"); !s.ok()) {
    return s;
  }
  std::memset(hang_host_, 0, sizeof(HangRecord));
  LaunchArm(lamport_armed_.dtype, own_ + layout_.lamport_offset, lamport_armed_.bytes, stream_);
  for (uint32_t b = 0; b < 3; ++b) {
    for (uint32_t r = 0; r < world_; ++r) {
      LaunchArm(tb_armed_.dtype,
                own_ + layout_.tb_offset + (size_t{b} * world_ + r) * layout_.tb_capacity,
                tb_armed_.bytes, stream_);
    }
  }
  return GpuOk(StreamSynchronizeBeating(stream_), "re-arm staging");
}

uint32_t GpuBackend::SpinLimit(uint32_t threads) const {
  const int per_sm = threads > 256 ? blocks_per_sm_512_ : blocks_per_sm_256_;
  const uint32_t resident = static_cast<uint32_t>(std::max(per_sm, 0) * multiprocessors_);
  return std::max(1u, std::min(resident, kMaxBlocks));
}

}  // namespace colltest::gpu
