// The one place where CUDA and HIP differ. Everything else in the GPU backend (host code and
// kernels) is written against the names below, so the same source builds with nvcc or hipcc.
// Host code (.cc, compiled by the C++ compiler) sees the runtime API wrappers; kernel code (.cu,
// compiled by nvcc or hipcc) also sees the device intrinsics.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#if defined(__HIPCC__) || defined(COLLTEST_GPU_HIP)
#include <hip/hip_runtime.h>
#if defined(__clang__) && __clang_major__ >= 17 && HIP_VERSION_MAJOR < 6
// ROCm 5's hip_fp16.h calls two reciprocal helpers that clang's HIP wrapper headers declared up to
// LLVM 16 and no longer do: the gfx942/gfx950 compile with clang-22 (docs/hip.md) needs them here.
extern "C" {
__device__ inline _Float16 __llvm_amdgcn_rcp_f16(_Float16 x) {
  return static_cast<_Float16>(1) / x;
}
__device__ inline __2f16 __llvm_amdgcn_rcp_2f16(__2f16 x) {
  return __2f16{__llvm_amdgcn_rcp_f16(x.x), __llvm_amdgcn_rcp_f16(x.y)};
}
}
#endif
#include <hip/hip_fp16.h>
#include <hsa/hsa_ext_amd.h>  // hsa_amd_link_info_type_t, which hipExtGetLinkTypeAndHopCount reports
#define COLLTEST_GPU_API(x) hip##x
#define COLLTEST_GPU_VENDOR_HIP 1
// The runtime's name, as version texts print it.
#define COLLTEST_GPU_RUNTIME_NAME "HIP"
using ColltestGpuDeviceProp = hipDeviceProp_t;
#else
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#if defined(__CUDACC__)
#include <cuda/atomic>
#endif
#define COLLTEST_GPU_API(x) cuda##x
#define COLLTEST_GPU_VENDOR_HIP 0
#define COLLTEST_GPU_RUNTIME_NAME "CUDA"
using ColltestGpuDeviceProp = cudaDeviceProp;
#endif

// After the runtime's headers: HIP defines __host__ and __device__ there, which COLLTEST_HD uses.
#include "worker/numerics/dtype.h"
#include "worker/numerics/host_device.h"

namespace colltest::gpu {

// ---- Host and device ----------------------------------------------------------------------------

// fp16 bits -> float in kernels and host code alike: the device's conversion instruction in the
// device pass, the numerics library's conversion on the host; both are exact.
COLLTEST_HD float HalfBitsToFloat(uint16_t h) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __half2float(__ushort_as_half(h));
#else
  return Fp16ToFloat(h);
#endif
}

// ---- Host runtime API ---------------------------------------------------------------------------
using Error = COLLTEST_GPU_API(Error_t);
using Stream = COLLTEST_GPU_API(Stream_t);
using Event = COLLTEST_GPU_API(Event_t);
using Graph = COLLTEST_GPU_API(Graph_t);
using GraphExec = COLLTEST_GPU_API(GraphExec_t);
using IpcMemHandle = COLLTEST_GPU_API(IpcMemHandle_t);
inline constexpr Error kSuccess = COLLTEST_GPU_API(Success);
inline constexpr const char* kBackendName = COLLTEST_GPU_VENDOR_HIP ? "hip" : "cuda";
// The backend's bit in a kernel plugin's `backends` (COLLTEST_BACKEND_HIP, _CUDA of
// include/colltest/kernel_plugin.h).
inline constexpr uint32_t kPluginBackendBit = COLLTEST_GPU_VENDOR_HIP ? (1u << 2) : (1u << 1);

inline const char* ErrorString(Error e) { return COLLTEST_GPU_API(GetErrorString)(e); }
inline Error GetLastError() { return COLLTEST_GPU_API(GetLastError)(); }
inline Error SetDevice(int d) { return COLLTEST_GPU_API(SetDevice)(d); }
inline Error GetDeviceCount(int* n) { return COLLTEST_GPU_API(GetDeviceCount)(n); }

