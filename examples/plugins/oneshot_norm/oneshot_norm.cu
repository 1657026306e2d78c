// oneshot_norm for the cuda (or, compiled as HIP, the hip) backend: the GPU twin of
// oneshot_norm_cpu.c, one kernel a call, safe to capture into a graph.
//
// A rank's workspace: 64 call counters (uint64), 64 flags (uint64, one a block), then two data
// buffers. Call e runs G = min(m, 64) blocks (the same on every rank); block b takes rows b, b + G,
// ... It copies its rows of this rank's input into its own buffer[e % 2], publishes flag[b] = e,
// waits until flag[b] >= e on every peer, then reduces the peers' rows in rank order and norms
// them. The epoch lives in device memory (counters, not a kernel argument), so a replayed graph
// moves on by itself. Two buffers suffice: the kernel of call e starts after this rank's kernel
// e - 1 ended, and that one saw every peer inside call e - 1, so done with call e - 2's buffers.
//
// Build: see CMakeLists.txt and README.md beside this file (nvcc, or clang/hipcc as HIP).
#include <colltest/kernel_plugin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#if defined(__HIP_PLATFORM_AMD__) || defined(__HIPCC__) || defined(__HIP__)
#define ONESHOT_HIP 1
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>
#define cudaError_t hipError_t
#define cudaSuccess hipSuccess
#define cudaGetLastError hipGetLastError
#define cudaGetErrorString hipGetErrorString
#define cudaStream_t hipStream_t
#define ONESHOT_BACKEND COLLTEST_BACKEND_HIP
#define ONESHOT_SLEEP() __builtin_amdgcn_s_sleep(2)
#else
#define ONESHOT_HIP 0
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#define ONESHOT_BACKEND COLLTEST_BACKEND_CUDA
#define ONESHOT_SLEEP() __nanosleep(100)
#endif

namespace {

constexpr int kMaxWorld = 8;
constexpr uint32_t kMaxBlocks = 64;
constexpr int kThreads = 256;
constexpr uint64_t kHeaderBytes = 2 * kMaxBlocks * sizeof(uint64_t);  // counters, then flags

struct State {
  uint32_t world, rank;
  uint64_t buffer_bytes;         // each of the two data buffers
  unsigned char* ws[kMaxWorld];  // every rank's workspace, as this rank addresses it
};

// The kernel's argument, by value: a captured graph keeps it as it was, which is what it needs.
struct Args {
  unsigned char* ws[kMaxWorld];
  uint32_t world, rank, m, n;
  uint64_t buffer_bytes;
  const void* input;
  const void* residual_in;
  void* residual_out;
  const void* weight;
  void* out;
  float eps;
};

// Element types: T as stored, converted through float with round to nearest even.
struct Bf16 {
  uint16_t bits;
#if ONESHOT_HIP
  // hip_bf16.h is missing from older ROCm; this is what __float2bfloat16_rn does (NaN aside).
  __device__ float to_float() const { return __uint_as_float(uint32_t(bits) << 16); }
  __device__ static Bf16 from_float(float f) {
    const uint32_t u = __float_as_uint(f);
    return Bf16{uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16)};
  }
#else
  __device__ float to_float() const { return __bfloat162float(__ushort_as_bfloat16(bits)); }
  __device__ static Bf16 from_float(float f) {
    return Bf16{__bfloat16_as_ushort(__float2bfloat16_rn(f))};
  }
#endif
};
struct Fp16 {
  __half h;
  __device__ float to_float() const { return __half2float(h); }
  __device__ static Fp16 from_float(float f) { return Fp16{__float2half_rn(f)}; }
};
struct Fp32 {
  float f;
  __device__ float to_float() const { return f; }
  __device__ static Fp32 from_float(float v) { return Fp32{v}; }
};

template <class T>
__device__ float ld(const void* p, size_t i) {
  return static_cast<const T*>(p)[i].to_float();
}
template <class T>
__device__ void st(void* p, size_t i, float v) {
  static_cast<T*>(p)[i] = T::from_float(v);
}
template <class T>
__device__ float round_to(float v) {
  return T::from_float(v).to_float();
}

