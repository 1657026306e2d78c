/* colltest kernel plugin ABI, version 1 (docs/plugins.md).
 *
 * A kernel plugin is a shared library that exports one object,
 *
 *     const colltest_kernel_v1_t colltest_kernel_v1 = { COLLTEST_KERNEL_ABI_VERSION,
 *                                                       sizeof(colltest_kernel_v1_t), ... };
 *
 * describing one fused all-reduce + residual + RMSNorm kernel: what it supports and five entry
 * points. colltest-worker dlopens the library, checks the version and every field, and then gives
 * the kernel colltest's harness: reference diffs on every rank, eager and graph timing, stress,
 * the fault kinds applied from outside and hang verdicts.
 *
 * The boundary is C: plain C types, no exceptions across it, no allocation that colltest must
 * free. Every entry point returns a colltest_status_t and may write a NUL-terminated message of
 * at most err_len bytes (err_len > 0, err never NULL) into err; colltest shows it as written.
 *
 * One call per rank, one rank per process: the entry points of one rank are never called
 * concurrently, and every pointer colltest passes stays valid until the entry point returns
 * (peer workspaces: until fini). A version 2 will be a new struct under a new symbol
 * (colltest_kernel_v2), as NCCL does with its plugins; a worker may accept several.
 */
#ifndef COLLTEST_KERNEL_PLUGIN_H_
#define COLLTEST_KERNEL_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define COLLTEST_KERNEL_ABI_VERSION 1u
/* The name of the exported object of version 1. */
#define COLLTEST_KERNEL_SYMBOL_V1 "colltest_kernel_v1"

/* What every entry point returns. */
typedef int32_t colltest_status_t;
#define COLLTEST_OK 0
/* The plugin does not take this call (a shape, dtype or epilogue it declared but cannot run
 * now): the case is UNSUPPORTED with the plugin's message, nothing is run. */
#define COLLTEST_UNSUPPORTED 1
/* Anything else that went wrong: the case is ERROR naming the plugin, the entry point and the
 * message. */
#define COLLTEST_ERROR 2

/* Backends, the bits of colltest_kernel_v1_t.backends; one of them in colltest_shape_v1_t. */
#define COLLTEST_BACKEND_CPU (1u << 0)  /* host pointers into POSIX shared memory, no stream */
#define COLLTEST_BACKEND_CUDA (1u << 1) /* device pointers, stream is a cudaStream_t */
#define COLLTEST_BACKEND_HIP (1u << 2)  /* device pointers, stream is a hipStream_t */

/* Element types: the values are colltest's (proto DType); .dtypes holds 1u << value. */
#define COLLTEST_DTYPE_BF16 1u
#define COLLTEST_DTYPE_FP16 2u
#define COLLTEST_DTYPE_FP32 3u

/* Epilogues, what the kernel writes after the norm (docs/quantisation.md); the values are
 * colltest's (proto Epilogue); .epilogues holds 1u << value and must include NONE. */
#define COLLTEST_EPILOGUE_NONE 1u       /* out = norm(residual_out) * weight, in the dtype */
#define COLLTEST_EPILOGUE_FP8_TOKEN 2u  /* fp8 codes, one fp32 scale per row */
#define COLLTEST_EPILOGUE_FP8_TENSOR 3u /* fp8 codes with the static quant_scale */
#define COLLTEST_EPILOGUE_NVFP4 4u      /* e2m1 codes two a byte, an e4m3 scale per 16 elements */

/* FP8 element formats (proto Fp8Format). */
#define COLLTEST_FP8_E4M3FN 1u
#define COLLTEST_FP8_E4M3FNUZ 2u

/* Flags of colltest_kernel_v1_t.flags. */
/* launch may be captured into a CUDA/HIP graph and replayed: it enqueues device work only, with
 * no host synchronisation and no host-side state that must change between calls. Without it
 * colltest runs the plugin's cases in eager mode only and refuses graph mode by name. */
#define COLLTEST_KERNEL_GRAPH_CAPTURE (1u << 0)

/* One call's shape as the plugin sees it, for workspace_bytes and inside the group. */
typedef struct {
  uint32_t backend;  /* one COLLTEST_BACKEND_* */
  uint32_t world;    /* ranks in the group: 2, 4 or 8 */
  uint32_t rank;     /* this rank, 0 .. world - 1 */
  uint32_t dtype;    /* a COLLTEST_DTYPE_* */
  uint32_t epilogue; /* a COLLTEST_EPILOGUE_* */
  uint32_t m;        /* rows (tokens) */
  uint32_t n;        /* row length (hidden size), a multiple of 16 bytes of the dtype */
} colltest_shape_v1_t;