struct DeviceInfo {
  char name[256];
  uint64_t memory_bytes;
  int multiprocessors;
  // The device's own FP8 is e4m3fnuz (MI300: gfx940, gfx941, gfx942); else the OCP e4m3fn
  // (NVIDIA, gfx950). docs/quantisation.md, section 1.
  bool fp8_fnuz;
};
inline Error GetDeviceInfo(int d, DeviceInfo* info) {
  ColltestGpuDeviceProp p;
  const Error e = COLLTEST_GPU_API(GetDeviceProperties)(&p, d);
  if (e != kSuccess) return e;
  for (size_t i = 0; i < sizeof info->name; ++i) {
    info->name[i] = p.name[i];
    if (p.name[i] == 0) break;
  }
  info->name[sizeof info->name - 1] = 0;
  info->memory_bytes = p.totalGlobalMem;
  info->multiprocessors = p.multiProcessorCount;
#if COLLTEST_GPU_VENDOR_HIP
  const char* arch = p.gcnArchName;
  info->fp8_fnuz = arch[0] == 'g' && arch[1] == 'f' && arch[2] == 'x' && arch[3] == '9' &&
                   arch[4] == '4' && arch[5] >= '0' && arch[5] <= '2';
#else
  info->fp8_fnuz = false;
#endif
  return kSuccess;
}

// ---- Machine identity (the probe): each query stands alone, so one that fails leaves only its
// own field empty.

// The 16 bytes the runtime identifies a device by. CUDA: binary, shown as nvidia-smi shows it.
// ROCm: its unique id as up to 16 ASCII hex digits, NUL-padded (hipDeviceGetUuid copies a string).
inline constexpr bool kUuidIsText = COLLTEST_GPU_VENDOR_HIP;
struct Uuid {
  unsigned char bytes[16];
};
inline Error GetDeviceUuid(int d, Uuid* uuid) {
#if COLLTEST_GPU_VENDOR_HIP
#if HIP_VERSION_MAJOR * 100 + HIP_VERSION_MINOR < 501
  (void)d;
  (void)uuid;
  return hipErrorNotSupported;  // hipDeviceGetUuid is exported from ROCm 5.1 on
#else
  // hipDeviceProp_t of ROCm 5.2 has no uuid; the call takes a hipDevice_t, not an ordinal.
  hipDevice_t device;
  Error e = hipDeviceGet(&device, d);
  if (e != kSuccess) return e;
  hipUUID u;
  e = hipDeviceGetUuid(&u, device);
  if (e != kSuccess) return e;
  for (size_t i = 0; i < sizeof uuid->bytes; ++i)
    uuid->bytes[i] = static_cast<unsigned char>(u.bytes[i]);
  return kSuccess;
#endif
#else
  ColltestGpuDeviceProp p;
  const Error e = cudaGetDeviceProperties(&p, d);
  if (e != kSuccess) return e;
  for (size_t i = 0; i < sizeof uuid->bytes; ++i)
    uuid->bytes[i] = static_cast<unsigned char>(p.uuid.bytes[i]);
  return kSuccess;
#endif
}

// "0000:19:00.0"-style text into `buf` (NUL-terminated).
inline Error GetPciBusId(int d, char* buf, int len) {
  return COLLTEST_GPU_API(DeviceGetPCIBusId)(buf, len, d);
}

// Version numbers: CUDA encodes 1000 * major + 10 * minor (13000 is 13.0). HIP's have no such
// encoding (the runtime's is HIP_VERSION-style, the driver's an approximation), so they are kept as
// reported.
inline Error DriverVersion(int* v) { return COLLTEST_GPU_API(DriverGetVersion)(v); }
inline Error RuntimeVersion(int* v) { return COLLTEST_GPU_API(RuntimeGetVersion)(v); }
inline constexpr bool kVersionIsMajorMinor = !COLLTEST_GPU_VENDOR_HIP;
// Where the kernel driver states its own version ("580.159.04"; the runtime only knows the API
// version it supports): the NVIDIA module's banner, or the amdgpu module's version.
inline constexpr const char* kKernelDriverVersionFile =
    COLLTEST_GPU_VENDOR_HIP ? "/sys/module/amdgpu/version" : "/proc/driver/nvidia/version";

// Whether `d` can map memory of `peer`, and the runtime's view of that direction of the link.
inline Error CanAccessPeer(int* can, int d, int peer) {
  return COLLTEST_GPU_API(DeviceCanAccessPeer)(can, d, peer);
}
using P2PAttr = COLLTEST_GPU_API(DeviceP2PAttr);
inline constexpr P2PAttr kP2PPerformanceRank = COLLTEST_GPU_API(DevP2PAttrPerformanceRank);
inline constexpr P2PAttr kP2PNativeAtomics = COLLTEST_GPU_API(DevP2PAttrNativeAtomicSupported);
inline Error P2PAttribute(int* value, P2PAttr attr, int d, int peer) {
  return COLLTEST_GPU_API(DeviceGetP2PAttribute)(value, attr, d, peer);
}

