// One kernel per memory primitive of worker/backends/gpu/gpu_runtime.h, so that the generated
// AMDGPU assembly of each can be read on its own: tests/hip_isa/check_isa.py compiles this file
// for gfx942/gfx950 (device code only, -S) and checks every kernel for the instructions the
// primitive promises (docs/hip.md). extern "C" keeps the symbol names plain.
#include <cstdint>

#include "worker/backends/gpu/gpu_runtime.h"

using namespace colltest::gpu;

extern "C" {

__global__ void probe_load_volatile16(const uint4* p, uint4* out) { *out = LoadVolatile16(p); }
__global__ void probe_load_shared16(const uint4* p, uint4* out) { *out = LoadShared16(p); }
__global__ void probe_store16(uint4* p, uint4 v) { Store16(p, v); }
__global__ void probe_store_nontemporal16(uint4* p, uint4 v) { StoreNonTemporal16(p, v); }
__global__ void probe_load_volatile32(const uint32_t* p, uint32_t* out) {
  *out = LoadVolatile32(p);
}
__global__ void probe_store_volatile32(uint32_t* p, uint32_t v) { StoreVolatile32(p, v); }
// The plain load after the acquire and the plain store before the release (and around the fences)
// give the ordering something to order: without them the compiler drops waits that guard nothing.
__global__ void probe_load_acquire_sys(const uint32_t* p, const uint32_t* data, uint32_t* out) {
  out[0] = LoadAcquireSys(p);
  out[1] = *data;
}
__global__ void probe_store_release_sys(uint32_t* p, uint32_t* data, uint32_t v) {
  *data = v;
  StoreReleaseSys(p, v);
}
__global__ void probe_store_relaxed_sys(uint32_t* p, uint32_t v) { StoreRelaxedSys(p, v); }
__global__ void probe_fence_system(uint32_t* data, uint32_t* out) {
  data[0] = 1;
  FenceSystem();
  *out = data[1];
}
__global__ void probe_fence_device(uint32_t* data, uint32_t* out) {
  data[0] = 1;
  FenceDevice();
  *out = data[1];
}
__global__ void probe_global_timer(uint64_t* out) { *out = GlobalTimerNs(); }

}  // extern "C"