/* The group a rank belongs to, from init to fini. colltest allocates every rank's workspace of
 * workspace_bytes (as workspace_bytes answered for the group's largest call), exchanges the
 * handles through colltestd (CUDA/HIP IPC, or shared memory on the cpu backend), maps them and
 * zeroes them before init; peer_workspace[r] is rank r's workspace as this rank addresses it
 * (peer_workspace[rank] is its own). */
typedef struct {
  colltest_shape_v1_t largest; /* the largest call the group will be given (m is its m) */
  int32_t device;              /* the CUDA/HIP device ordinal; -1 on the cpu backend */
  uint64_t workspace_bytes;    /* the size of every rank's workspace */
  void* const* peer_workspace; /* world pointers */
} colltest_group_v1_t;

/* One call: all pointers are this rank's, in the backend's memory, m x n row-major unless said. */
typedef struct {
  const void* input;       /* this rank's contribution, dtype */
  const void* residual_in; /* dtype; NULL when the case has no residual add (no_residual) */
  void* residual_out;      /* dtype: the sum of every rank's input (in fp32, rank 0 first, rounded
                              to dtype), plus residual_in (rounded to dtype) when given */
  const void* weight;      /* n elements, dtype */
  void* out;               /* dtype: RMSNorm(residual_out) * weight; NULL when the epilogue
                              replaces it (colltest then checks the codes and scales only) */
  void* quant_out;         /* epilogue != NONE: the codes (fp8: m x n bytes; nvfp4: m x n / 2) */
  void* scales;            /* FP8_TOKEN: m floats; NVFP4: m x n / 16 e4m3fn bytes; else NULL */
  float quant_scale;       /* FP8_TENSOR: the static scale; NVFP4: the global scale; else 0 */
  float eps;               /* RMSNorm epsilon */
  uint32_t m;
  uint32_t n;
  uint32_t dtype;      /* a COLLTEST_DTYPE_* the plugin declared */
  uint32_t epilogue;   /* a COLLTEST_EPILOGUE_* the plugin declared */
  uint32_t fp8_format; /* a COLLTEST_FP8_* for the fp8 epilogues, else 0 */
  uint32_t reserved;   /* 0 */
  uint64_t call;       /* the index of the call in the case, from 0 */
  void* stream;        /* cudaStream_t / hipStream_t; NULL on the cpu backend */
} colltest_launch_v1_t;

/* The object a plugin exports as COLLTEST_KERNEL_SYMBOL_V1. */
typedef struct colltest_kernel_v1_s {
  uint32_t abi_version; /* COLLTEST_KERNEL_ABI_VERSION */
  uint32_t struct_size; /* sizeof(colltest_kernel_v1_t) */
  const char* name;     /* [a-z0-9_]{1,32}: the variant is plugin:<name> */
  const char* version;  /* free text, 1 to 64 printable characters */
  uint32_t backends;    /* COLLTEST_BACKEND_* bits */
  uint32_t dtypes;      /* 1u << COLLTEST_DTYPE_* */
  uint32_t world_sizes; /* 1u << world, for world 2, 4 and 8 */
  uint32_t epilogues;   /* 1u << COLLTEST_EPILOGUE_*; NONE included */
  uint32_t flags;       /* COLLTEST_KERNEL_* */
  uint32_t reserved;    /* 0 */
  uint64_t max_elements; /* the largest m x n of one call */

  /* The bytes of symmetric workspace every rank needs for calls up to `shape` (0: none). Pure:
   * no device work. */
  colltest_status_t (*workspace_bytes)(const colltest_shape_v1_t* shape, uint64_t* bytes,
                                       char* err, size_t err_len);
  /* Once per group, after the workspaces are mapped and zeroed; *state is the plugin's, handed to
   * every later entry point of the group. */
  colltest_status_t (*init)(const colltest_group_v1_t* group, void** state, char* err,
                            size_t err_len);
  /* Prepares the workspace for the next calls (flags, sentinels), outside any graph capture:
   * once after init, before each eager or captured batch of calls, and after a failed case.
   * NULL: nothing to arm. */
  colltest_status_t (*arm)(void* state, void* stream, char* err, size_t err_len);
  /* Enqueues one call on `stream` (on the cpu backend: runs it). Every rank of the group makes
   * the same calls in the same order. */
  colltest_status_t (*launch)(void* state, const colltest_launch_v1_t* call, char* err,
                              size_t err_len);
  /* Once per group, after its last call; the workspaces are unmapped after it returns. */
  colltest_status_t (*fini)(void* state, char* err, size_t err_len);
} colltest_kernel_v1_t;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* COLLTEST_KERNEL_PLUGIN_H_ */