// ---- Machine facts beyond the runtime: a board's serial, the kind of a link, the processes
// using a device. CUDA asks NVML (nvml_library.h, opened at run time and compiled into the CUDA
// build only: its users test COLLTEST_GPU_HAVE_NVML). HIP has no such library that works without
// a context: sysfs (worker/pci_sysfs.h), /proc (worker/device_users_scan.h) and the runtime's
// link query below.
#define COLLTEST_GPU_HAVE_NVML (!COLLTEST_GPU_VENDOR_HIP)

// The link of a pair as the runtime names it: HIP tells xGMI from PCIe and counts the hops. kind
// is nullptr where the runtime does not say (CUDA's never does; NVML does).
struct RuntimeLink {
  const char* kind = nullptr;
  uint32_t hops = 0;
};
inline RuntimeLink GetRuntimeLink(int a, int b) {
#if COLLTEST_GPU_VENDOR_HIP
  uint32_t type = 0, hops = 0;
  if (hipExtGetLinkTypeAndHopCount(a, b, &type, &hops) != hipSuccess) return {};
  if (type == HSA_AMD_LINK_INFO_TYPE_XGMI) return {"xgmi", hops};
  if (type == HSA_AMD_LINK_INFO_TYPE_PCIE) return {"pcie", hops};
  return {nullptr, hops};
#else
  (void)a;
  (void)b;
  return {};
#endif
}

inline Error Malloc(void** p, size_t n) { return COLLTEST_GPU_API(Malloc)(p, n); }
inline Error Free(void* p) { return COLLTEST_GPU_API(Free)(p); }
inline Error Memset(void* p, int v, size_t n) { return COLLTEST_GPU_API(Memset)(p, v, n); }
inline Error MemsetAsync(void* p, int v, size_t n, Stream s) {
  return COLLTEST_GPU_API(MemsetAsync)(p, v, n, s);
}
inline Error MemcpyToHost(void* dst, const void* src, size_t n) {
  return COLLTEST_GPU_API(Memcpy)(dst, src, n, COLLTEST_GPU_API(MemcpyDeviceToHost));
}
inline Error DeviceSynchronize() { return COLLTEST_GPU_API(DeviceSynchronize)(); }

inline Error IpcGetMemHandle(IpcMemHandle* h, void* p) {
  return COLLTEST_GPU_API(IpcGetMemHandle)(h, p);
}
inline Error IpcOpenMemHandle(void** p, const IpcMemHandle& h) {
  return COLLTEST_GPU_API(IpcOpenMemHandle)(p, h, COLLTEST_GPU_API(IpcMemLazyEnablePeerAccess));
}
inline Error IpcCloseMemHandle(void* p) { return COLLTEST_GPU_API(IpcCloseMemHandle)(p); }

// Pinned host memory the device writes through (hang records readable while a kernel spins).
inline Error HostAllocMapped(void** p, size_t n) {
#if COLLTEST_GPU_VENDOR_HIP
  return hipHostMalloc(p, n, hipHostMallocMapped | hipHostMallocCoherent);
#else
  return cudaHostAlloc(p, n, cudaHostAllocMapped);
#endif
}
inline Error HostGetDevicePointer(void** dev, void* host) {
  return COLLTEST_GPU_API(HostGetDevicePointer)(dev, host, 0);
}
inline Error FreeHost(void* p) {
#if COLLTEST_GPU_VENDOR_HIP
  return hipHostFree(p);
#else
  return cudaFreeHost(p);
#endif
}