template <class T>
__global__ void __launch_bounds__(kThreads) oneshot_kernel(Args a) {
  __shared__ uint64_t epoch;
  __shared__ float partial[kThreads];
  const uint32_t b = blockIdx.x, G = gridDim.x, n = a.n;
  uint64_t* counters = reinterpret_cast<uint64_t*>(a.ws[a.rank]);
  uint64_t* own_flags = counters + kMaxBlocks;
  if (threadIdx.x == 0) epoch = counters[b] + 1;  // written by this rank's previous kernel
  __syncthreads();
  const uint64_t e = epoch;
  const size_t buf = kHeaderBytes + (e % 2) * a.buffer_bytes;

  // 1. This rank's rows into its own buffer, then flag[b] = e.
  T* mine = reinterpret_cast<T*>(a.ws[a.rank] + buf);
  for (uint32_t row = b; row < a.m; row += G)
    for (uint32_t c = threadIdx.x; c < n; c += kThreads)
      mine[size_t(row) * n + c] = static_cast<const T*>(a.input)[size_t(row) * n + c];
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system();
    *reinterpret_cast<volatile uint64_t*>(&own_flags[b]) = e;
    // 2. Wait for every peer's block b.
    for (uint32_t r = 0; r < a.world; ++r) {
      volatile uint64_t* flag = reinterpret_cast<uint64_t*>(a.ws[r]) + kMaxBlocks + b;
      while (*flag < e) ONESHOT_SLEEP();
    }
    __threadfence_system();
    // The counters this block owns (b, b + G, ... < 64): all 64 stay equal to the calls made,
    // whatever G the next call has.
    for (uint32_t j = b; j < kMaxBlocks; j += G) counters[j] = e;
  }
  __syncthreads();

  // 3. Each row: the sum in rank order (rank 0's value first, so -0.0 everywhere stays -0.0),
  // rounded; the residual add, rounded; then the norm.
  for (uint32_t row = b; row < a.m; row += G) {
    const size_t base = size_t(row) * n;
    float sum_sq = 0.f;
    for (uint32_t c = threadIdx.x; c < n; c += kThreads) {
      float acc = ld<T>(a.ws[0] + buf, base + c);
      for (uint32_t r = 1; r < a.world; ++r) acc += ld<T>(a.ws[r] + buf, base + c);
      acc = round_to<T>(acc);
      if (a.residual_in != nullptr) acc = round_to<T>(acc + ld<T>(a.residual_in, base + c));
      st<T>(a.residual_out, base + c, acc);
      sum_sq += acc * acc;
    }
    partial[threadIdx.x] = sum_sq;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s /= 2) {
      if (int(threadIdx.x) < s) partial[threadIdx.x] += partial[threadIdx.x + s];
      __syncthreads();
    }
    const float inv_rms = 1.f / sqrtf(partial[0] / float(n) + a.eps);
    for (uint32_t c = threadIdx.x; c < n; c += kThreads)  // each thread rereads what it wrote
      st<T>(a.out, base + c, ld<T>(a.residual_out, base + c) * inv_rms * ld<T>(a.weight, c));
    __syncthreads();  // partial[] is reused by the next row
  }
}

}  // namespace

