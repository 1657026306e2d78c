// A CUDA kernel that never finishes: it waits, with __nanosleep, for a flag in its own workspace
// that nobody sets. colltest must give the case a hang verdict on the GPU and recover the ranks.
// The CUDA twin of tests/plugins/fixtures/never_finishes.c (plugin name "never_finishes").
#include <colltest/kernel_plugin.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

namespace {

__global__ void wait_forever(const volatile uint64_t* flag) {
  while (*flag == 0) __nanosleep(1000);
}

colltest_status_t never_workspace_bytes(const colltest_shape_v1_t*, uint64_t* bytes, char*,
                                        size_t) {
  *bytes = 64;  // the flag
  return COLLTEST_OK;
}

colltest_status_t never_init(const colltest_group_v1_t* group, void** state, char* err,
                             size_t err_len) {
  if (group->workspace_bytes < 8 || group->largest.rank >= group->largest.world) {
    snprintf(err, err_len, "never_finishes: bad group (rank %u, workspace %llu bytes)",
             group->largest.rank, static_cast<unsigned long long>(group->workspace_bytes));
    return COLLTEST_ERROR;
  }
  *state = group->peer_workspace[group->largest.rank];  // own workspace, zeroed: the flag is 0
  return COLLTEST_OK;
}

colltest_status_t never_launch(void* state, const colltest_launch_v1_t* call, char* err,
                               size_t err_len) {
  wait_forever<<<1, 1, 0, static_cast<cudaStream_t>(call->stream)>>>(
      static_cast<const uint64_t*>(state));
  const cudaError_t rc = cudaGetLastError();
  if (rc != cudaSuccess) {
    snprintf(err, err_len, "never_finishes: kernel launch: %s", cudaGetErrorString(rc));
    return COLLTEST_ERROR;
  }
  return COLLTEST_OK;
}

colltest_status_t never_fini(void*, char*, size_t) { return COLLTEST_OK; }

}  // namespace

extern "C" __attribute__((visibility("default"))) const colltest_kernel_v1_t colltest_kernel_v1 = {
    COLLTEST_KERNEL_ABI_VERSION,
    sizeof(colltest_kernel_v1_t),
    "never_finishes",
    "1.0 (fixture)",
    COLLTEST_BACKEND_CUDA,
    (1u << COLLTEST_DTYPE_BF16) | (1u << COLLTEST_DTYPE_FP16) | (1u << COLLTEST_DTYPE_FP32),
    (1u << 2) | (1u << 4) | (1u << 8),
    1u << COLLTEST_EPILOGUE_NONE,
    0,  // no graph capture, as the cpu twin
    0,
    1u << 24,
    never_workspace_bytes,
    never_init,
    nullptr,
    never_launch,
    never_fini,
};