inline Error StreamCreate(Stream* s) {
  return COLLTEST_GPU_API(StreamCreateWithFlags)(s, COLLTEST_GPU_API(StreamNonBlocking));
}
inline Error StreamDestroy(Stream s) { return COLLTEST_GPU_API(StreamDestroy)(s); }
inline Error StreamSynchronize(Stream s) { return COLLTEST_GPU_API(StreamSynchronize)(s); }
inline constexpr Error kNotReady = COLLTEST_GPU_API(ErrorNotReady);
inline Error StreamQuery(Stream s) { return COLLTEST_GPU_API(StreamQuery)(s); }
// A host function in stream order (a host node when captured): the injected crash of a worker.
using HostFn = void (*)(void*);
#if COLLTEST_GPU_VENDOR_HIP && HIP_VERSION_MAJOR * 100 + HIP_VERSION_MINOR < 504
// ROCm declares hipLaunchHostFunc from 5.2 but exports it only from 5.4. Before that, a stream
// callback: the same in eager mode, but a capture refuses it.
struct HostFnCall {
  HostFn fn;
  void* data;
};
inline void RunHostFnCall(hipStream_t, hipError_t, void* call) {
  const HostFnCall c = *static_cast<HostFnCall*>(call);
  delete static_cast<HostFnCall*>(call);
  c.fn(c.data);
}
inline Error LaunchHostFunc(Stream s, HostFn fn, void* data) {
  return hipStreamAddCallback(s, &RunHostFnCall, new HostFnCall{fn, data}, 0);
}
#else
inline Error LaunchHostFunc(Stream s, HostFn fn, void* data) {
  return COLLTEST_GPU_API(LaunchHostFunc)(s, fn, data);
}
#endif
inline Error EventCreate(Event* e) { return COLLTEST_GPU_API(EventCreate)(e); }
inline Error EventDestroy(Event e) { return COLLTEST_GPU_API(EventDestroy)(e); }
inline Error EventRecord(Event e, Stream s) { return COLLTEST_GPU_API(EventRecord)(e, s); }
inline Error EventElapsedMs(float* ms, Event a, Event b) {
  return COLLTEST_GPU_API(EventElapsedTime)(ms, a, b);
}

// Thread-local capture: gRPC threads of this process must not be affected by the capture.
inline Error BeginCapture(Stream s) {
  return COLLTEST_GPU_API(StreamBeginCapture)(s, COLLTEST_GPU_API(StreamCaptureModeThreadLocal));
}
inline Error EndCapture(Stream s, Graph* g) { return COLLTEST_GPU_API(StreamEndCapture)(s, g); }
inline Error GraphInstantiate(GraphExec* exec, Graph g) {
#if COLLTEST_GPU_VENDOR_HIP
  return hipGraphInstantiateWithFlags(exec, g, 0);  // hipGraphInstantiate has the CUDA 11 signature
#else
  return COLLTEST_GPU_API(GraphInstantiate)(exec, g, 0);
#endif
}
inline Error GraphLaunch(GraphExec exec, Stream s) {
  return COLLTEST_GPU_API(GraphLaunch)(exec, s);
}
inline Error GraphDestroy(Graph g) { return COLLTEST_GPU_API(GraphDestroy)(g); }
inline Error GraphExecDestroy(GraphExec g) { return COLLTEST_GPU_API(GraphExecDestroy)(g); }

// Whether LaunchEarly (below) launches early; host code, so that a backend can turn it off.
// COLLTEST_EARLY_LAUNCH=0 in the worker's environment launches plainly: the A/B switch of the
// benchmark that measures what early launch buys (bench/NOTES.md). DisableEarlyLaunch() does the
// same for the rest of the process.
inline std::atomic<bool>& EarlyLaunchSwitch() {
  static std::atomic<bool> enabled{[] {
    const char* v = std::getenv("COLLTEST_EARLY_LAUNCH");
    return v == nullptr || std::string_view(v) != "0";
  }()};
  return enabled;
}
inline bool EarlyLaunchEnabled() { return EarlyLaunchSwitch().load(std::memory_order_relaxed); }
// An early-launched kernel's blocks take their place on the device while they wait for the kernel
// before them: a rank then holds two grids there. Ranks that share a device (docs/shared-gpu.md)
// must not, or the waiting blocks of some ranks keep the spinning blocks of others off the device.
inline void DisableEarlyLaunch() { EarlyLaunchSwitch().store(false, std::memory_order_relaxed); }

}  // namespace colltest::gpu