// The host side. Not in clang's HIP device pass, which would emit the exported const object (and
// so the entry points) on the GPU too.
#if !defined(__HIP_DEVICE_COMPILE__)
namespace {

size_t elem_bytes(uint32_t dtype) {
  switch (dtype) {
    case COLLTEST_DTYPE_BF16:
    case COLLTEST_DTYPE_FP16:
      return 2;
    case COLLTEST_DTYPE_FP32:
      return 4;
  }
  return 0;
}

colltest_status_t oneshot_workspace_bytes(const colltest_shape_v1_t* shape, uint64_t* bytes,
                                          char* err, size_t err_len) {
  const size_t elem = elem_bytes(shape->dtype);
  if (elem == 0) {
    snprintf(err, err_len, "oneshot_norm: dtype %u is not bf16, fp16 or fp32", shape->dtype);
    return COLLTEST_ERROR;
  }
  *bytes = kHeaderBytes + 2 * uint64_t(shape->m) * shape->n * elem;
  return COLLTEST_OK;
}

colltest_status_t oneshot_init(const colltest_group_v1_t* group, void** state, char* err,
                               size_t err_len) {
  if (group->largest.world > kMaxWorld || group->largest.rank >= group->largest.world ||
      group->workspace_bytes < kHeaderBytes) {
    snprintf(err, err_len, "oneshot_norm: bad group (world %u, rank %u, workspace %llu bytes)",
             group->largest.world, group->largest.rank,
             static_cast<unsigned long long>(group->workspace_bytes));
    return COLLTEST_ERROR;
  }
  State* s = static_cast<State*>(calloc(1, sizeof(State)));
  if (s == nullptr) {
    snprintf(err, err_len, "oneshot_norm: out of memory");
    return COLLTEST_ERROR;
  }
  s->world = group->largest.world;
  s->rank = group->largest.rank;
  s->buffer_bytes = (group->workspace_bytes - kHeaderBytes) / 2 / 16 * 16;  // aligned halves
  for (uint32_t r = 0; r < s->world; ++r)
    s->ws[r] = static_cast<unsigned char*>(group->peer_workspace[r]);
  *state = s;  // the workspaces arrive zeroed: every counter and flag starts at 0
  return COLLTEST_OK;
}

colltest_status_t oneshot_launch(void* state, const colltest_launch_v1_t* call, char* err,
                                 size_t err_len) {
  const State* s = static_cast<const State*>(state);
  const size_t elem = elem_bytes(call->dtype);
  const uint64_t bytes = uint64_t(call->m) * call->n * elem;
  if (elem == 0 || call->epilogue != COLLTEST_EPILOGUE_NONE || call->out == nullptr) {
    snprintf(err, err_len, "oneshot_norm: only bf16/fp16/fp32 with epilogue none");
    return COLLTEST_UNSUPPORTED;
  }
  if (bytes > s->buffer_bytes) {
    snprintf(err, err_len,
             "oneshot_norm: m=%u n=%u needs %llu bytes a buffer, the workspace has %llu", call->m,
             call->n, static_cast<unsigned long long>(bytes),
             static_cast<unsigned long long>(s->buffer_bytes));
    return COLLTEST_UNSUPPORTED;
  }
  if (call->m == 0) return COLLTEST_OK;
  Args a{};
  for (uint32_t r = 0; r < s->world; ++r) a.ws[r] = s->ws[r];
  a.world = s->world;
  a.rank = s->rank;
  a.m = call->m;
  a.n = call->n;
  a.buffer_bytes = s->buffer_bytes;
  a.input = call->input;
  a.residual_in = call->residual_in;
  a.residual_out = call->residual_out;
  a.weight = call->weight;
  a.out = call->out;
  a.eps = call->eps;
  const dim3 grid(call->m < kMaxBlocks ? call->m : kMaxBlocks);
  cudaStream_t stream = static_cast<cudaStream_t>(call->stream);
  switch (call->dtype) {
    case COLLTEST_DTYPE_BF16:
      oneshot_kernel<Bf16><<<grid, kThreads, 0, stream>>>(a);
      break;
    case COLLTEST_DTYPE_FP16:
      oneshot_kernel<Fp16><<<grid, kThreads, 0, stream>>>(a);
      break;
    default:
      oneshot_kernel<Fp32><<<grid, kThreads, 0, stream>>>(a);
      break;
  }
  const cudaError_t rc = cudaGetLastError();
  if (rc != cudaSuccess) {
    snprintf(err, err_len, "oneshot_norm: kernel launch: %s", cudaGetErrorString(rc));
    return COLLTEST_ERROR;
  }
  return COLLTEST_OK;
}

colltest_status_t oneshot_fini(void* state, char*, size_t) {
  free(state);
  return COLLTEST_OK;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const colltest_kernel_v1_t colltest_kernel_v1 = {
    COLLTEST_KERNEL_ABI_VERSION,
    sizeof(colltest_kernel_v1_t),
    "oneshot_norm",
    "1.0",
    ONESHOT_BACKEND,
    (1u << COLLTEST_DTYPE_BF16) | (1u << COLLTEST_DTYPE_FP16) | (1u << COLLTEST_DTYPE_FP32),
    (1u << 2) | (1u << 4) | (1u << 8),
    1u << COLLTEST_EPILOGUE_NONE,
    COLLTEST_KERNEL_GRAPH_CAPTURE,
    0,
    1u << 24,
    oneshot_workspace_bytes,
    oneshot_init,
    nullptr,  // arm: counters and flags only grow, nothing to reset
    oneshot_launch,
    oneshot_fini,
};
#endif