// ---- Device intrinsics (GPU compiler only)
// -------------------------------------------------------
#if defined(__CUDACC__) || defined(__HIPCC__)
namespace colltest::gpu {

// On a lambda (after its parameter list): its call operator is inlined where the lambda is called
// before the caller is optimized, as a __forceinline__ function is, so that a loop written with
// lambdas (device_sync.cuh's waits) compiles as if written out: without it clang inlines the lambda
// only after optimizing it on its own, and AMDGPU code of the same loop came out different.
#define COLLTEST_INLINE_LAMBDA __attribute__((always_inline))

template <class Kernel>
inline Error OccupancyBlocksPerSm(int* n, Kernel k, int threads) {
  return COLLTEST_GPU_API(OccupancyMaxActiveBlocksPerMultiprocessor)(n, k, threads, 0);
}

// Launches `kernel` so that it may start while the kernel before it in the stream still runs
// (CUDA programmatic dependent launch; captured into graphs as a programmatic edge). The kernel
// must call GridDependencyWait() before it touches anything an earlier kernel writes. Measured on
// an H200: a graph kernel launch costs 0.66 us with it, 0.74 without. HIP has no such launch: a
// plain one, and GridDependencyWait/LaunchDependents are no-ops.
template <class... Params, class... Args>
inline Error LaunchEarly(void (*kernel)(Params...), uint32_t grid, uint32_t threads, Stream s,
                         Args&&... args) {
#if COLLTEST_GPU_VENDOR_HIP
  kernel<<<grid, threads, 0, s>>>(static_cast<Args&&>(args)...);
  return GetLastError();
#else
  if (!EarlyLaunchEnabled()) {
    kernel<<<grid, threads, 0, s>>>(static_cast<Args&&>(args)...);
    return GetLastError();
  }
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(threads);
  config.stream = s;
  cudaLaunchAttribute early[1];
  early[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  early[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = early;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, kernel, static_cast<Args&&>(args)...);
#endif
}

inline constexpr int kWarpSize = COLLTEST_GPU_VENDOR_HIP ? 64 : 32;

#if COLLTEST_GPU_VENDOR_HIP
// clang's nontemporal and volatile 16-byte accesses need a builtin vector type, not HIP's uint4
// class: one global_load/store_dwordx4.
typedef uint32_t ColltestU32x4 __attribute__((ext_vector_type(4)));
__device__ __forceinline__ uint4 FromU32x4(ColltestU32x4 v) {
  return make_uint4(v.x, v.y, v.z, v.w);
}
#endif

// Nanoseconds (CUDA %globaltimer) or ticks of a fixed-rate counter converted to ns (HIP).
__device__ __forceinline__ uint64_t GlobalTimerNs() {
#if COLLTEST_GPU_VENDOR_HIP
  return __builtin_amdgcn_s_memrealtime() * 10;  // 100 MHz
#else
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#endif
}

// A 16-byte load that always goes to memory: what a Lamport consumer polls while a peer writes
// the slot over the link, so no cached copy may answer it.
// HIP: a volatile load, not __builtin_nontemporal_load. In the gfx942/gfx950 assembly
// (tests/hip_isa, docs/hip.md) the nontemporal load is a plain load with a streaming hint
// (`global_load_dwordx4 ... nt`, which the vector L1 may answer from a stale line; AMDGPU's memory
// model invalidates that L1 only with `buffer_inv sc0`), and where the address is uniform the
// compiler even turns it into a scalar `s_load_dwordx4` through the scalar cache, or could hoist it
// out of the loop, as nothing says memory changes under it. The volatile load is
// `global_load_dwordx4 ... sc0 sc1` (system scope: past L1, and L2 lines of local memory are kept
// coherent with peers' writes) with `glc` on gfx90a: one 16-byte load, each dword single-copy
// atomic, which is what the flag-in-data rule reads word by word, as CUDA's ld.volatile does.
__device__ __forceinline__ uint4 LoadVolatile16(const void* p) {
#if COLLTEST_GPU_VENDOR_HIP
  return FromU32x4(*static_cast<const volatile ColltestU32x4*>(p));
#else
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
#endif
}

// A load that skips the (non-coherent) L1: peers' data written before a barrier.
__device__ __forceinline__ uint4 LoadShared16(const void* p) {
#if COLLTEST_GPU_VENDOR_HIP
  return FromU32x4(*static_cast<const volatile ColltestU32x4*>(p));
#else
  return __ldcg(static_cast<const uint4*>(p));
#endif
}

__device__ __forceinline__ void Store16(void* p, uint4 v) { *static_cast<uint4*>(p) = v; }

// Streaming store for data only a peer reads back.
__device__ __forceinline__ void StoreNonTemporal16(void* p, uint4 v) {
#if COLLTEST_GPU_VENDOR_HIP
  const ColltestU32x4 w = {v.x, v.y, v.z, v.w};
  __builtin_nontemporal_store(w, static_cast<ColltestU32x4*>(p));
#else
  __stcs(static_cast<uint4*>(p), v);
#endif
}

// Programmatic dependent launch (LaunchEarly): the wait blocks until every kernel before this one
// in the stream completed and its memory is visible; the trigger lets the next early-launched
// kernel start its own prologue. Both are no-ops where the kernel was launched plainly.
__device__ __forceinline__ void GridDependencyWait() {
#if !COLLTEST_GPU_VENDOR_HIP && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void LaunchDependents() {
#if !COLLTEST_GPU_VENDOR_HIP && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Device-scope counter of blocks: the release orders the block's earlier loads before its
// increment; the acquire load pairs with it.
__device__ __forceinline__ void AtomicAddReleaseDevice(uint32_t* p, uint32_t v) {
#if COLLTEST_GPU_VENDOR_HIP
  __hip_atomic_fetch_add(p, v, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_AGENT);
#else
  cuda::atomic_ref<uint32_t, cuda::thread_scope_device>(*p).fetch_add(v,
                                                                      cuda::memory_order_release);
#endif
}
__device__ __forceinline__ uint32_t LoadAcquireDevice(const uint32_t* p) {
#if COLLTEST_GPU_VENDOR_HIP
  return __hip_atomic_load(p, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_AGENT);
#else
  return cuda::atomic_ref<uint32_t, cuda::thread_scope_device>(*const_cast<uint32_t*>(p))
      .load(cuda::memory_order_acquire);
#endif
}

__device__ __forceinline__ uint32_t LoadVolatile32(const uint32_t* p) {
  return *static_cast<const volatile uint32_t*>(p);
}
__device__ __forceinline__ void StoreVolatile32(uint32_t* p, uint32_t v) {
  *static_cast<volatile uint32_t*>(p) = v;
}

__device__ __forceinline__ uint32_t LoadAcquireSys(const uint32_t* p) {
#if COLLTEST_GPU_VENDOR_HIP
  return __hip_atomic_load(p, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_SYSTEM);
#else
  return cuda::atomic_ref<uint32_t, cuda::thread_scope_system>(*const_cast<uint32_t*>(p))
      .load(cuda::memory_order_acquire);
#endif
}
__device__ __forceinline__ void StoreReleaseSys(uint32_t* p, uint32_t v) {
#if COLLTEST_GPU_VENDOR_HIP
  __hip_atomic_store(p, v, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_SYSTEM);
#else
  cuda::atomic_ref<uint32_t, cuda::thread_scope_system>(*p).store(v, cuda::memory_order_release);
#endif
}
__device__ __forceinline__ void StoreRelaxedSys(uint32_t* p, uint32_t v) {
#if COLLTEST_GPU_VENDOR_HIP
  __hip_atomic_store(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
#else
  cuda::atomic_ref<uint32_t, cuda::thread_scope_system>(*p).store(v, cuda::memory_order_relaxed);
#endif
}

#if COLLTEST_GPU_VENDOR_HIP
// The fences of __threadfence_system()/__threadfence() as the compiler's builtin: ROCm 5's headers
// call __atomic_work_item_fence of the device libraries for them, which the gfx942/gfx950 compile
// (-nogpulib, docs/hip.md) cannot link, and the builtin is what that function expands to.
__device__ __forceinline__ void FenceSystem() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, ""); }
__device__ __forceinline__ void FenceDevice() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "agent"); }
#else
__device__ __forceinline__ void FenceSystem() { __threadfence_system(); }
__device__ __forceinline__ void FenceDevice() { __threadfence(); }
#endif

// The lane `lane ^ offset`'s v, every lane of the warp taking part.
template <class V>
__device__ __forceinline__ V ShflXor(V v, int offset) {
#if COLLTEST_GPU_VENDOR_HIP
  return __shfl_xor(v, offset);
#else
  return __shfl_xor_sync(0xffffffffu, v, offset);
#endif
}

// Lane `src_lane`'s v, every lane of the warp taking part.
template <class V>
__device__ __forceinline__ V ShflFrom(V v, int src_lane) {
#if COLLTEST_GPU_VENDOR_HIP
  return __shfl(v, src_lane);
#else
  return __shfl_sync(0xffffffffu, v, src_lane);
#endif
}

template <class V>
__device__ __forceinline__ V WarpSum(V v) {
  for (int o = kWarpSize / 2; o > 0; o /= 2) v += ShflXor(v, o);
  return v;
}
// fmaxf skips a NaN operand, as the quantising epilogues' amax does (quant_epilogue.h).
__device__ __forceinline__ float WarpMax(float v) {
  for (int o = kWarpSize / 2; o > 0; o /= 2) v = fmaxf(v, ShflXor(v, o));
  return v;
}

// fp16 bit patterns <-> float, round to nearest even (HalfBitsToFloat is above: host code uses it
// too).
__device__ __forceinline__ uint16_t FloatToHalfBits(float f) {
  return __half_as_ushort(__float2half_rn(f));
}

}  // namespace colltest::gpu
#endif
